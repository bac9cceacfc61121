// Compiled with `tsc --noEmit --strict` against the installed package: the types say what
// the wrapper takes and returns.
import { load, SettingsError, type Response, type Violation } from "@computeguard/policy";

async function main(): Promise<number> {
  const policy = await load();
  try {
    await policy.validateSettings({ regions: { allowed: ["eastus"] } });
  } catch (e) {
    if (e instanceof SettingsError) return 2;
    throw e;
  }
  const response: Response = await policy.evaluate(
    { type: "amlcompute", name: "gpu", size: "Standard_NC6" },
    { asOf: "2026-11-22", sourceKind: "azure-ml" },
  );
  const rules: string[] = response.violations.map((v: Violation) => v.rule);
  return rules.length;
}

main().then((n) => console.log(n));
