// computeguard for VS Code: starts `computeguard lsp` (from PATH, or the setting
// `computeguard.path`) for the files `computeguard check` reads, and restarts it when a
// setting changes. Everything it shows comes from the language server (docs/editors.md).
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";

let client: LanguageClient | undefined;

function serverOptions(): ServerOptions {
  const config = vscode.workspace.getConfiguration("computeguard");
  const command = config.get<string>("path") || "computeguard";
  const args = ["lsp"];
  const asOf = config.get<string>("asOf");
  if (asOf) {
    args.push("--as-of", asOf);
  }
  return { command, args };
}

async function start(): Promise<void> {
  const config = vscode.workspace.getConfiguration("computeguard");
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "yaml" },
      { scheme: "file", language: "json" },
      { scheme: "file", language: "jsonc" },
      { scheme: "file", pattern: "**/*.bicep" },
      { scheme: "file", pattern: "**/*.bicepparam" },
      { scheme: "file", pattern: "**/*.tf" },
      { scheme: "file", pattern: "**/*.tfvars" },
    ],
    initializationOptions: {
      debounceMs: config.get<number>("debounceMs") ?? 150,
    },
    synchronize: {
      // computeguard.yaml and the files it names (overlays, az outputs): reload.
      fileEvents: [
        vscode.workspace.createFileSystemWatcher("**/computeguard.yaml"),
        vscode.workspace.createFileSystemWatcher("**/*.{json,yaml,yml}"),
      ],
    },
  };
  client = new LanguageClient(
    "computeguard",
    "computeguard",
    serverOptions(),
    clientOptions,
  );
  await client.start();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    vscode.commands.registerCommand("computeguard.restart", async () => {
      await client?.stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("computeguard")) {
        await client?.stop();
        await start();
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
