// Types of @computeguard/policy. The WIT types (Request, Response, Violation, PolicyInfo,
// SourceKind, ...) are jco's, generated from wit/policy.wit into gen/.
import type {
  Operation,
  PolicyInfo,
  Response,
  SourceKind,
} from "./gen/interfaces/computeguard-policy-types.js";

export type {
  Operation,
  PolicyInfo,
  Request,
  ResourceRef,
  Response,
  RuleInfo,
  Severity,
  SourceKind,
  Violation,
} from "./gen/interfaces/computeguard-policy-types.js";

/** The policy's settings, e.g. `{regions: {allowed: ["eastus"]}}`. */
export type Settings = Record<string, unknown>;

export interface EvaluateOptions {
  /** Settings as an object or JSON text; `{}` by default. */
  settings?: Settings | string;
  /** The evaluation date `YYYY-MM-DD` (UTC); today by default. */
  asOf?: string;
  /** `unknown` (the default) detects the format from the document. */
  sourceKind?: SourceKind;
  operation?: Operation;
}

/** The policy refused its settings; the message names each field and what was expected. */
export class SettingsError extends Error {}
/** The document is not valid JSON, not an object, or contradicts its source kind. */
export class DocumentError extends Error {}
/** A rule failed to evaluate; the message names it. */
export class RuleError extends Error {}

export interface Policy {
  metadata(): Promise<PolicyInfo>;
  /** Resolves when the policy accepts the settings; rejects with a SettingsError. */
  validateSettings(settings?: Settings | string): Promise<void>;
  /**
   * Evaluates one document (a JSON object or JSON text; one YAML document must be
   * converted to JSON first). Rejects with a SettingsError, DocumentError or RuleError.
   */
  evaluate(document: object | string, options?: EvaluateOptions): Promise<Response>;
}

/** Compiles the component once and returns the policy. */
export function load(): Promise<Policy>;
