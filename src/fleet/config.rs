//! `[agents.<kind>]` and `[repositories.<name>]`: the agent programs `spawn_agent` may start,
//! and the git repositories it may give them worktrees of.
//!
//! ```toml
//! [agents.claude-code]              # a shipped manifest's kind, or any name with `manifest`
//! command = "claude"
//! args = ["--permission-mode", "default"]
//! env = { CLAUDE_CODE_DISABLE_TELEMETRY = "1" }
//! ready = "screen"                  # screen (its idle prompt or hook) | quiet
//! # manifest = "/etc/muxgate/agents/my-cli.toml"
//!
//! [repositories.app]
//! path = "/srv/git/app"             # a git repository on the gateway's machine
//! worktrees = "/srv/worktrees/app"  # where each agent's worktree is made
//! base = "main"                     # the default branch a new agent's branch starts from
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// How long an agent may take to be ready for its first prompt, by default.
const DEFAULT_READY_SECS: u64 = 60;
/// How long it must be quiet to count as ready with `ready = "quiet"`, by default.
const DEFAULT_QUIET_MS: u64 = 1500;

/// One agent program `spawn_agent` may start.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentProgram {
    /// The program: a name on the pane's `PATH`, or a path.
    pub command: String,
    /// Its arguments, each passed as one word (no shell reads them).
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for it (a caller's `env` adds to them, never replaces them).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What says it is ready for its first prompt.
    #[serde(default)]
    pub ready: Readiness,
    /// `ready = "quiet"`: how long without output.
    #[serde(default = "default_quiet_ms")]
    pub ready_quiet_ms: u64,
    /// The longest it may take to be ready.
    #[serde(default = "default_ready_secs")]
    pub ready_timeout_secs: u64,
    /// Arguments added after `args` when an agent of this kind is resumed (`spawn_agent`
    /// `resume`), so that the CLI takes up its conversation in the worktree (`--continue`).
    #[serde(default)]
    pub resume_args: Vec<String>,
    /// Arguments added after `args` instead of `resume_args` when the agent's hook reported
    /// the CLI's own session id (`report_agent_state` `session_id`), with `{session}` in one
    /// of them replaced by it: `["--resume", "{session}"]` takes up that very conversation.
    #[serde(default)]
    pub resume_session_args: Vec<String>,
    /// A manifest file for a kind muxgate does not ship (default: the shipped manifest of
    /// the table's name).
    #[serde(default)]
    pub manifest: Option<PathBuf>,
}

/// What tells that a spawned agent is ready for its first prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Readiness {
    /// Its state reads `idle`: its manifest's idle prompt on screen, or its hook saying so.
    #[default]
    Screen,
    /// No output for `ready_quiet_ms`: for a program whose screens no manifest describes.
    Quiet,
}

fn default_ready_secs() -> u64 {
    DEFAULT_READY_SECS
}

fn default_quiet_ms() -> u64 {
    DEFAULT_QUIET_MS
}

/// A git repository agents may get worktrees of.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repository {
    /// The repository (its work tree or a bare one), on the gateway's machine.
    pub path: PathBuf,
    /// The directory each agent's worktree is made in (`<worktrees>/<agent>`).
    pub worktrees: PathBuf,
    /// The branch or commit a new agent's branch starts from unless the call names one.
    #[serde(default = "default_base")]
    pub base: String,
}

fn default_base() -> String {
    "main".to_owned()
}

/// Where the CLI's session id goes in `resume_session_args`.
const SESSION_PLACEHOLDER: &str = "{session}";

impl AgentProgram {
    /// The arguments a resume adds after `args`: `resume_session_args` with `session` in them
    /// when both are there, else `resume_args`; and whether they take up the conversation.
    pub(crate) fn resume_args_for(&self, session: Option<&str>) -> (Vec<String>, bool) {
        match session {
            Some(session) if !self.resume_session_args.is_empty() => (
                self.resume_session_args
                    .iter()
                    .map(|arg| arg.replace(SESSION_PLACEHOLDER, session))
                    .collect(),
                true,
            ),
            _ => (self.resume_args.clone(), !self.resume_args.is_empty()),
        }
    }

    /// What is wrong with it, if anything, as the configuration error says it.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.command.trim().is_empty() {
            return Some("command must name a program".to_owned());
        }
        if self.ready_timeout_secs == 0 || self.ready_quiet_ms == 0 {
            return Some("ready_timeout_secs and ready_quiet_ms must be positive".to_owned());
        }
        if !self.resume_session_args.is_empty()
            && !self
                .resume_session_args
                .iter()
                .any(|arg| arg.contains(SESSION_PLACEHOLDER))
        {
            return Some(format!(
                "resume_session_args: one of them must hold {SESSION_PLACEHOLDER}, where the \
                 session id goes"
            ));
        }
        let bad_name = self.env.keys().find(|name| {
            name.is_empty()
                || name.starts_with(|c: char| c.is_ascii_digit())
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        bad_name.map(|name| format!("env: {name:?} is not a variable name"))
    }
}

impl Repository {
    /// What is wrong with it, if anything.
    pub(crate) fn problem(&self) -> Option<String> {
        if !self.path.is_absolute() || !self.worktrees.is_absolute() {
            return Some("path and worktrees must be absolute".to_owned());
        }
        if self.worktrees.starts_with(&self.path) {
            return Some("worktrees must be outside the repository".to_owned());
        }
        check_base(&self.base).err().map(|e| format!("base: {e}"))
    }
}

/// Whether `base` may name what a branch starts from: a branch, tag or commit written plainly
/// (letters, digits, `._/-`), never an option or a revision expression.
pub(crate) fn check_base(base: &str) -> Result<(), &'static str> {
    let plain = base
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'));
    if base.is_empty() || base.len() > 200 {
        Err("must be 1 to 200 characters")
    } else if !plain {
        Err("may hold only letters, digits and . _ / -")
    } else if base.starts_with(['-', '/', '.']) || base.ends_with(['/', '.']) {
        Err("must not start with - / . or end with / .")
    } else if base.contains("..") || base.contains("//") || base.ends_with(".lock") {
        Err("must not hold .. or // or end in .lock")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_is_a_plain_name_never_an_option_or_expression() {
        for good in ["main", "release/1.2", "v2.0.1", "a1b2c3d", "feature/x_y-z"] {
            assert_eq!(check_base(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-b",
            "--orphan",
            "main..dev",
            "HEAD~1",
            "main^",
            "a b",
            "/abs",
            ".hidden",
            "x.lock",
            "a//b",
            "dir/",
            "@{-1}",
            "main:file",
            "$(id)",
        ] {
            assert!(check_base(bad).is_err(), "{bad:?}");
        }
        assert!(check_base(&"a".repeat(201)).is_err());
    }

    #[test]
    fn a_resume_takes_the_reported_session_up_where_the_kind_says_how() {
        let program: AgentProgram = toml::from_str(
            "command = 'claude'\nresume_args = ['--continue']\n\
             resume_session_args = ['--resume', '{session}']\n",
        )
        .unwrap();
        assert_eq!(program.problem(), None);
        assert_eq!(
            program.resume_args_for(Some("4f1c")),
            (vec!["--resume".to_owned(), "4f1c".to_owned()], true)
        );
        assert_eq!(
            program.resume_args_for(None),
            (vec!["--continue".to_owned()], true)
        );
        let bare: AgentProgram = toml::from_str("command = 'aider'\n").unwrap();
        assert_eq!(bare.resume_args_for(Some("4f1c")), (Vec::new(), false));
        let placeless: AgentProgram =
            toml::from_str("command = 'x'\nresume_session_args = ['--resume']\n").unwrap();
        assert!(placeless.problem().unwrap().contains("{session}"));
    }
}
