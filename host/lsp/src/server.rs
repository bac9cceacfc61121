//! The server loop: documents in, debounced checks, diagnostics, code actions and hovers out.

// `lsp_types::Uri` caches its parsed parts in cells, which clippy takes for a mutable key;
// its `Hash` and `Eq` read only the text, which never changes.
#![allow(clippy::mutable_key_type)]

use crate::text::{columns, line_text, path_of, range_at, uri_of, word_at};
use crate::{Checked, Checker, Fix, Severity};
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{CodeActionRequest, HoverRequest, RegisterCapability, Request as _};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionProviderCapability, CodeDescription,
    Diagnostic, DiagnosticSeverity, DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher,
    GlobPattern, Hover, HoverContents, HoverProviderCapability, InitializeParams, MarkupContent,
    MarkupKind, NumberOrString, Position, PublishDiagnosticsParams, Range, Registration,
    RegistrationParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextEdit, Uri, WorkspaceEdit,
};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long after the last change a document is checked again, unless
/// `initializationOptions.debounceMs` says otherwise.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);

/// The files whose change reloads and checks every open document again:
/// `computeguard.yaml` and whatever it names (catalog overlays, `az` outputs, price pages are
/// YAML or JSON), and the files `check` reads beside a document (`.tfvars`, parameter files,
/// local Terraform and Bicep modules).
const WATCHED: &[&str] = &[
    "**/computeguard.yaml",
    "**/*.json",
    "**/*.yaml",
    "**/*.yml",
    "**/*.tfvars",
    "**/*.bicepparam",
    "**/*.tf",
    "**/*.bicep",
];

struct Doc {
    path: PathBuf,
    text: String,
    version: Option<i32>,
    checked: Checked,
}

struct Server<C> {
    checker: C,
    docs: HashMap<Uri, Doc>,
    /// Documents changed since their last check, with when to check them.
    due: HashMap<Uri, Instant>,
    debounce: Duration,
    /// For each checked document, the files that got a diagnostic of the problem that
    /// stopped it (its configuration, a context file), cleared when no document has it.
    problems: HashMap<Uri, HashSet<Uri>>,
    next_id: i32,
}

/// Serves `connection` until the client asks to shut down (or goes away).
pub fn run(connection: Connection, checker: impl Checker) -> anyhow::Result<()> {
    let (id, params) = connection.initialize_start()?;
    let params: InitializeParams = serde_json::from_value(params)?;
    let debounce = params
        .initialization_options
        .as_ref()
        .and_then(|o| o.get("debounceMs"))
        .and_then(serde_json::Value::as_u64)
        .map_or(DEFAULT_DEBOUNCE, Duration::from_millis);
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    };
    connection.initialize_finish(
        id,
        serde_json::json!({
            "capabilities": capabilities,
            "serverInfo": { "name": "computeguard", "version": env!("CARGO_PKG_VERSION") },
        }),
    )?;
    let mut server = Server {
        checker,
        docs: HashMap::new(),
        due: HashMap::new(),
        debounce,
        problems: HashMap::new(),
        next_id: 0,
    };
    let dynamic_watch = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.did_change_watched_files.as_ref())
        .and_then(|d| d.dynamic_registration)
        .unwrap_or(false);
    if dynamic_watch {
        server.register_watchers(&connection)?;
    }
    server.serve(&connection)
}

impl<C: Checker> Server<C> {
    fn serve(&mut self, connection: &Connection) -> anyhow::Result<()> {
        loop {
            let now = Instant::now();
            let wait = self
                .due
                .values()
                .min()
                .map_or(Duration::from_secs(3600), |d| {
                    d.saturating_duration_since(now)
                });
            match connection.receiver.recv_timeout(wait) {
                Ok(Message::Request(req)) => {
                    if connection.handle_shutdown(&req)? {
                        return Ok(());
                    }
                    let resp = self.request(req);
                    connection.sender.send(Message::Response(resp))?;
                }
                Ok(Message::Notification(n)) => {
                    if n.method == "exit" {
                        return Ok(());
                    }
                    self.notification(connection, n)?;
                }
                Ok(Message::Response(_)) => {}
                Err(e) if e.is_timeout() => {}
                Err(_) => return Ok(()),
            }
            let now = Instant::now();
            let ready: Vec<Uri> = self
                .due
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(u, _)| u.clone())
                .collect();
            for uri in ready {
                self.due.remove(&uri);
                self.check(connection, &uri)?;
            }
        }
    }

    fn register_watchers(&mut self, connection: &Connection) -> anyhow::Result<()> {
        let options = DidChangeWatchedFilesRegistrationOptions {
            watchers: WATCHED
                .iter()
                .map(|g| FileSystemWatcher {
                    glob_pattern: GlobPattern::String((*g).to_string()),
                    kind: None,
                })
                .collect(),
        };
        let params = RegistrationParams {
            registrations: vec![Registration {
                id: "computeguard-watch".into(),
                method: DidChangeWatchedFiles::METHOD.into(),
                register_options: Some(serde_json::to_value(options)?),
            }],
        };
        self.next_id += 1;
        connection.sender.send(Message::Request(Request::new(
            RequestId::from(self.next_id),
            RegisterCapability::METHOD.into(),
            params,
        )))?;
        Ok(())
    }

    fn notification(&mut self, connection: &Connection, n: Notification) -> anyhow::Result<()> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let p: lsp_types::DidOpenTextDocumentParams = serde_json::from_value(n.params)?;
                let doc = p.text_document;
                let Some(path) = path_of(&doc.uri) else {
                    return Ok(());
                };
                self.docs.insert(
                    doc.uri.clone(),
                    Doc {
                        path,
                        text: doc.text,
                        version: Some(doc.version),
                        checked: Checked::default(),
                    },
                );
                self.due.remove(&doc.uri);
                self.check(connection, &doc.uri)?;
            }
            DidChangeTextDocument::METHOD => {
                let p: lsp_types::DidChangeTextDocumentParams = serde_json::from_value(n.params)?;
                if let Some(doc) = self.docs.get_mut(&p.text_document.uri) {
                    // Full sync: the last change holds the whole text.
                    if let Some(change) = p.content_changes.into_iter().last() {
                        doc.text = change.text;
                    }
                    doc.version = Some(p.text_document.version);
                    let at = Instant::now() + self.debounce;
                    // Another open document may read this one (a `.tfvars`, a parameters
                    // file, a module): it is checked again with this text, debounced too.
                    if read_by_others(&doc.path) {
                        for uri in self.docs.keys() {
                            self.due.insert(uri.clone(), at);
                        }
                    }
                    self.due.insert(p.text_document.uri, at);
                }
            }
            DidSaveTextDocument::METHOD => {
                let p: lsp_types::DidSaveTextDocumentParams = serde_json::from_value(n.params)?;
                // A saved configuration is a watched file even for a client that does not
                // watch files.
                if p.text_document.uri.as_str().ends_with("/computeguard.yaml") {
                    self.reload(connection)?;
                } else {
                    // Another open document may read the saved one from disk (a `.tfvars`,
                    // a parameter file, a module): check the others again, debounced.
                    let at = Instant::now() + self.debounce;
                    for uri in self.docs.keys().filter(|u| **u != p.text_document.uri) {
                        self.due.insert(uri.clone(), at);
                    }
                }
            }
            DidCloseTextDocument::METHOD => {
                let p: lsp_types::DidCloseTextDocumentParams = serde_json::from_value(n.params)?;
                self.docs.remove(&p.text_document.uri);
                self.due.remove(&p.text_document.uri);
                self.problems.remove(&p.text_document.uri);
                publish(connection, p.text_document.uri, Vec::new(), None)?;
            }
            DidChangeWatchedFiles::METHOD => self.reload(connection)?,
            _ => {}
        }
        Ok(())
    }

    /// A watched file changed: reload, then check every open document again.
    fn reload(&mut self, connection: &Connection) -> anyhow::Result<()> {
        self.checker.reload();
        let open: Vec<Uri> = self.docs.keys().cloned().collect();
        for uri in open {
            self.due.remove(&uri);
            self.check(connection, &uri)?;
        }
        Ok(())
    }

    fn check(&mut self, connection: &Connection, uri: &Uri) -> anyhow::Result<()> {
        let open: Vec<(&Path, &str)> = self
            .docs
            .values()
            .map(|d| (d.path.as_path(), d.text.as_str()))
            .collect();
        self.checker.open_documents(&open);
        let Some(doc) = self.docs.get_mut(uri) else {
            return Ok(());
        };
        doc.checked = self.checker.check(&doc.path, &doc.text);
        let checked = &doc.checked;
        let mut diagnostics = Vec::new();
        let mut problem_uris = HashSet::new();
        if let Some(p) = &checked.problem {
            let text = std::fs::read_to_string(&p.file).unwrap_or_default();
            let line = p.line.max(1);
            let diagnostic = Diagnostic {
                range: range_at(&text, line, 1),
                severity: Some(DiagnosticSeverity::ERROR),
                source: Some("computeguard".into()),
                message: p.message.clone(),
                ..Diagnostic::default()
            };
            match uri_of(&p.file) {
                Some(u) if &u != uri => {
                    problem_uris.insert(u);
                    // The document itself is not checked: say so where the author looks.
                    diagnostics.push(Diagnostic {
                        range: range_at(&doc.text, 1, 1),
                        severity: Some(DiagnosticSeverity::INFORMATION),
                        source: Some("computeguard".into()),
                        message: format!(
                            "not checked: the configuration {} is broken (see its diagnostic)",
                            p.file.display()
                        ),
                        ..Diagnostic::default()
                    });
                }
                _ => diagnostics.push(diagnostic.clone()),
            }
            for u in &problem_uris {
                publish(connection, u.clone(), vec![diagnostic.clone()], None)?;
            }
        }
        for f in &checked.findings {
            diagnostics.push(Diagnostic {
                range: range_at(&doc.text, f.line, f.column),
                severity: Some(match f.severity {
                    Severity::Error => DiagnosticSeverity::ERROR,
                    Severity::Warning => DiagnosticSeverity::WARNING,
                    Severity::Info => DiagnosticSeverity::INFORMATION,
                }),
                code: Some(NumberOrString::String(f.rule.clone())),
                code_description: f
                    .help_uri
                    .as_deref()
                    .and_then(|h| h.parse::<Uri>().ok())
                    .map(|href| CodeDescription { href }),
                source: Some("computeguard".into()),
                message: if f.remediation.is_empty() {
                    f.message.clone()
                } else {
                    format!("{}\nfix: {}", f.message, f.remediation)
                },
                ..Diagnostic::default()
            });
        }
        for n in &checked.unresolved {
            diagnostics.push(Diagnostic {
                range: range_at(&doc.text, n.line, 1),
                severity: Some(DiagnosticSeverity::INFORMATION),
                code: Some(NumberOrString::String("unresolved".into())),
                source: Some("computeguard".into()),
                message: n.message.clone(),
                ..Diagnostic::default()
            });
        }
        let version = doc.version;
        publish(connection, uri.clone(), diagnostics, version)?;
        let before = self
            .problems
            .insert(uri.clone(), problem_uris)
            .unwrap_or_default();
        for gone in before {
            let still = self.problems.values().any(|p| p.contains(&gone));
            if !still && !self.docs.contains_key(&gone) {
                publish(connection, gone, Vec::new(), None)?;
            }
        }
        Ok(())
    }

    fn request(&mut self, req: Request) -> Response {
        let result = match req.method.as_str() {
            CodeActionRequest::METHOD => serde_json::from_value(req.params)
                .map_err(anyhow::Error::from)
                .and_then(|p| Ok(serde_json::to_value(self.code_actions(p))?)),
            HoverRequest::METHOD => serde_json::from_value(req.params)
                .map_err(anyhow::Error::from)
                .and_then(|p| Ok(serde_json::to_value(self.hover(p))?)),
            _ => {
                return Response::new_err(
                    req.id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    format!("`{}` is not supported", req.method),
                );
            }
        };
        match result {
            Ok(v) => Response::new_ok(req.id, v),
            Err(e) => Response::new_err(
                req.id,
                lsp_server::ErrorCode::InvalidParams as i32,
                e.to_string(),
            ),
        }
    }

    fn code_actions(&mut self, p: lsp_types::CodeActionParams) -> Vec<CodeActionOrCommand> {
        let uri = p.text_document.uri;
        let Some(doc) = self.docs.get(&uri) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let (first, last) = (p.range.start.line + 1, p.range.end.line + 1);
        let here = |line: u32| (first..=last).contains(&line);
        let edit = |edits: Vec<TextEdit>| WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        };
        let mut fixes: Vec<Fix> = doc
            .checked
            .findings
            .iter()
            .filter(|f| here(f.line))
            .filter_map(|f| f.fix.clone())
            .collect();
        if doc.checked.findings.iter().any(|f| here(f.line)) {
            let (path, text) = (doc.path.clone(), doc.text.clone());
            fixes.extend(
                self.checker
                    .fixes(&path, &text)
                    .into_iter()
                    .filter(|f| here(f.line)),
            );
        }
        let Some(doc) = self.docs.get(&uri) else {
            return Vec::new();
        };
        for fix in fixes {
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                is_preferred: Some(true),
                edit: Some(edit(
                    fix.edits
                        .iter()
                        .map(|e| TextEdit {
                            range: columns(&doc.text, e.line, e.start, e.end),
                            new_text: e.new_text.clone(),
                        })
                        .collect(),
                )),
                ..CodeAction::default()
            }));
        }
        for f in doc.checked.findings.iter().filter(|f| here(f.line)) {
            if let Some(marker) = &doc.checked.comment {
                // A comment on a line of its own silences the next line (suppress.rs). No
                // reason is made up: until the author writes one after the rule id, check
                // reports `suppression-missing-reason` there instead.
                let l = line_text(&doc.text, f.line);
                let indent: String = l.chars().take_while(|c| c.is_whitespace()).collect();
                let at = Position::new(f.line - 1, 0);
                actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!(
                        "Suppress {} here (write the reason after the rule id)",
                        f.rule
                    ),
                    kind: Some(CodeActionKind::QUICKFIX),
                    edit: Some(edit(vec![TextEdit {
                        range: Range::new(at, at),
                        new_text: format!("{indent}{marker} computeguard:ignore {} \n", f.rule),
                    }])),
                    ..CodeAction::default()
                }));
            }
        }
        actions
    }

    fn hover(&mut self, p: lsp_types::HoverParams) -> Option<Hover> {
        let at = p.text_document_position_params;
        let doc = self.docs.get(&at.text_document.uri)?;
        let word = word_at(&doc.text, at.position)?;
        let path = doc.path.clone();
        let value = self.checker.hover(&path, &word)?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: None,
        })
    }
}

fn publish(
    connection: &Connection,
    uri: Uri,
    diagnostics: Vec<Diagnostic>,
    version: Option<i32>,
) -> anyhow::Result<()> {
    let params = PublishDiagnosticsParams {
        uri,
        diagnostics,
        version,
    };
    connection
        .sender
        .send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.into(),
            params,
        )))?;
    Ok(())
}

/// Whether a check of another file may read `path`: Terraform and Bicep files, variable
/// and parameters files (`.json` ones included), which folders and module calls read.
fn read_by_others(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "tf" | "tfvars" | "bicep" | "bicepparam" | "json"))
}
