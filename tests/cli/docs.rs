//! Every command the README and `docs/` show is a tested example (issue 28): the test
//! reads each ```` ```console ```` block, runs its `$ computeguard ...` commands (and
//! `cargo run --release -- ...`, `echo $?`, `python3 ...`) with the built binary, and
//! compares what they print with the page.
//!
//! - Each page runs in a scratch folder of its own that shows the repository's top-level
//!   entries (linked, so `examples/...` and `tests/fixtures/...` work) and holds the files
//!   the page defines: a fenced block right after a line ending in `` `NAME`: ``, or a
//!   YAML block whose first line is `# DIR/NAME.yaml`, is written to that path (never over
//!   a repository file) when a command of the page names it or its folder. Commands of a page run in order, in one
//!   shell each, stdout and stderr together, as a terminal shows them.
//! - A line `...` in the page stands for any number of lines; anything else must match
//!   line for line once both sides are normalised: trailing spaces, `sha256:` digests,
//!   durations (`0.42s`, `12 ms`), the date after `as of` (a run without `--as-of` is
//!   judged as of today), a built component's size and the scratch folder's path.
//! - A block whose commands need what this machine has not (`kubectl`, `helm`, `git`,
//!   `pip`, `terraform`, a `cd` into a folder of the reader's) is not run; the test prints
//!   them, and counts them.
//!
//! - A block of another language that shows what computeguard prints (a line starting with
//!   `computeguard: `, `error[RULE]`, `warning[RULE]`, `info[RULE]`, `unresolved: ` or
//!   `skipped: `) is an excerpt: it must appear, line for line once normalised, in what a
//!   command of the same page printed. Output with no command on its page is a failure
//!   (show the command in a `console` block), so no page shows output that nothing checks.
//!
//! `COMPUTEGUARD_DOCS_BLESS=1` rewrites every block without `...` that differs with what
//! the commands print now; blocks with `...` are reported for a hand edit.

use crate::*;
use std::fmt::Write as _;

/// Programs a shown command may start with to be run here.
const RUNNABLE: &[&str] = &["computeguard", "cargo", "echo", "python3"];

/// The pages whose commands are run.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    for dir in ["docs", "docs/rules"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// A fenced block of a page: its language, first and last line (0-based, the fences
/// excluded) and text.
struct Block {
    lang: String,
    /// `NAME` when the line before the fence ends in `` `NAME`: ``.
    file: Option<String>,
    start: usize,
    end: usize,
    text: String,
}

fn blocks(page: &str) -> Vec<Block> {
    let lines: Vec<&str> = page.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let lang = lang.trim().to_string();
        let file = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.trim().strip_suffix("`:"))
            .and_then(|l| l.rsplit_once('`'))
            .map(|(_, name)| name.to_string())
            .filter(|n| !n.contains(' ') && n.contains('.'));
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        let text = lines[start..end.min(lines.len())].join("\n");
        // A configuration block that names its own path on its first line: `# examples/x.yaml`.
        let file = file.or_else(|| {
            lines
                .get(start)
                .and_then(|l| l.strip_prefix("# "))
                .filter(|n| !n.contains(' ') && n.contains('/') && n.ends_with(".yaml"))
                .map(String::from)
        });
        out.push(Block {
            lang,
            file,
            start,
            end,
            text,
        });
        i = end + 1;
    }
    out
}

/// `$ command` lines with the output shown after each.
fn commands(block: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut continuing = false;
    for line in block.lines() {
        if continuing {
            if let Some((cmd, _)) = out.last_mut() {
                cmd.push(' ');
                cmd.push_str(line.trim().trim_end_matches('\\').trim_end());
            }
            continuing = line.trim_end().ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            continuing = cmd.trim_end().ends_with('\\');
            out.push((
                cmd.trim_end().trim_end_matches('\\').trim_end().to_string(),
                Vec::new(),
            ));
        } else if let Some((_, shown)) = out.last_mut() {
            shown.push(line.to_string());
        }
    }
    out
}

/// The program a shell command line starts with.
fn program(cmd: &str) -> &str {
    cmd.split_whitespace().next().unwrap_or_default()
}

fn runnable(cmd: &str) -> bool {
    let first = program(cmd);
    RUNNABLE.contains(&first)
        && (first != "cargo" || cmd.starts_with("cargo run --release -- "))
        && !cmd.contains("| kubectl")
        && cmd
            .split('|')
            .all(|part| RUNNABLE.contains(&program(part.trim())))
}

/// A scratch folder showing the repository, with the page's own files.
fn scratch(page_blocks: &[Block]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root();
    for entry in std::fs::read_dir(&root).expect("repository").flatten() {
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(entry.path(), dir.path().join(&name)).expect("link");
    }
    std::fs::create_dir_all(dir.path().join("target")).expect("target");
    // Only files a command of the page names: a snippet of "your own computeguard.yaml"
    // must not become the configuration every command of the page finds.
    let shown: Vec<String> = page_blocks
        .iter()
        .filter(|b| b.lang == "console")
        .flat_map(|b| commands(&b.text).into_iter().map(|(c, _)| c))
        .collect();
    for b in page_blocks {
        let Some(name) = &b.file else { continue };
        let named = shown.iter().any(|c| {
            c.split_whitespace()
                .any(|w| w == name || name.starts_with(&format!("{}/", w.trim_end_matches('/'))))
        });
        if b.lang == "console" || root.join(name).exists() || !named {
            continue;
        }
        let path = dir.path().join(name);
        // Never through a link into the repository: a linked folder the file goes into is
        // replaced by a copy (so paths in it resolve as in a checkout).
        if let Some(first) = Path::new(name).components().next() {
            let linked = dir.path().join(first);
            if linked.is_symlink() {
                let target = std::fs::read_link(&linked).expect("link");
                std::fs::remove_file(&linked).expect("unlink");
                copy_tree(&target, &linked);
            }
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("folder");
        }
        std::fs::write(&path, format!("{}\n", b.text)).expect("page file");
    }
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("folder");
    for entry in std::fs::read_dir(from).expect("folder").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Runs `cmd` in `dir` through the shell: (exit code, stdout and stderr together).
fn run_shown(dir: &Path, cmd: &str) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_computeguard"));
    let cmd = cmd.replace("cargo run --release -- ", "computeguard ");
    let path = format!(
        "{}:{}",
        bin.parent()
            .map(Path::display)
            .map(|d| d.to_string())
            .unwrap_or_default(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        // Standard error joins standard output for the whole command line, as on a
        // terminal: `cmd > file` keeps only standard output in the file.
        .arg(format!("exec 2>&1\n{cmd}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env(
            "COMPUTEGUARD_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache"),
        )
        .output()
        .expect("sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// Replaces every run of characters of `word` that follows `prefix` with `with`.
fn mask_after(line: &str, prefix: &str, word: fn(char) -> bool, with: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(prefix) {
        out.push_str(&rest[..i + prefix.len()]);
        let after = &rest[i + prefix.len()..];
        let n = after.find(|c: char| !word(c)).unwrap_or(after.len());
        if n > 0 {
            out.push_str(with);
        }
        rest = &after[n..];
    }
    out.push_str(rest);
    out
}

/// Durations (`0.42s`, `12 ms`, `3.1 µs`) as `<time>`.
fn mask_durations(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if starts_number {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let mut k = j;
            if k < chars.len() && chars[k] == ' ' {
                k += 1;
            }
            let unit: String = chars[k..chars.len().min(k + 2)].iter().collect();
            let unit_len = if unit.starts_with("ms") || unit.starts_with("µs") {
                2
            } else if unit.starts_with('s') {
                1
            } else {
                0
            };
            let ends = chars.get(k + unit_len).is_none_or(|c| !c.is_alphanumeric());
            if unit_len > 0 && ends {
                out.push_str("<time>");
                i = k + unit_len;
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn normalise(line: &str, scratch: &str) -> String {
    let line = line.replace(scratch, "<dir>");
    let line = mask_after(&line, "sha256:", |c| c.is_ascii_hexdigit(), "<digest>");
    // A run without --as-of is judged as of today.
    let line = mask_after(
        &line,
        "as of ",
        |c| c.is_ascii_digit() || c == '-',
        "<date>",
    );
    // Component sizes change with every build: `(1 rule, 1814 KiB)`.
    let line = mask_after(&line, "rule, ", |c| c.is_ascii_digit(), "<size>");
    let line = mask_after(&line, "rules, ", |c| c.is_ascii_digit(), "<size>");
    mask_durations(line.trim_end())
}

/// Whether `line` is something computeguard prints: a finding's head, the summary line, a
/// blind spot.
fn shows_output(line: &str) -> bool {
    let finding = ["error[", "warning[", "info["].iter().any(|p| {
        line.strip_prefix(p)
            .and_then(|rest| rest.split_once(']'))
            .is_some_and(|(rule, _)| {
                !rule.is_empty()
                    && rule
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    finding
        || line.starts_with("computeguard: ")
        || line.starts_with("unresolved: ")
        || line.starts_with("skipped: ")
}

/// Whether `actual` matches `shown`, where a shown line `...` stands for any lines.
fn matches(shown: &[String], actual: &[String]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| a == first && matches(rest, more)),
    }
}

#[test]
fn every_command_the_docs_show_prints_what_they_show() {
    let bless = std::env::var_os("COMPUTEGUARD_DOCS_BLESS").is_some();
    let mut failures = String::new();
    let mut not_run = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let rel = page
            .strip_prefix(root())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&page).expect("page");
        let page_blocks = blocks(&text);
        let dir = scratch(&page_blocks);
        let scratch_path = dir.path().display().to_string();
        let mut rewrites: Vec<(usize, usize, String)> = Vec::new();
        // Everything the page's commands printed, normalised: excerpts are checked against it.
        let mut page_output: Vec<Vec<String>> = Vec::new();
        for b in page_blocks.iter().filter(|b| b.lang == "console") {
            let cmds = commands(&b.text);
            if cmds.iter().any(|(c, _)| !runnable(c)) {
                not_run.extend(cmds.iter().map(|(c, _)| format!("{rel}:{}: {c}", b.start)));
                continue;
            }
            let mut last_code = 0;
            let mut printed = String::new();
            let mut ok = true;
            for (cmd, shown) in &cmds {
                let (code, out) = if cmd == "echo $?" {
                    (last_code, format!("{last_code}\n"))
                } else {
                    run_shown(dir.path(), cmd)
                };
                ran += 1;
                last_code = code;
                let shown: Vec<String> =
                    shown.iter().map(|l| normalise(l, &scratch_path)).collect();
                let actual: Vec<String> =
                    out.lines().map(|l| normalise(l, &scratch_path)).collect();
                page_output.push(actual.clone());
                let _ = writeln!(printed, "$ {cmd}");
                printed.push_str(&out);
                if !matches(&shown, &actual) {
                    ok = false;
                    let _ = writeln!(
                        failures,
                        "{rel}:{}: `$ {cmd}` prints\n{}\n--- but the page shows\n{}\n",
                        b.start,
                        actual.join("\n"),
                        shown.join("\n")
                    );
                }
            }
            if !ok && bless && !b.text.lines().any(|l| l == "...") {
                rewrites.push((b.start, b.end, printed.trim_end().to_string()));
            }
        }
        for b in page_blocks
            .iter()
            .filter(|b| b.lang != "console" && b.text.lines().any(shows_output))
        {
            let mut shown: Vec<String> = vec!["...".into()];
            shown.extend(b.text.lines().map(|l| normalise(l, &scratch_path)));
            shown.push("...".into());
            if !page_output.iter().any(|out| matches(&shown, out)) {
                let _ = writeln!(
                    failures,
                    "{rel}:{}: a `{}` block shows computeguard's output that no command of the page prints (show its command in a `console` block, or quote what one prints):\n{}\n",
                    b.start, b.lang, b.text
                );
            }
        }
        if !rewrites.is_empty() {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            for (start, end, new) in rewrites.into_iter().rev() {
                lines.splice(start..end, new.lines().map(String::from));
            }
            std::fs::write(&page, lines.join("\n") + "\n").expect("bless");
        }
    }
    println!(
        "docs: {ran} commands run; {} shown but not run here (they need kubectl, helm, git, pip, terraform or a folder of the reader's):",
        not_run.len()
    );
    for c in &not_run {
        println!("  {c}");
    }
    assert!(ran > 80, "only {ran} commands found in the docs");
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn the_docs_harness_matches_elisions_and_masks_what_changes() {
    let shown: Vec<String> = ["a", "...", "c"].map(String::from).to_vec();
    let actual: Vec<String> = ["a", "b1", "b2", "c"].map(String::from).to_vec();
    assert!(matches(&shown, &actual));
    assert!(!matches(&shown, &actual[..3]));
    assert_eq!(
        normalise(
            "policy  sha256:abc123f  in 0.42s, 12 ms; 3 files  ",
            "/tmp/x"
        ),
        "policy  sha256:<digest>  in <time>, <time>; 3 files"
    );
    assert_eq!(
        mask_durations("Standard_NC6s_v3 and 2s"),
        "Standard_NC6s_v3 and <time>"
    );
    assert!(runnable("computeguard check --format sarif x > out.sarif"));
    assert!(!runnable("helm template ./chart | computeguard check -"));
    assert!(!runnable("cargo install --path host/cli"));
    assert!(shows_output(
        "warning[min-nodes-zero]: Azure ML compute cluster"
    ));
    assert!(shows_output("computeguard: 1 error, 0 warnings"));
    assert!(!shows_output("error: `computeguard.yaml`: unknown key"));
    assert!(!shows_output("warning[see below]: prose"));
}
