//! The layout tells the architecture (issue 24): within every crate, no module imports
//! another that imports it back, directly or through others. A child module may use its
//! parent (`super::`); every other `crate::a::b` reference is an edge from the file's
//! module to the deepest module it names. Test code (`#[cfg(test)]` onwards) and comments
//! are not counted.

use crate::*;
use std::collections::{BTreeMap, BTreeSet};

/// The crates' source folders.
fn crates() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("core/src")];
    for parent in ["host", "guest", "guest/examples"] {
        for entry in std::fs::read_dir(root().join(parent))
            .into_iter()
            .flatten()
            .flatten()
        {
            let src = entry.path().join("src");
            if src.is_dir() {
                dirs.push(src);
            }
        }
    }
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `a::b` for `src/a/b.rs` or `src/a/b/mod.rs`; `` for `lib.rs` / `main.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The module graph of one crate: module -> modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for line in code.lines() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for (i, _) in line.match_indices("crate::") {
                let path: String = line[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                // The deepest module the path names.
                let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
                let target = (1..=segments.len())
                    .rev()
                    .map(|n| segments[..n].join("::"))
                    .find(|m| modules.contains(m));
                let Some(target) = target else { continue };
                // Its own ancestors (and itself) are not edges: a child uses its parent.
                let ancestor = from == target || from.starts_with(&format!("{target}::"));
                if !ancestor && !from.is_empty() {
                    edges.entry(from.clone()).or_default().insert(target);
                }
            }
        }
    }
    edges
}

/// The modules on a cycle through `start`, if there is one.
fn cycle_through(start: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        node: &str,
        start: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in edges.get(node).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(next, start, edges, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(start, start, edges, &mut path, &mut seen).then_some(path)
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let mut circles = Vec::new();
    for src in crates() {
        let edges = graph(&src);
        let mut reported = BTreeSet::new();
        for module in edges.keys() {
            if reported.contains(module) {
                continue;
            }
            if let Some(cycle) = cycle_through(module, &edges) {
                reported.extend(cycle.iter().cloned());
                let crate_dir = src
                    .parent()
                    .and_then(|p| p.strip_prefix(root()).ok())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                circles.push(format!(
                    "{crate_dir}: {} -> {}",
                    cycle.join(" -> "),
                    cycle[0]
                ));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    edges.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        cycle_through("a", &edges),
        Some(vec!["a".to_string(), "b".to_string(), "c".to_string()])
    );
    edges.insert("c".to_string(), BTreeSet::new());
    assert_eq!(cycle_through("a", &edges), None);
}
