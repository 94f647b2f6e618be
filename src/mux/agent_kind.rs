//! Agent kinds: which agent CLI a pane's program is, and what its screens say, from one
//! manifest per kind (`agent_kinds/*.toml`, shipped in the binary).
//!
//! A manifest names its program (`commands`: the base name of the foreground command line's
//! first word, or of the script an interpreter such as `node` or `python3` runs) and lists, as
//! regular expressions matched line by line against the bottom of the visible screen: the
//! dialogs that need a human (`[[blocked]]`, each saying why: a permission or a confirmation,
//! a login or trust prompt, a question), what shows while the agent works (`[busy]`) and what
//! shows while it waits for its next task (`[idle]`).
//!
//! Pure: parsing and matching. [`super::agent_status`] weighs what a screen shows against the
//! agent's hooks and its process.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

/// The bottom lines of the screen (blank ones below the last text left out) a manifest's
/// patterns are matched against.
const SCREEN_LINES: usize = 30;
/// Longest line quoted in what a screen shows.
const QUOTE_CHARS: usize = 100;
/// Most compiled size of one pattern.
const PATTERN_BYTES: usize = 256 * 1024;
/// Programs that run an agent's script: the script's name is the agent's.
const INTERPRETERS: [&str; 7] = ["node", "nodejs", "bun", "deno", "python", "python3", "npx"];

/// The manifests muxgate ships, by file name.
const SHIPPED: [(&str, &str); 5] = [
    ("aider.toml", include_str!("agent_kinds/aider.toml")),
    (
        "claude-code.toml",
        include_str!("agent_kinds/claude-code.toml"),
    ),
    ("codex.toml", include_str!("agent_kinds/codex.toml")),
    (
        "gemini-cli.toml",
        include_str!("agent_kinds/gemini-cli.toml"),
    ),
    ("opencode.toml", include_str!("agent_kinds/opencode.toml")),
];

/// Why an agent needs a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BlockedOn {
    /// A tool call or edit waiting for approval.
    Permission,
    /// A yes/no confirmation.
    Confirmation,
    /// A sign-in.
    Login,
    /// Whether to trust a folder.
    Trust,
    /// A question put to the user.
    Question,
}

impl BlockedOn {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BlockedOn::Permission => "permission",
            BlockedOn::Confirmation => "confirmation",
            BlockedOn::Login => "login",
            BlockedOn::Trust => "trust",
            BlockedOn::Question => "question",
        }
    }
}

/// A manifest as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    kind: String,
    commands: Vec<String>,
    #[serde(default)]
    blocked: Vec<BlockedFile>,
    #[serde(default)]
    busy: PatternsFile,
    #[serde(default)]
    idle: PatternsFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockedFile {
    why: BlockedOn,
    pattern: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PatternsFile {
    patterns: Vec<String>,
}

/// Why a manifest was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("agent manifest {file}: {error}")]
    Toml {
        file: String,
        error: Box<toml::de::Error>,
    },
    #[error("agent manifest {file}: pattern {pattern:?}: {error}")]
    Pattern {
        file: String,
        pattern: String,
        error: Box<regex::Error>,
    },
    #[error("agent manifest {file}: `commands` names no program")]
    NoCommands { file: String },
    #[error("agent manifests {file} and another both describe kind {kind:?}")]
    Twice { file: String, kind: String },
    #[error("agent manifest {file}: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("[agents.{table}]: manifest {file} describes kind {kind:?}, not {table:?}")]
    OtherKind {
        table: String,
        file: String,
        kind: String,
    },
    #[error(
        "[agents.{0}]: no shipped manifest describes kind {0:?} (claude-code, codex, gemini-cli, \
         aider, opencode); name one with manifest = FILE"
    )]
    Unknown(String),
}

/// One agent kind: its program and what its screens show.
#[derive(Debug)]
pub(crate) struct AgentKind {
    pub(crate) kind: String,
    commands: Vec<String>,
    blocked: Vec<(BlockedOn, Regex)>,
    busy: Vec<Regex>,
    idle: Vec<Regex>,
}

/// What a screen shows by a kind's manifest: for each group, the lowest line that matches one
/// of its patterns (quoted, trimmed and cut to [`QUOTE_CHARS`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ScreenSigns {
    pub(crate) blocked: Option<(BlockedOn, String)>,
    pub(crate) busy: Option<String>,
    pub(crate) idle: Option<String>,
}

impl AgentKind {
    /// The manifest `text` (of file `file`, named in errors).
    pub(crate) fn parse(file: &str, text: &str) -> Result<Self, ManifestError> {
        let manifest: ManifestFile = toml::from_str(text).map_err(|error| ManifestError::Toml {
            file: file.to_owned(),
            error: Box::new(error),
        })?;
        if manifest.commands.iter().all(|c| c.trim().is_empty()) {
            return Err(ManifestError::NoCommands {
                file: file.to_owned(),
            });
        }
        let compile = |pattern: &str| {
            RegexBuilder::new(pattern)
                .size_limit(PATTERN_BYTES)
                .build()
                .map_err(|error| ManifestError::Pattern {
                    file: file.to_owned(),
                    pattern: pattern.to_owned(),
                    error: Box::new(error),
                })
        };
        let compile_all = |patterns: &[String]| -> Result<Vec<Regex>, ManifestError> {
            patterns.iter().map(|p| compile(p)).collect()
        };
        Ok(Self {
            blocked: manifest
                .blocked
                .iter()
                .map(|b| Ok((b.why, compile(&b.pattern)?)))
                .collect::<Result<_, ManifestError>>()?,
            busy: compile_all(&manifest.busy.patterns)?,
            idle: compile_all(&manifest.idle.patterns)?,
            kind: manifest.kind,
            commands: manifest.commands,
        })
    }

    /// Whether `command_line` (a foreground process's) runs this kind's program.
    pub(crate) fn runs(&self, command_line: &str) -> bool {
        let mut words = command_line.split_whitespace().map(base_name);
        let Some(first) = words.next() else {
            return false;
        };
        let program = if INTERPRETERS.contains(&first) {
            // The script: the first word after the interpreter's options.
            words.find(|word| !word.starts_with('-')).unwrap_or(first)
        } else {
            first
        };
        self.commands.iter().any(|command| command == program)
    }

    /// What the visible screen `lines` shows.
    pub(crate) fn read_screen(&self, lines: &[String]) -> ScreenSigns {
        let text_end = lines
            .iter()
            .rposition(|line| !line.trim().is_empty())
            .map_or(0, |last| last + 1);
        let bottom = &lines[text_end.saturating_sub(SCREEN_LINES)..text_end];
        let lowest = |patterns: &mut dyn Iterator<Item = &Regex>| -> Option<String> {
            let patterns: Vec<&Regex> = patterns.collect();
            bottom
                .iter()
                .rev()
                .find(|line| patterns.iter().any(|p| p.is_match(line)))
                .map(|line| quote(line))
        };
        let blocked = bottom.iter().rev().find_map(|line| {
            self.blocked
                .iter()
                .find(|(_, pattern)| pattern.is_match(line))
                .map(|(why, _)| (*why, quote(line)))
        });
        ScreenSigns {
            blocked,
            busy: lowest(&mut self.busy.iter()),
            idle: lowest(&mut self.idle.iter()),
        }
    }
}

/// The shipped agent kinds.
#[derive(Debug)]
pub(crate) struct AgentKinds(Vec<AgentKind>);

impl AgentKinds {
    /// The manifests muxgate ships.
    pub(crate) fn shipped() -> Result<Self, ManifestError> {
        let mut kinds: Vec<AgentKind> = Vec::with_capacity(SHIPPED.len());
        for (file, text) in SHIPPED {
            let kind = AgentKind::parse(file, text)?;
            if kinds.iter().any(|k| k.kind == kind.kind) {
                return Err(ManifestError::Twice {
                    file: file.to_owned(),
                    kind: kind.kind,
                });
            }
            kinds.push(kind);
        }
        Ok(Self(kinds))
    }

    /// The shipped manifests and those `[agents.<kind>] manifest` names; every configured
    /// kind must be described by one.
    pub(crate) fn for_programs(
        programs: &std::collections::BTreeMap<String, crate::fleet::AgentProgram>,
    ) -> Result<Self, ManifestError> {
        let mut kinds = Self::shipped()?;
        for (table, program) in programs {
            let Some(path) = &program.manifest else {
                if kinds.get(table).is_none() {
                    return Err(ManifestError::Unknown(table.clone()));
                }
                continue;
            };
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|error| ManifestError::Read {
                file: file.clone(),
                error,
            })?;
            let kind = AgentKind::parse(&file, &text)?;
            if kind.kind != *table {
                return Err(ManifestError::OtherKind {
                    table: table.clone(),
                    file,
                    kind: kind.kind,
                });
            }
            if kinds.get(table).is_some() {
                return Err(ManifestError::Twice {
                    file,
                    kind: kind.kind,
                });
            }
            kinds.0.push(kind);
        }
        Ok(kinds)
    }

    /// The kind named `kind`.
    pub(crate) fn get(&self, kind: &str) -> Option<&AgentKind> {
        self.0.iter().find(|k| k.kind == kind)
    }

    /// The kind whose program `command_line` runs.
    pub(crate) fn of_command_line(&self, command_line: &str) -> Option<&AgentKind> {
        self.0.iter().find(|kind| kind.runs(command_line))
    }
}

/// `path`'s last part, without a script's extension.
fn base_name(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    [".js", ".mjs", ".cjs", ".py"]
        .iter()
        .find_map(|extension| name.strip_suffix(extension))
        .unwrap_or(name)
}

/// `line` trimmed and cut to [`QUOTE_CHARS`] characters.
fn quote(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> AgentKinds {
        AgentKinds::shipped().expect("the shipped manifests parse")
    }

    impl AgentKinds {
        fn named(&self, kind: &str) -> Option<&AgentKind> {
            self.0.iter().find(|k| k.kind == kind)
        }
    }

    fn screen(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn every_shipped_manifest_parses_and_names_its_program() {
        let kinds = kinds();
        for (line, kind) in [
            ("claude", "claude-code"),
            (
                "node /usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js",
                "none",
            ),
            ("node /usr/local/bin/claude --resume", "claude-code"),
            ("/usr/bin/codex", "codex"),
            ("node --no-warnings /opt/bin/gemini", "gemini-cli"),
            ("python3 /usr/local/bin/aider --model x", "aider"),
            ("opencode", "opencode"),
            ("vim claude", "none"),
            ("bash", "none"),
            ("", "none"),
        ] {
            let found = kinds
                .of_command_line(line)
                .map_or("none", |k| k.kind.as_str());
            assert_eq!(found, kind, "{line}");
        }
        assert!(kinds.named("codex").is_some() && kinds.named("vim").is_none());
    }

    #[test]
    fn a_permission_dialog_is_blocked_and_quoted_from_its_lowest_line() {
        let claude = kinds();
        let claude = claude.named("claude-code").expect("claude-code");
        let signs = claude.read_screen(&screen(
            "╭──────────────╮\n│ Bash command │\n│   git push    │\n\
             │ Do you want to proceed?\n│ ❯ 1. Yes\n\
             │   2. No, and tell Claude what to do differently (esc)\n╰──╯\n\n\n",
        ));
        let (why, line) = signs.blocked.expect("blocked");
        assert_eq!(why, BlockedOn::Permission);
        assert_eq!(
            line,
            "│   2. No, and tell Claude what to do differently (esc)"
        );
        assert_eq!(signs.busy, None);
    }

    #[test]
    fn busy_and_idle_signs_are_read_apart() {
        let kinds = kinds();
        let claude = kinds.named("claude-code").expect("claude-code");
        let working = claude.read_screen(&screen(
            "✻ Thinking… (3s · esc to interrupt)\n╭───╮\n│ > │\n╰───╯\n  ? for shortcuts\n",
        ));
        assert!(working.busy.is_some() && working.idle.is_some() && working.blocked.is_none());
        let aider = kinds.named("aider").expect("aider");
        let idle = aider.read_screen(&screen("Tokens: 1k sent\n\ndiff> \n\n"));
        assert_eq!(idle.idle.as_deref(), Some("diff>"));
        let asked = aider.read_screen(&screen("Add file.py to the chat? (Y)es/(N)o [Yes]: "));
        assert_eq!(
            asked.blocked.map(|(why, _)| why),
            Some(BlockedOn::Confirmation)
        );
    }

    #[test]
    fn only_the_bottom_of_the_screen_counts() {
        let kinds = kinds();
        let claude = kinds.named("claude-code").expect("claude-code");
        let mut lines = vec!["Do you want to proceed?".to_owned()];
        lines.extend((0..SCREEN_LINES).map(|i| format!("output {i}")));
        lines.extend(["".to_owned(), "".to_owned()]);
        assert_eq!(claude.read_screen(&lines), ScreenSigns::default());
        assert_eq!(claude.read_screen(&[]), ScreenSigns::default());
    }

    #[test]
    fn long_lines_are_quoted_cut() {
        let quoted = quote(&format!("  {}  ", "é".repeat(300)));
        assert_eq!(quoted.chars().count(), QUOTE_CHARS + 1);
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn bad_manifests_are_refused_naming_the_file() {
        for (text, says) in [
            ("kind = 'x'\ncommands = []", "names no program"),
            (
                "kind = 'x'\ncommands = ['x']\n[busy]\npatterns = ['(']",
                "pattern \"(\"",
            ),
            ("kind = 'x'\ncommands = ['x']\nspeed = 1", "unknown field"),
            (
                "kind = 'x'\ncommands = ['x']\n[[blocked]]\nwhy = 'bored'\npattern = 'x'",
                "unknown variant",
            ),
        ] {
            let error = AgentKind::parse("x.toml", text)
                .expect_err(text)
                .to_string();
            assert!(error.contains("x.toml") && error.contains(says), "{error}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_screen_reads_without_panicking(lines in proptest::collection::vec(".{0,200}", 0..60)) {
            for kind in &kinds().0 {
                let _ = kind.read_screen(&lines);
                let _ = kind.runs(&lines.join(" "));
            }
        }
    }
}
