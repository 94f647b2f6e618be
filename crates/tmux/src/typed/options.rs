//! tmux options and hooks of one server, as one caller: reading and setting an option at the
//! server, a session, a window, a pane or a global default, and reading hooks (which tmux
//! keeps as options).
//!
//! This module owns the command lines and parses what they print; callers say where with an
//! [`OptionPlace`] and get an [`OptionError`] that says what happened, not what to tell anyone
//! about it. Which names and values are acceptable (hooks, `#(`) is the caller's business.

use crate::typed::op_error::OpError;
use crate::{Caller, CommandBuilder, EngineError, QuoteError, TmuxCommand, TmuxServer};

/// Which objects an option (or hook) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionLevel {
    /// The server (`-s`).
    Server,
    /// A session (no flag: tmux's default level).
    Session,
    /// A window (`-w`).
    Window,
    /// A pane (`-p`).
    Pane,
}

impl OptionLevel {
    /// tmux's flag for the level; session options are the default and have none.
    fn flag(self) -> Option<&'static str> {
        match self {
            OptionLevel::Server => Some("-s"),
            OptionLevel::Session => None,
            OptionLevel::Window => Some("-w"),
            OptionLevel::Pane => Some("-p"),
        }
    }
}

/// Where an option command applies: already resolved to one object, or a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionPlace {
    /// Which objects the option belongs to.
    pub level: OptionLevel,
    /// `-g`: the global default of the level.
    pub global: bool,
    /// The `-t` id (`$N`, `@N` or `%N`), when the place is one object.
    pub target: Option<String>,
}

impl OptionPlace {
    /// Adds `-g`, the level's flag and `-t` to `command`.
    fn apply(&self, mut command: CommandBuilder) -> CommandBuilder {
        if self.global {
            command = command.flag("-g");
        }
        if let Some(flag) = self.level.flag() {
            command = command.flag(flag);
        }
        if let Some(target) = &self.target {
            command = command.opt("-t", target);
        }
        command
    }
}

/// Why an option operation failed.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    /// As any operation.
    #[error(transparent)]
    Op(OpError),
    /// tmux does not know the option at this level; the engine's error, as tmux put it.
    #[error("unknown option: {0}")]
    Unknown(EngineError),
}

impl From<EngineError> for OptionError {
    /// tmux's "invalid option" told apart from other failures.
    fn from(error: EngineError) -> Self {
        match &error {
            EngineError::Command(message) if message.contains("invalid option") => {
                OptionError::Unknown(error)
            }
            _ => OptionError::Op(error.into()),
        }
    }
}

impl From<QuoteError> for OptionError {
    fn from(error: QuoteError) -> Self {
        OptionError::Op(error.into())
    }
}

/// `show-options -v`: the value alone. For one object `-A` includes what it inherits, so the
/// answer is the value in effect there.
fn show_command(place: &OptionPlace, name: &str) -> Result<TmuxCommand, QuoteError> {
    let mut command = place.apply(TmuxCommand::new("show-options").flag("-v"));
    if place.target.is_some() {
        command = command.flag("-A");
    }
    command.end_of_options().arg(name).build()
}

/// `set-option`, or `set-option -u` when `value` is `None`.
fn set_command(
    place: &OptionPlace,
    name: &str,
    value: Option<&str>,
) -> Result<TmuxCommand, QuoteError> {
    place
        .apply(TmuxCommand::new("set-option"))
        .set_or_unset(name, value)
        .build()
}

/// `show-hooks`, of one hook or all.
fn hooks_command(place: &OptionPlace, name: Option<&str>) -> Result<TmuxCommand, QuoteError> {
    let mut command = place.apply(TmuxCommand::new("show-hooks"));
    if let Some(name) = name {
        command = command.end_of_options().arg(name);
    }
    command.build()
}

/// An option's value from `show-options -v` lines (a value may span lines); none when tmux
/// printed nothing.
fn parse_value(lines: &[Vec<u8>]) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    Some(
        lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// One command attached to a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// Hook name, e.g. `after-new-window`.
    pub name: String,
    /// Position in the hook's command list.
    pub index: u32,
    /// The tmux command it runs.
    pub command: String,
}

/// Parses `show-hooks` lines: `name[index] command` for a set hook, a bare `name` otherwise
/// (left out: it has no command).
fn parse_hooks(lines: &[Vec<u8>]) -> Vec<Hook> {
    lines
        .iter()
        .filter_map(|line| {
            let line = String::from_utf8_lossy(line);
            let (head, command) = line.split_once(' ')?;
            let (name, index) = head.strip_suffix(']')?.split_once('[')?;
            Some(Hook {
                name: name.to_owned(),
                index: index.parse().ok()?,
                command: command.to_owned(),
            })
        })
        .collect()
}

/// The options and hooks of one tmux server, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxOptions {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxOptions {
    /// The options and hooks of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The value of option `name` at `place`; none when it is unset there, including a user
    /// option (`@name`) never set anywhere, which tmux calls invalid.
    pub async fn show(
        &self,
        place: &OptionPlace,
        name: &str,
    ) -> Result<Option<String>, OptionError> {
        let command = show_command(place, name)?;
        match self
            .server
            .run(&self.caller, command)
            .await
            .map_err(OptionError::from)
        {
            Ok(lines) => Ok(parse_value(&lines)),
            Err(OptionError::Unknown(_)) if name.starts_with('@') => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Sets option `name` at `place` to `value`, or unsets it there when `value` is `None`.
    pub async fn set(
        &self,
        place: &OptionPlace,
        name: &str,
        value: Option<&str>,
    ) -> Result<(), OptionError> {
        let command = set_command(place, name, value)?;
        self.server.run(&self.caller, command).await?;
        Ok(())
    }

    /// The commands attached to hook `name` (or to every hook) at `place`.
    pub async fn hooks(
        &self,
        place: &OptionPlace,
        name: Option<&str>,
    ) -> Result<Vec<Hook>, OptionError> {
        let lines = self
            .server
            .run(&self.caller, hooks_command(place, name)?)
            .await
            .map_err(|error| OptionError::Op(error.into()))?;
        Ok(parse_hooks(&lines))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(level: OptionLevel, global: bool, target: Option<&str>) -> OptionPlace {
        OptionPlace {
            level,
            global,
            target: target.map(str::to_owned),
        }
    }

    #[test]
    fn levels_and_targets() {
        let server = place(OptionLevel::Server, false, None);
        assert_eq!(
            set_command(&server, "escape-time", Some("0"))
                .unwrap()
                .text(),
            "set-option -s -- 'escape-time' '0'"
        );
        let pane = place(OptionLevel::Pane, false, Some("%3"));
        assert_eq!(
            set_command(&pane, "@x", None).unwrap().text(),
            "set-option -p -t '%3' -u -- '@x'"
        );
        let global_window = place(OptionLevel::Window, true, None);
        assert_eq!(
            show_command(&global_window, "mode-keys").unwrap().text(),
            "show-options -v -g -w -- 'mode-keys'"
        );
        let session = place(OptionLevel::Session, false, Some("$1"));
        assert_eq!(
            show_command(&session, "status").unwrap().text(),
            "show-options -v -t '$1' -A -- 'status'"
        );
        assert_eq!(
            hooks_command(&session, None).unwrap().text(),
            "show-hooks -t '$1'"
        );
        assert_eq!(
            hooks_command(&global_window, Some("pane-exited"))
                .unwrap()
                .text(),
            "show-hooks -g -w -- 'pane-exited'"
        );
    }

    #[test]
    fn values_and_unknown_options() {
        assert_eq!(parse_value(&[]), None);
        assert_eq!(
            parse_value(&[b"a".to_vec(), b"b".to_vec()]).as_deref(),
            Some("a\nb")
        );
        assert!(matches!(
            OptionError::from(EngineError::Command("invalid option: nope".into())),
            OptionError::Unknown(_)
        ));
        assert!(matches!(
            OptionError::from(EngineError::Command("value is invalid".into())),
            OptionError::Op(OpError::Engine(_))
        ));
    }

    #[test]
    fn hook_lines_parse() {
        let lines: Vec<Vec<u8>> = [
            "after-bind-key",
            "after-new-window[0] display-message hi there",
            "pane-exited[3] run-shell 'x y'",
            "weird[x] y",
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
        assert_eq!(
            parse_hooks(&lines),
            [
                Hook {
                    name: "after-new-window".into(),
                    index: 0,
                    command: "display-message hi there".into()
                },
                Hook {
                    name: "pane-exited".into(),
                    index: 3,
                    command: "run-shell 'x y'".into()
                },
            ]
        );
    }
}
