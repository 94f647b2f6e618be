//! One tmux server as a whole, as one caller: whether it answers, what it is (version, start
//! time, sessions), which process it is, and killing it.
//!
//! This module owns the command lines and parses what they print; callers get the engine's
//! own [`EngineError`], since whether a server runs at all is the answer here rather than a
//! failure (a server that is not running is reported by the connection, not by tmux).

use std::time::Duration;

use crate::ops;
use crate::typed::sessions::{self, Session};
use crate::wire::format::{row_format, split_row};
use crate::{BatchMode, Caller, CommandOutcome, EngineError, TmuxCommand, TmuxServer};

/// `-F` fields of the server's description.
const SERVER_FIELDS: [&str; 2] = ["version", "start_time"];

/// Tells one server process from the next on the same socket: a restarted server has another
/// pid or start time.
const IDENTITY_FORMAT: &str = "#{pid} #{start_time}";

/// What a running server says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    /// `#{version}`, e.g. `3.4`.
    pub version: String,
    /// Start time, seconds since the Unix epoch.
    pub started: Option<u64>,
}

/// A server's answer to [`TmuxServerOps::describe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// Its description, when it printed one that parses.
    pub about: Option<About>,
    /// Every session, when it answered both commands.
    pub sessions: Option<Vec<Session>>,
}

fn describe_commands() -> Result<Vec<TmuxCommand>, EngineError> {
    Ok(vec![
        TmuxCommand::new("display-message")
            .flag("-p")
            .arg(row_format(&SERVER_FIELDS))
            .build()?,
        sessions::list_command()?,
    ])
}

/// The description from the answers to [`describe_commands`]; sessions are taken only when
/// the server described itself (a second answer alone is not trusted to be this server's).
fn parse_description(outcomes: &[CommandOutcome]) -> Description {
    let [CommandOutcome::Ok(about), sessions] = outcomes else {
        return Description {
            about: None,
            sessions: None,
        };
    };
    let about = about
        .first()
        .and_then(|line| split_row(line, SERVER_FIELDS.len()))
        .map(|f| About {
            version: f[0].clone(),
            started: f[1].parse().ok(),
        });
    let sessions = match sessions {
        CommandOutcome::Ok(rows) => Some(sessions::parse_sessions(rows)),
        _ => None,
    };
    Description { about, sessions }
}

/// One tmux server as a whole, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxServerOps {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxServerOps {
    /// `server` as a whole, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Whether the server answers a trivial command within `within`.
    pub async fn probe(&self, within: Duration) -> Result<(), EngineError> {
        let probe = TmuxCommand::new("display-message")
            .flag("-p")
            .arg("ok")
            .build()?;
        let deadline = tokio::time::Instant::now() + within;
        self.server
            .run_batch(
                &self.caller,
                vec![probe],
                BatchMode::Independent,
                Some(deadline),
            )
            .await
            .map(|_| ())
    }

    /// The server's version, start time and sessions, asked in one write.
    pub async fn describe(&self) -> Result<Description, EngineError> {
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                describe_commands()?,
                BatchMode::Independent,
                None,
            )
            .await?;
        Ok(parse_description(&outcomes))
    }

    /// Which server process answers (pid and start time), if it printed that.
    pub async fn identity(&self) -> Result<Option<String>, EngineError> {
        let command = TmuxCommand::new("display-message")
            .flag("-p")
            .trusted_format(IDENTITY_FORMAT)
            .build()?;
        let lines = self.server.run(&self.caller, command).await?;
        Ok(lines
            .first()
            .map(|l| String::from_utf8_lossy(l).into_owned()))
    }

    /// The argv that starts the server's default shell with shell integration; `None` when a
    /// `default-command` is set, the shell has no script, or tmux does not say (tmux then
    /// starts a new pane as usual).
    pub async fn integrated_shell(&self) -> Option<Vec<String>> {
        let command = ops::shell::pane_start().build().ok()?;
        let rows = self.server.run(&self.caller, command).await.ok()?;
        ops::shell::integrated_launch(&rows)
    }

    /// Tells the server to exit (it does so asynchronously: see [`Self::identity`]).
    pub async fn kill(&self) -> Result<(), EngineError> {
        let kill = TmuxCommand::new("kill-server").build()?;
        match self.server.run(&self.caller, kill).await {
            // The server may close the connection before its reply arrives.
            Ok(_) | Err(EngineError::ConnectionLost { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    #[test]
    fn commands_ask_for_the_fields() {
        let lines: Vec<String> = describe_commands()
            .unwrap()
            .iter()
            .map(|c| c.text())
            .collect();
        assert!(lines[0].starts_with("display-message -p "), "{}", lines[0]);
        assert!(lines[0].contains("version") && lines[0].contains("start_time"));
        assert!(lines[1].starts_with("list-sessions -F "), "{}", lines[1]);
    }

    #[test]
    fn descriptions_parse() {
        let about = CommandOutcome::Ok(vec![encode_row(&["3.4", "1700000000"])]);
        let described = parse_description(&[about.clone(), CommandOutcome::Ok(Vec::new())]);
        assert_eq!(
            described.about,
            Some(About {
                version: "3.4".into(),
                started: Some(1_700_000_000)
            })
        );
        assert_eq!(described.sessions, Some(Vec::new()));
        let unlisted = parse_description(&[about, CommandOutcome::Failed("x".into())]);
        assert!(unlisted.about.is_some() && unlisted.sessions.is_none());
        let nothing = parse_description(&[
            CommandOutcome::Failed("x".into()),
            CommandOutcome::Ok(Vec::new()),
        ]);
        assert_eq!(
            nothing,
            Description {
                about: None,
                sessions: None
            }
        );
        let garbled = parse_description(&[
            CommandOutcome::Ok(vec![b"junk".to_vec()]),
            CommandOutcome::Ok(Vec::new()),
        ]);
        assert!(garbled.about.is_none() && garbled.sessions.is_some());
    }
}
