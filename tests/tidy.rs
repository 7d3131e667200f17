//! Architecture checks that read the source, as rust-analyzer's tidy tests do: no import
//! cycle between the top-level modules of `src/` (a cycle means no module can be understood,
//! tested or replaced without the others), and handlers change data only through the
//! keyspace write API.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `src/` belongs to (`None` for lib.rs and binaries).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.as_str() {
        "lib.rs" | "bin" => None,
        _ => Some(first.trim_end_matches(".rs").to_string()),
    }
}

/// Identifiers a file reaches through `crate::`: `crate::x::...` paths and the first-level
/// names of `use crate::{a, b::c, ...}` groups (which may span lines). Comments are skipped.
fn crate_refs(text: &str) -> Vec<(String, usize)> {
    let code: String = text.lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect::<Vec<_>>().join("\n");
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut refs = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if depth == 1 && item_start => {
                        refs.push((ident(&group[i..]), line_of(at)));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            refs.push((ident(rest), line_of(at)));
        }
    }
    refs
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(&src, f)).collect();
    assert!(modules.len() > 10 && modules.contains("executor") && modules.contains("spec"), "{modules:?}");
    // module -> (module it uses -> one place that uses it)
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let Some(from) = top_module(&src, file) else { continue };
        let text = std::fs::read_to_string(file).expect("read source");
        for (to, line) in crate_refs(&text) {
            if to != from && modules.contains(&to) {
                let place = format!("{}:{line}", file.strip_prefix(&src).unwrap_or(file).display());
                edges.entry(from.clone()).or_default().entry(to).or_insert(place);
            }
        }
    }
    assert!(edges.get("executor").is_some_and(|e| e.contains_key("commands")), "the scan finds no edges: {edges:?}");
    // Depth-first search for a back edge; the path to it is the cycle.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for to in edges.get(m).map(|e| e.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            match state.get(&to).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| *p == to).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(to);
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(&to, edges, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in &modules {
        if state.get(m).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
                let steps: Vec<String> = cycle.windows(2).map(|w| format!("{} -> {} ({})", w[0], w[1], edges[&w[0]][&w[1]])).collect();
                panic!("import cycle between top-level modules:\n  {}", steps.join("\n  "));
            }
        }
    }
}

#[test]
fn the_scanner_sees_grouped_and_multi_line_imports() {
    let refs = crate_refs("use crate::{\n    db::Keyspace,\n    spec::{Flag, Trait},\n};\n// crate::ignored\nlet x = crate::util::f();");
    let names: Vec<&str> = refs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["db", "spec", "util"]);
}

/// Handlers change data only through the keyspace write API (`commands/effects.rs` and
/// `commands/access.rs`), which signals what changed: no other file of `src/commands/` takes
/// a database for writing.
#[test]
fn handlers_write_only_through_the_keyspace_write_api() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut offenders = Vec::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if matches!(name, "effects.rs" | "access.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read source");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains("db_mut(") || code.contains("ks.flush_all(") || code.contains("ks.swap_dbs(") {
                offenders.push(format!("{}:{}: {}", name, i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "writes outside the keyspace write API:\n  {}", offenders.join("\n  "));
}
