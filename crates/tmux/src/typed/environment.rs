//! The tmux environment new panes get, global or a session's, as one caller: reading it and
//! setting or removing one variable.
//!
//! This module owns the command lines and parses `show-environment`; callers name the session
//! (or none for the global environment) and check names and access themselves. Running panes
//! keep the environment they started with: nothing here reaches them.

use std::collections::BTreeMap;

use crate::typed::op_error::OpError;
use crate::{Caller, CommandBuilder, EngineError, QuoteError, TmuxCommand, TmuxServer};

/// An environment as tmux lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Variables and their values.
    pub variables: BTreeMap<String, String>,
    /// Variables marked removed (new panes do not inherit them from the gateway's).
    pub removed: Vec<String>,
}

/// Whether `name` is a variable name: 1-128 letters, digits and `_`, not starting with a
/// digit (so it cannot hold the `=` that ends a name in tmux's listing).
pub fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= 128
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `name` with `-t session`, or `-g` for the global environment.
fn environment_command(name: &'static str, session: Option<&str>) -> CommandBuilder {
    let command = TmuxCommand::new(name);
    match session {
        Some(session) => command.opt("-t", session),
        None => command.flag("-g"),
    }
}

fn show_command(session: Option<&str>, name: Option<&str>) -> Result<TmuxCommand, QuoteError> {
    let mut command = environment_command("show-environment", session);
    if let Some(name) = name {
        command = command.end_of_options().arg(name);
    }
    command.build()
}

/// `set-environment`, or `set-environment -u` when `value` is `None`.
fn set_command(
    session: Option<&str>,
    name: &str,
    value: Option<&str>,
) -> Result<TmuxCommand, QuoteError> {
    environment_command("set-environment", session)
        .set_or_unset(name, value)
        .build()
}

/// Parses `show-environment` output: `NAME=value` lines, `-NAME` for removed variables; a
/// line of neither form continues the previous value (values may contain newlines).
fn parse_environment(lines: &[Vec<u8>]) -> Environment {
    let mut environment = Environment::default();
    let mut last: Option<String> = None;
    for line in lines {
        let line = String::from_utf8_lossy(line);
        if let Some((name, value)) = line.split_once('=')
            && is_env_name(name)
        {
            environment
                .variables
                .insert(name.to_owned(), value.to_owned());
            last = Some(name.to_owned());
        } else if let Some(name) = line.strip_prefix('-')
            && is_env_name(name)
        {
            environment.removed.push(name.to_owned());
            last = None;
        } else if let Some(value) = last
            .as_ref()
            .and_then(|name| environment.variables.get_mut(name))
        {
            value.push('\n');
            value.push_str(&line);
        }
    }
    environment
}

/// The environments of one tmux server, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxEnvironment {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxEnvironment {
    /// The environments of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The environment of `session` (`$N`), or the global one; only variable `name` when
    /// given (an empty environment when tmux has no such variable).
    pub async fn show(
        &self,
        session: Option<&str>,
        name: Option<&str>,
    ) -> Result<Environment, OpError> {
        let command = show_command(session, name)?;
        match self.server.run(&self.caller, command).await {
            Ok(lines) => Ok(parse_environment(&lines)),
            Err(EngineError::Command(message)) if message.contains("unknown variable") => {
                Ok(Environment::default())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Sets variable `name` in the environment of `session` (`$N`) or the global one, or
    /// removes it there when `value` is `None`.
    pub async fn set(
        &self,
        session: Option<&str>,
        name: &str,
        value: Option<&str>,
    ) -> Result<(), OpError> {
        let command = set_command(session, name, value)?;
        self.server.run(&self.caller, command).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(
            show_command(None, None).unwrap().text(),
            "show-environment -g"
        );
        assert_eq!(
            show_command(Some("$2"), Some("PATH")).unwrap().text(),
            "show-environment -t '$2' -- 'PATH'"
        );
        assert_eq!(
            set_command(None, "A", Some("-x y")).unwrap().text(),
            "set-environment -g -- 'A' '-x y'"
        );
        assert_eq!(
            set_command(Some("$2"), "A", None).unwrap().text(),
            "set-environment -t '$2' -u -- 'A'"
        );
    }

    #[test]
    fn environment_output_parses() {
        let lines: Vec<Vec<u8>> = ["A=1", "-SSH_AUTH_SOCK", "B=two", "lines", "C=", "junk line"]
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        let environment = parse_environment(&lines);
        assert_eq!(environment.variables["A"], "1");
        assert_eq!(environment.variables["B"], "two\nlines");
        assert_eq!(environment.variables["C"], "\njunk line");
        assert_eq!(environment.removed, ["SSH_AUTH_SOCK"]);
    }
}
