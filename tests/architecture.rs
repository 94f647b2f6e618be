//! ARCHITECTURE.md and the pages of `docs/internals/` stay true to the tree: every file or
//! folder they name in backticks exists.
//! (That tmux command lines and rows stay in the tmux crate is the compiler's to keep:
//! `TmuxCommand::new`, every function that returns a command, `row_format` and `split_row` are
//! private to `crates/tmux/`, so no other crate holds a command to run.) And no
//! function in `src/` or `crates/` runs over [`LONGEST_FUNCTION`] lines unless a
//! `// Long on purpose: …` comment above it says why. And no files of one crate import each
//! other in a circle. And every tool both backends serve reaches its backend through the one
//! `SharedTool` contract.
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
    let paths = repo_paths();
    let internals: Vec<&String> = paths
        .iter()
        .filter(|path| path.starts_with("docs/internals/") && path.ends_with(".md"))
        .collect();
    assert!(
        internals.len() >= 5,
        "only {} internals pages",
        internals.len()
    );
    let mut checked = 0;
    for document in std::iter::once("ARCHITECTURE.md").chain(internals.iter().map(|p| p.as_str())) {
        let text = std::fs::read_to_string(Path::new(ROOT).join(document))
            .unwrap_or_else(|e| panic!("read {document}: {e}"));
        let named = named_paths(&text);
        checked += named.len();
        let missing: Vec<&str> = named
            .into_iter()
            .filter(|name| !WRITTEN_AT_RUN_TIME.contains(name) && !exists(&paths, name))
            .collect();
        assert!(
            missing.is_empty(),
            "{document} names files that do not exist: {missing:?}"
        );
    }
    assert!(checked > 150, "only {checked} paths found");
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

/// The body of the function a `#[tool(name = "<tool>", …)]` attribute in `source` marks: from
/// the function's opening brace to its closing one. The name must be the attribute's own (not
/// a string elsewhere), and the function the one before the next `#[tool(`.
fn tool_body<'a>(source: &'a str, tool: &str) -> Option<&'a str> {
    let name = format!("name = \"{tool}\",");
    let mut rest = source;
    while let Some(at) = rest.find("#[tool(") {
        let attribute = &rest[at..];
        let next = attribute[1..]
            .find("#[tool(")
            .map_or(attribute.len(), |n| n + 1);
        let item = &attribute[..next];
        let attribute_end = item.find(")]\n")?;
        if item[..attribute_end].contains(&name) {
            let signature = item.find("async fn ")?;
            let open = signature + item[signature..].find(") -> ")?;
            let open = open + item[open..].find('{')? + 1;
            let close = open + closing_brace(&item[open..])?;
            return Some(&item[open..close]);
        }
        rest = &attribute[next..];
    }
    None
}

/// Whether a tool's body hands the call to `McpServer::serve` (the `SharedTool` contract)
/// rather than picking a backend or opening one itself.
fn serves_through_the_contract(body: &str) -> bool {
    body.contains(".serve(") && !body.contains("backend_of(") && !body.contains("_access(")
}

/// The Rust sources under `dir` (a path of the repo ending in `/`), with their text.
fn sources_under(dir: &str) -> Vec<(String, String)> {
    repo_paths()
        .into_iter()
        .filter(|path| path.starts_with(dir) && path.ends_with(".rs"))
        .map(|path| {
            let source = std::fs::read_to_string(Path::new(ROOT).join(&path)).expect("read");
            (path, source)
        })
        .collect()
}

/// Every tool both backends serve reaches its backend through one contract
/// (`src/mcp/shared_tool.rs`): the tool checks its arguments and calls `serve`, and the tmux
/// and Zellij halves are the two methods of one `SharedTool` impl. `list_servers` lists both
/// backends at once and `pane_batch` runs each operation through that operation's tool; they
/// and the contract itself are the only places that ask which backend a server is.
#[test]
fn every_shared_tool_reaches_its_backend_through_serve() {
    let tools = sources_under("src/mcp/tools/");
    let mut dispatching = Vec::new();
    for tool in muxgate::mcp::backend::SHARED_TOOLS {
        if ["list_servers", "pane_batch"].contains(tool) {
            continue;
        }
        let bodies: Vec<&str> = tools
            .iter()
            .filter_map(|(_, source)| tool_body(source, tool))
            .collect();
        assert_eq!(
            bodies.len(),
            1,
            "{tool}: one #[tool] of that name in src/mcp/tools/"
        );
        if !serves_through_the_contract(bodies[0]) {
            dispatching.push(*tool);
        }
    }
    assert!(
        dispatching.is_empty(),
        "{dispatching:?} pick or open their backend themselves: implement SharedTool for the \
         call and call self.serve"
    );
    let mut asking: Vec<String> = sources_under("src/")
        .into_iter()
        .filter(|(_, source)| source.contains("backend_of("))
        .map(|(path, _)| path)
        .collect();
    asking.sort_unstable();
    assert_eq!(
        asking,
        [
            "src/mcp/access.rs",
            "src/mcp/shared_tool.rs",
            "src/mcp/tools/batch.rs"
        ],
        "only the contract, the access rules and pane_batch ask which backend a server is"
    );
}

#[test]
fn a_shared_tool_picking_its_backend_would_be_caught() {
    let source = r#"
        /// Mentions name = "kill_pane", in a doc.
        #[tool(name = "kill_pane", description = "Kill.")]
        async fn kill_pane(&self, input: In) -> Result<Json<Out>, ToolError> {
            if self.backend_of(&call, input.server.as_deref()) == Backend::Zellij {
                return self.close_zellij_pane(&call, input).await.map(Json);
            }
            Ok(Json(kill(input).await?))
        }
        #[tool(name = "select_pane", description = "Select.")]
        async fn select_pane(&self, input: In) -> Result<Json<Out>, ToolError> {
            let z = self.zellij_access(&call, None).await?;
            self.serve(&call, input).await.map(Json)
        }
        #[tool(name = "resize_pane", description = "Resize.")]
        async fn resize_pane(&self, input: In) -> Result<Json<Out>, ToolError> {
            let change = check(&input)?;
            self.serve(&call, ResizePane { input, change }).await.map(Json)
        }
    "#;
    let kill = tool_body(source, "kill_pane").expect("kill_pane found");
    assert!(kill.contains("close_zellij_pane") && !kill.contains("fn select_pane"));
    assert!(!serves_through_the_contract(kill));
    let select = tool_body(source, "select_pane").expect("select_pane found");
    assert!(!serves_through_the_contract(select));
    let resize = tool_body(source, "resize_pane").expect("resize_pane found");
    assert!(serves_through_the_contract(resize));
    assert_eq!(tool_body(source, "kill_window"), None);
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
        .filter(|path| {
            (path.starts_with("src/") || path.starts_with("crates/")) && path.ends_with(".rs")
        })
        .collect();
    assert!(sources.len() > 100, "only {} files found", sources.len());
    assert!(
        sources.iter().any(|path| path.starts_with("crates/")),
        "no file of the workspace's crates found"
    );
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

/// The module of a library file: `src/mcp/tools/channel.rs` is `mcp::tools::channel`,
/// `src/mcp/mod.rs` is `mcp`, `src/lib.rs` the crate root.
fn module_of(path: &str) -> Vec<String> {
    let inner = path.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = inner.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The paths `source` names from `crate::`, `super::` or `self::`, or from a child module it
/// declares (`mod output;` … `use output::X`, read as `self::output::X`), `use` groups expanded
/// (`crate::a::{b, c::d}` is `crate::a::b` and `crate::a::c::d`). Comments, and unit test
/// modules (from a `#[cfg(test)]` above a `mod` on), are left out.
fn paths_named_in(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let tests_from = (0..lines.len())
        .find(|&at| {
            lines[at].trim() == "#[cfg(test)]"
                && lines.get(at + 1).is_some_and(|next| {
                    let next = next.trim_start();
                    next.starts_with("mod ") || next.starts_with("pub(crate) mod ")
                })
        })
        .unwrap_or(lines.len());
    let code: String = lines[..tests_from]
        .iter()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let child = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
        .expect("valid regex");
    let mut roots = vec!["crate".to_owned(), "super".to_owned(), "self".to_owned()];
    roots.extend(child.captures_iter(&code).map(|c| c[1].to_owned()));
    let start = regex::Regex::new(&format!(
        r"\b(?:{})(?:::[A-Za-z_]\w*)*(?:::\{{)?",
        roots.join("|")
    ))
    .expect("valid regex");
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(found) = start.find_at(&code, from) {
        from = found.end();
        // A child module's name alone (`mod output;` itself, a local of that name) names
        // nothing; with a path after it, it is `self::` that path.
        let text = found.as_str();
        let text = match text.split("::").next() {
            Some("crate" | "super" | "self") => text.to_owned(),
            _ if text.contains("::") => format!("self::{text}"),
            _ => continue,
        };
        match text.strip_suffix("::{") {
            Some(prefix) => {
                let inner = &code[found.end()..];
                let close = closing_brace(inner).unwrap_or(inner.len());
                paths.extend(expand_group(prefix, &inner[..close]));
                from = found.end() + close;
            }
            None => paths.push(text),
        }
    }
    paths
}

/// Where the brace group that `text` is inside of closes.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(at),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The paths of a `use` group's items under `prefix`.
fn expand_group(prefix: &str, group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut begin) = (0usize, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&group[begin..at]);
                begin = at + 1;
            }
            _ => {}
        }
    }
    items.push(&group[begin..]);
    let mut paths = Vec::new();
    for item in items.into_iter().map(str::trim).filter(|i| !i.is_empty()) {
        if let Some((head, rest)) = item.split_once("::{") {
            let inner = rest.strip_suffix('}').unwrap_or(rest);
            paths.extend(expand_group(&format!("{prefix}::{head}"), inner));
        } else {
            let name = item.split_whitespace().next().unwrap_or(item);
            match name {
                "self" | "*" => paths.push(prefix.to_owned()),
                _ => paths.push(format!("{prefix}::{name}")),
            }
        }
    }
    paths
}

/// The files each file of `files` (path, source) takes names from, among `files`. A module's
/// own ancestors (`mod.rs`, `lib.rs` above it) are left out: they are the namespaces its names
/// are published through. A name an ancestor only re-exports from another of its files is
/// therefore not followed to that file: a circle through such a name is not seen.
fn imports(files: &[(String, String)]) -> Vec<Vec<usize>> {
    let index: std::collections::HashMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (path, _))| (module_of(path), i))
        .collect();
    files
        .iter()
        .map(|(path, source)| {
            let module = module_of(path);
            let mut targets: Vec<usize> = paths_named_in(source)
                .iter()
                .filter_map(|named| {
                    let mut base = match named.split("::").next()? {
                        "crate" => Vec::new(),
                        _ => module.clone(),
                    };
                    let mut rest = Vec::new();
                    for (at, segment) in named.split("::").enumerate() {
                        match segment {
                            "super" => {
                                base.pop();
                            }
                            "crate" | "self" if at == 0 => {}
                            _ => rest.push(segment.to_owned()),
                        }
                    }
                    base.extend(rest);
                    (0..=base.len())
                        .rev()
                        .find_map(|len| index.get(&base[..len]).copied())
                })
                .filter(|&target| !module.starts_with(&module_of(&files[target].0)))
                .collect();
            targets.sort_unstable();
            targets.dedup();
            targets
        })
        .collect()
}

/// The import circles among `files` (path, source): each a set of files, sorted, every one of
/// which takes names, directly or not, from every other.
fn import_circles(files: &[(String, String)]) -> Vec<Vec<String>> {
    let edges = imports(files);
    let reach: Vec<Vec<bool>> = (0..files.len())
        .map(|from| {
            let mut seen = vec![false; files.len()];
            let mut stack = edges[from].clone();
            while let Some(next) = stack.pop() {
                if !std::mem::replace(&mut seen[next], true) {
                    stack.extend(&edges[next]);
                }
            }
            seen
        })
        .collect();
    let mut circles: Vec<Vec<String>> = Vec::new();
    for (file, reached) in reach.iter().enumerate() {
        let mut circle: Vec<String> = (0..files.len())
            .filter(|&other| reached[other] && reach[other][file])
            .map(|other| files[other].0.clone())
            .collect();
        circle.sort();
        if circle.len() > 1 && !circles.contains(&circle) {
            circles.push(circle);
        }
    }
    circles
}

/// Files that take names from each other can be understood, tested and changed only together:
/// a circle means one of them holds something that belongs lower down.
#[test]
fn no_files_of_a_crate_import_each_other_in_a_circle() {
    // Each crate of the workspace on its own (`crate::` means its own root), with the least
    // files and imports it has, so that a change of layout that hides them fails here.
    for (root, least_files, least_imports) in [
        ("", 100, 300),
        ("crates/mux/", 15, 5),
        ("crates/tmux/", 40, 100),
        ("crates/zellij/", 15, 30),
    ] {
        let files: Vec<(String, String)> = repo_paths()
            .into_iter()
            .filter_map(|path| {
                let inner = path.strip_prefix(root)?;
                (inner.starts_with("src/") && inner.ends_with(".rs") && inner != "src/main.rs")
                    .then(|| inner.to_owned())
                    .map(|inner| {
                        let source = std::fs::read_to_string(Path::new(ROOT).join(&path))
                            .expect("read source");
                        (inner, source)
                    })
            })
            .collect();
        assert!(
            files.len() >= least_files,
            "{root}src: only {} files found",
            files.len()
        );
        let edges: usize = imports(&files).iter().map(Vec::len).sum();
        assert!(
            edges >= least_imports,
            "{root}src: only {edges} imports found"
        );
        let circles = import_circles(&files);
        assert!(
            circles.is_empty(),
            "{root}src: files that import each other, directly or through others: {circles:?}"
        );
    }
}

#[test]
fn an_import_circle_would_be_caught() {
    let file = |path: &str, source: &str| (path.to_owned(), source.to_owned());
    let circle = [
        file("src/a/mod.rs", "pub mod b;\npub mod c;\nuse self::b::B;\n"),
        file("src/a/b.rs", "use super::{c::{C, D as E}, A};\n"),
        file(
            "src/a/c.rs",
            "// use super::b::B;\nfn f() { crate::d::run(); }\n",
        ),
        file(
            "src/d.rs",
            "use crate::a::b::B;\n#[cfg(test)]\nmod tests { use crate::a::c::C; }\n",
        ),
    ];
    assert_eq!(
        import_circles(&circle),
        [vec!["src/a/b.rs", "src/a/c.rs", "src/d.rs"]]
    );
    // Through a facade's relative `use` of its child, past a test-only item.
    let facade = [
        file("src/x.rs", "use crate::a::Y;\n"),
        file("src/a/mod.rs", "mod y;\npub use y::Y;\n"),
        file(
            "src/a/y.rs",
            "#[cfg(test)]\nfn probe() {}\nuse crate::x::X;\n",
        ),
    ];
    assert_eq!(
        import_circles(&facade),
        [vec!["src/a/mod.rs", "src/a/y.rs", "src/x.rs"]]
    );
    // Children naming their own `mod.rs`, and comments and unit tests, make none.
    let none = [
        file("src/a/mod.rs", "mod b;\nuse self::b::B;\n"),
        file("src/a/b.rs", "use super::A;\n// use crate::c::C;\n"),
        file(
            "src/c.rs",
            "use crate::a::b::B;\n#[cfg(test)]\nmod tests { use crate::c::X; }\n",
        ),
    ];
    assert!(import_circles(&none).is_empty());
}
