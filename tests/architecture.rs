//! ARCHITECTURE.md stays true to the tree: every file or folder it names in backticks exists.
//! And tmux command lines and row parsing stay in `src/mux/tmux/`: a file of `src/mcp/` that
//! builds one fails. And no function in `src/` runs over [`LONGEST_FUNCTION`] lines unless a
//! `// Long on purpose: …` comment above it says why.
//!
//! For the document, a name counts when it ends in a file extension the repo uses
//! (`monitor.rs`, `deploy/k8s.yaml`) or in `/` (`src/mcp/`); it matches a path of the repo that
//! ends with it, so the document may name a file by its last parts where the text says which
//! folder it is in.

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Files the gateway writes at run time, which the document names but the repo cannot hold.
const WRITTEN_AT_RUN_TIME: &[&str] = &["meta.json", "owners.json"];

/// Every file and folder of the repo, relative to its root (folders end in `/`), leaving out
/// build output and version control.
fn repo_paths() -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | "node_modules" | "corpus") {
                continue;
            }
            let path = format!("{prefix}{name}");
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(format!("{path}/"));
                walk(&entry.path(), &format!("{path}/"), out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(ROOT), "", &mut out);
    out
}

/// The names in `text` that look like paths: in backticks, those ending in a file extension
/// the repo uses or in `/`; anywhere (the diagram too), words ending in such an extension and
/// paths under a top-level folder. Globs (`tests/zellij_*`) and absolute or home paths
/// (`/etc/…`, `~/…`: not the repo's) are left out.
fn named_paths(text: &str) -> Vec<&str> {
    let quoted_path = regex::Regex::new(
        r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*(\.(rs|md|toml|json|yaml|yml|py|sh|lock)|/)$",
    )
    .expect("valid regex");
    let file_word =
        regex::Regex::new(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(rs|md|toml|json|yaml|yml|py|sh|lock)$")
            .expect("valid regex");
    let in_tree = regex::Regex::new(r"^(src|tests|benches|deploy|scripts|docs|fuzz|config)/")
        .expect("valid regex");
    let quoted = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted_path.is_match(quoted));
    let bare = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_./-*~".contains(c)))
        .map(|word| word.trim_end_matches(['.', ',']))
        .filter(|word| (file_word.is_match(word) || in_tree.is_match(word)) && !word.contains('*'));
    let mut names: Vec<&str> = quoted.chain(bare).collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn exists(paths: &[String], named: &str) -> bool {
    paths.iter().any(|path| {
        path == named
            || path.strip_suffix('/') == Some(named)
            || path.ends_with(&format!("/{named}"))
    })
}

#[test]
fn every_file_architecture_md_names_exists() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let paths = repo_paths();
    let named = named_paths(&text);
    assert!(named.len() > 50, "only {} paths found", named.len());
    let missing: Vec<&str> = named
        .into_iter()
        .filter(|name| !WRITTEN_AT_RUN_TIME.contains(name) && !exists(&paths, name))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {missing:?}"
    );
}

#[test]
fn a_renamed_file_would_be_caught() {
    let paths = vec!["src/mux/tmux/monitor.rs".to_owned(), "src/mcp/".to_owned()];
    assert!(exists(&paths, "monitor.rs"));
    assert!(exists(&paths, "tmux/monitor.rs"));
    assert!(exists(&paths, "src/mcp/"));
    assert!(!exists(&paths, "onitor.rs"));
    assert!(!exists(&paths, "hub.rs"));
    assert_eq!(
        named_paths("see `hub.rs`, `tools/list`, `src/mcp/` and `a b.rs`"),
        ["b.rs", "hub.rs", "src/mcp/"]
    );
    assert_eq!(
        named_paths("runs src/http/mod.rs (TLS: tls.rs), tests/zellij_* and src/limits."),
        ["src/http/mod.rs", "src/limits", "tls.rs"]
    );
    // The words of the diagram count too; paths outside the repo do not.
    assert_eq!(
        named_paths("guard   src/http/guard.rs, allowlist.rs `/etc/muxgate/config.toml` ~/x.toml"),
        ["allowlist.rs", "src/http/guard.rs"]
    );
}

/// Whether Rust source builds a tmux command line (`TmuxCommand::…`) or parses a tmux row
/// (the `-F` helpers `row_format`, `split_row`).
fn builds_commands_or_parses_rows(source: &str) -> bool {
    let row_helper = regex::Regex::new(r"\b(row_format|split_row)\b").expect("valid regex");
    source.contains("TmuxCommand::") || row_helper.is_match(source)
}

/// The typed operations in `src/mux/tmux/` (sessions, windows, panes…) own the tmux command
/// lines and the rows they print; the tools in `src/mcp/` call them and build neither.
#[test]
fn no_file_in_src_mcp_builds_tmux_commands_or_parses_rows() {
    let mcp_sources: Vec<String> = repo_paths()
        .into_iter()
        .filter(|path| path.starts_with("src/mcp/") && path.ends_with(".rs"))
        .collect();
    assert!(
        mcp_sources.len() > 20,
        "only {} files found",
        mcp_sources.len()
    );
    let mut building = Vec::new();
    for path in &mcp_sources {
        let source = std::fs::read_to_string(Path::new(ROOT).join(path)).expect("read source");
        if builds_commands_or_parses_rows(&source) {
            building.push(path.as_str());
        }
    }
    building.sort_unstable();
    assert!(
        building.is_empty(),
        "{building:?} build tmux command lines or parse tmux rows: call the typed operations \
         of src/mux/tmux/ instead (or add one there)"
    );
}

#[test]
fn a_command_line_or_row_parse_would_be_caught() {
    assert!(builds_commands_or_parses_rows(
        r#"let c = TmuxCommand::new("kill-pane");"#
    ));
    assert!(builds_commands_or_parses_rows(
        "let f = split_row(line, 3)?;"
    ));
    assert!(builds_commands_or_parses_rows(
        "use crate::mux::tmux::format::row_format;"
    ));
    assert!(!builds_commands_or_parses_rows(
        "fn list_command() -> Result<TmuxCommand, QuoteError>"
    ));
    assert!(!builds_commands_or_parses_rows(
        "let rows = split_rows_of(x);"
    ));
}

/// The most lines a function of `src/` may span, signature to closing brace.
const LONGEST_FUNCTION: usize = 80;

/// The functions of `source` longer than [`LONGEST_FUNCTION`] lines that give no reason, as
/// `name (lines)`. A function's extent is its signature line to the first line holding only
/// its closing brace at the signature's indentation (as `rustfmt` lays them out); a signature
/// without a body (a trait's) has none. Unit tests (from `mod tests` on) are left out.
fn long_functions(source: &str) -> Vec<String> {
    let signature = regex::Regex::new(
        r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:async )?(?:unsafe )?fn (\w+)",
    )
    .expect("valid regex");
    let lines: Vec<&str> = source.lines().collect();
    let tests_from = lines
        .iter()
        .position(|line| line.trim_start().starts_with("mod tests"))
        .unwrap_or(lines.len());
    let mut long = Vec::new();
    for (at, line) in lines[..tests_from].iter().enumerate() {
        let Some(found) = signature.captures(line) else {
            continue;
        };
        let closing = format!("{}}}", &found[1]);
        let Some(body) = lines[at..tests_from]
            .iter()
            .position(|l| l.trim_end().ends_with('{') || l.trim_end().ends_with(';'))
        else {
            continue;
        };
        if lines[at + body].trim_end().ends_with(';') {
            continue;
        }
        let Some(end) = lines[at..tests_from].iter().position(|l| *l == closing) else {
            continue;
        };
        let reasoned = lines[..at]
            .iter()
            .rev()
            .take_while(|l| {
                let l = l.trim_start();
                l.starts_with("//") || l.starts_with("#[")
            })
            .any(|l| l.contains("// Long on purpose:"));
        if end + 1 > LONGEST_FUNCTION && !reasoned {
            long.push(format!("{} ({} lines)", &found[2], end + 1));
        }
    }
    long
}

/// A long function is one a reader must hold in their head at once: split it into named
/// steps, or say in a comment why it is better whole.
#[test]
fn no_function_in_src_is_long_without_a_reason() {
    let sources: Vec<String> = repo_paths()
        .into_iter()
        .filter(|path| path.starts_with("src/") && path.ends_with(".rs"))
        .collect();
    assert!(sources.len() > 100, "only {} files found", sources.len());
    let mut long = Vec::new();
    for path in &sources {
        let source = std::fs::read_to_string(Path::new(ROOT).join(path)).expect("read source");
        long.extend(
            long_functions(&source)
                .into_iter()
                .map(|f| format!("{path}: {f}")),
        );
    }
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION} lines without a `// Long on purpose:` reason: {long:?}"
    );
}

#[test]
fn a_long_function_would_be_caught() {
    let body = "    step();\n".repeat(LONGEST_FUNCTION);
    let long = format!("impl X {{\n    pub async fn run(&self) {{\n{body}    }}\n}}\n");
    assert_eq!(long_functions(&long), ["run (82 lines)"]);
    let reasoned =
        format!("/// Runs.\n// Long on purpose: one table.\n#[inline]\nfn run() {{\n{body}}}\n");
    assert!(long_functions(&reasoned).is_empty());
    let short = "fn run() {\n    step();\n}\n";
    assert!(long_functions(short).is_empty());
    // A trait's method without a body ends at its `;`, whatever follows.
    let declared = format!("trait T {{\n    fn run(&self);\n{body}    }}\n}}\n");
    assert!(long_functions(&declared).is_empty());
    // Unit tests are left out.
    let in_tests = format!("mod tests {{\n    fn run() {{\n{body}    }}\n}}\n");
    assert!(long_functions(&in_tests).is_empty());
}
