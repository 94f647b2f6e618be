//! The sessions of one tmux server, as one caller: listing them (with the clients attached to
//! each), creating one (starting the server when none runs), renaming and killing.
//!
//! This module owns the command lines and the `-F` rows they print; callers get [`Session`]
//! values and a [`SessionError`] that says what happened, not what to tell anyone about it.
//! Who may see or name a session is the caller's business: rows come back unfiltered.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use crate::client::spawn::TERM_MARKER_PREFIX;
use crate::client::start::{argv_value, run_starting_server};
use crate::ops;
use crate::output::watch_session::is_watch_session;
use crate::typed::op_error::{OpError, wraps_op_error};
use crate::wire::command::escape_format;
use crate::wire::format::{row_format, split_row};
use crate::wire::target::SessionName;
use crate::{
    BatchMode, Caller, CommandOutcome, ConnectError, EngineError, EngineSettings, QuoteError,
    SessionId, TmuxCommand, TmuxEndpoint, TmuxServer,
};

/// `-F` fields of a session row; the name (free text) last.
const SESSION_FIELDS: [&str; 8] = [
    "session_id",
    "session_windows",
    "session_attached",
    "session_created",
    "session_activity",
    "window_id",
    "pane_id",
    "session_name",
];

/// `-F` fields of a client row.
const CLIENT_FIELDS: [&str; 2] = ["session_id", "client_termname"];

/// How long [`TmuxSessions::create`] waits for the engine to reach a server it just started.
const ENGINE_WARMUP: Duration = Duration::from_secs(3);

/// One tmux session, as a session row reports it (and as tools answer it).
// No more field docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Session {
    /// Session id (`$N`): the stable way to target it.
    pub id: SessionId,
    pub name: String,
    /// Number of windows.
    pub windows: u32,
    /// Clients attached to it: every client in a bare row, muxgate's own left out by
    /// [`TmuxSessions::list`].
    pub attached_clients: u32,
    /// Creation time, seconds since the Unix epoch (with the id, what names a session across
    /// a server's restarts).
    pub created: u64,
    /// Last activity in any of its panes, seconds since the Unix epoch.
    pub last_activity: u64,
    /// Its current window (`@N`).
    pub active_window_id: String,
    /// The active pane of its current window (`%N`).
    pub active_pane_id: String,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// As any operation.
    #[error(transparent)]
    Op(#[from] OpError),
    /// tmux refused a name that another session holds; its message.
    #[error("tmux: {0}")]
    NameInUse(String),
    /// tmux refused one of the listing commands; its message.
    #[error("tmux refused to list sessions: {0}")]
    ListRefused(String),
    /// The session was not created: tmux's (or the starting subprocess's) message.
    #[error("could not create the session: {0}")]
    NotCreated(String),
}

wraps_op_error!(SessionError);

/// The command that lists every session of the server, one row each (see [`parse_sessions`]).
pub(crate) fn list_command() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-sessions")
        .opt("-F", row_format(&SESSION_FIELDS))
        .build()
}

/// The sessions in an answer of [`list_command`], rows that do not parse left out.
pub(crate) fn parse_sessions(rows: &[Vec<u8>]) -> Vec<Session> {
    rows.iter()
        .filter_map(|row| parse_session_row(row))
        .collect()
}

/// Parses one row printed with [`SESSION_FIELDS`]. A row without a creation time is dropped:
/// the id alone does not name a session across server restarts.
fn parse_session_row(line: &[u8]) -> Option<Session> {
    let f = split_row(line, SESSION_FIELDS.len())?;
    Some(Session {
        id: f[0].parse().ok()?,
        windows: f[1].parse().unwrap_or(0),
        attached_clients: f[2].parse().unwrap_or(0),
        created: f[3].parse().ok()?,
        last_activity: f[4].parse().unwrap_or(0),
        active_window_id: f[5].clone(),
        active_pane_id: f[6].clone(),
        name: f[7].clone(),
    })
}

/// Clients per session id, leaving out muxgate's own control clients (recognised by their
/// `TERM` marker).
fn foreign_clients_by_session(rows: &[Vec<u8>]) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for row in rows {
        if let Some(f) = split_row(row, CLIENT_FIELDS.len())
            && !f[1].starts_with(TERM_MARKER_PREFIX)
        {
            *counts.entry(f[0].clone()).or_insert(0) += 1;
        }
    }
    counts
}

/// A session to create: values already checked by the caller.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The session's name.
    pub name: SessionName,
    /// Its first window's name.
    pub window_name: Option<String>,
    /// Its first pane's directory (taken literally, never as a format).
    pub start_directory: Option<String>,
    /// Width in cells (`-x`).
    pub width: Option<u32>,
    /// Height in cells (`-y`).
    pub height: Option<u32>,
    /// `NAME`, `value` pairs for its panes.
    pub environment: Vec<(String, String)>,
}

impl NewSession {
    /// The control-mode command that creates the session detached and prints its row;
    /// `launch` is the argv of its first program (default: tmux's default shell).
    fn command(&self, launch: Option<&[String]>) -> Result<TmuxCommand, QuoteError> {
        let mut create = TmuxCommand::new("new-session")
            .flag("-d")
            .flag("-E")
            .flag("-P")
            .opt("-F", row_format(&SESSION_FIELDS))
            .opt("-s", self.name.as_str());
        if let Some(window_name) = &self.window_name {
            create = create.opt("-n", window_name);
        }
        if let Some(dir) = &self.start_directory {
            create = create.format_opt("-c", dir);
        }
        if let Some(width) = self.width {
            create = create.opt("-x", width.to_string());
        }
        if let Some(height) = self.height {
            create = create.opt("-y", height.to_string());
        }
        for (name, value) in &self.environment {
            create = create.opt("-e", format!("{name}={value}"));
        }
        if let Some(argv) = launch {
            create = ops::shell::with_launch(create, argv);
        }
        create.build()
    }

    /// The same command as argv for a `tmux` subprocess (which starts the server). No launch
    /// argv: the server's default shell is only known once it runs.
    fn argv(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "new-session".into(),
            "-d".into(),
            "-E".into(),
            "-P".into(),
            "-F".into(),
            row_format(&SESSION_FIELDS).into(),
            "-s".into(),
            argv_value(self.name.as_str()),
        ];
        if let Some(window_name) = &self.window_name {
            args.extend(["-n".into(), argv_value(window_name)]);
        }
        if let Some(dir) = &self.start_directory {
            let escaped = String::from_utf8_lossy(&escape_format(dir.as_bytes())).into_owned();
            args.extend(["-c".into(), argv_value(&escaped)]);
        }
        if let Some(width) = self.width {
            args.extend(["-x".into(), width.to_string().into()]);
        }
        if let Some(height) = self.height {
            args.extend(["-y".into(), height.to_string().into()]);
        }
        for (name, value) in &self.environment {
            args.extend(["-e".into(), argv_value(&format!("{name}={value}"))]);
        }
        args
    }
}

/// A session [`TmuxSessions::create`] made.
#[derive(Debug, Clone)]
pub struct Created {
    /// The new session, as its row reports it.
    pub session: Session,
    /// No server was running: this creation started it (its first shell is tmux's default,
    /// see [`TmuxSessions::respawn_first_pane`]).
    pub started_server: bool,
}

/// The sessions of one tmux server, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxSessions {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxSessions {
    /// The sessions of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Every session of the server, with `attached_clients` not counting muxgate's own control
    /// clients (one round trip: sessions and clients). A server with no session, or none
    /// running, has none.
    pub async fn list(&self) -> Result<Vec<Session>, SessionError> {
        let clients = TmuxCommand::new("list-clients")
            .opt("-F", row_format(&CLIENT_FIELDS))
            .build()?;
        let outcomes = match self
            .server
            .run_batch(
                &self.caller,
                vec![list_command()?, clients],
                BatchMode::Independent,
                None,
            )
            .await
        {
            Ok(outcomes) => outcomes,
            // A server with no session (an empty workspace) lists none.
            Err(EngineError::Unavailable {
                cause: ConnectError::NoSessions { .. },
                ..
            }) => return Ok(Vec::new()),
            // No server running: none, once the socket itself says so. The engine's verdict
            // may date from before a server (re)started, while it waits to reconnect; then
            // this is the "not reachable yet" error, to retry.
            Err(EngineError::Unavailable {
                cause: ConnectError::NoServer { .. },
                ..
            }) if nobody_listens(self.server.endpoint()).await => return Ok(Vec::new()),
            Err(error) => return Err(error.into()),
        };
        let (sessions, clients) = match outcomes.as_slice() {
            [CommandOutcome::Ok(sessions), CommandOutcome::Ok(clients)] => (sessions, clients),
            [CommandOutcome::Failed(message), ..] | [_, CommandOutcome::Failed(message)] => {
                return Err(SessionError::ListRefused(message.clone()));
            }
            _ => return Err(OpError::Unanswered.into()),
        };
        let attached = foreign_clients_by_session(clients);
        Ok(parse_sessions(sessions)
            .into_iter()
            .map(|session| Session {
                attached_clients: attached.get(&session.id.to_string()).copied().unwrap_or(0),
                ..session
            })
            .collect())
    }

    /// How many sessions the server holds, whoever made them, leaving out the watch session;
    /// none when no server runs.
    pub async fn count(&self) -> Result<usize, SessionError> {
        let list = TmuxCommand::new("list-sessions")
            .opt("-F", row_format(&["session_name"]))
            .build()?;
        match self.server.run(&self.caller, list).await {
            Ok(rows) => Ok(rows
                .iter()
                .filter_map(|row| split_row(row, 1))
                .filter(|name| !is_watch_session(&name[0]))
                .count()),
            Err(error) if server_absent(&error) => Ok(0),
            Err(error) => Err(error.into()),
        }
    }

    /// Creates a detached session running `launch` (default: tmux's default shell). When no
    /// server runs, starts it with the session (one subprocess, without `launch`) and waits
    /// until the engine reaches it, so the caller's next command works.
    pub async fn create(
        &self,
        spec: &NewSession,
        launch: Option<&[String]>,
        settings: &EngineSettings,
    ) -> Result<Created, SessionError> {
        let command = spec.command(launch)?;
        match self.server.run(&self.caller, command).await {
            Ok(rows) => Ok(Created {
                session: created_session(rows.iter().map(Vec::as_slice))?,
                started_server: false,
            }),
            Err(error) if server_absent(&error) => Ok(Created {
                session: self.start_server_with(spec, settings).await?,
                started_server: true,
            }),
            Err(EngineError::Command(message)) if is_duplicate(&message) => {
                Err(SessionError::NameInUse(message))
            }
            Err(EngineError::Command(message)) => Err(SessionError::NotCreated(message)),
            Err(error) => Err(error.into()),
        }
    }

    async fn start_server_with(
        &self,
        spec: &NewSession,
        settings: &EngineSettings,
    ) -> Result<Session, SessionError> {
        let stdout = run_starting_server(
            &settings.tmux_bin,
            self.server.endpoint(),
            spec.argv(),
            settings.connect_timeout,
        )
        .await
        .map_err(|e| SessionError::NotCreated(e.to_string()))?;
        let session = created_session(stdout.lines().map(str::as_bytes))?;
        let deadline = tokio::time::Instant::now() + ENGINE_WARMUP + settings.reconnect_backoff;
        while tokio::time::Instant::now() < deadline {
            let probe = TmuxCommand::new("display-message")
                .flag("-p")
                .arg("ok")
                .build()?;
            match self.server.run(&self.caller, probe).await {
                Err(EngineError::Unavailable { .. }) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => break,
            }
        }
        Ok(session)
    }

    /// Replaces the program of `session`'s current pane with `argv` (killing what runs
    /// there): for the first shell of a server [`Self::create`] started, which began before
    /// the server's default shell could be asked for.
    pub async fn respawn_first_pane(
        &self,
        session: SessionId,
        argv: &[String],
    ) -> Result<(), SessionError> {
        let respawn = TmuxCommand::new("respawn-pane").flag("-k").target(session);
        let command = ops::shell::with_launch(respawn, argv).build()?;
        self.server.run(&self.caller, command).await?;
        Ok(())
    }

    /// Kills `session`: every window, pane and program in it.
    pub async fn kill(&self, session: SessionId) -> Result<(), SessionError> {
        let kill = TmuxCommand::new("kill-session").target(session).build()?;
        self.server.run(&self.caller, kill).await?;
        Ok(())
    }

    /// Renames `session`; [`SessionError::NameInUse`] when another session holds the name.
    pub async fn rename(&self, session: SessionId, name: &SessionName) -> Result<(), SessionError> {
        let rename = TmuxCommand::new("rename-session")
            .target(session)
            .end_of_options()
            .arg(name.as_str())
            .build()?;
        match self.server.run(&self.caller, rename).await {
            Ok(_) => Ok(()),
            Err(EngineError::Command(message)) if is_duplicate(&message) => {
                Err(SessionError::NameInUse(message))
            }
            Err(error) => Err(error.into()),
        }
    }
}

/// The new session's row, printed by `new-session -P`.
fn created_session<'a>(rows: impl IntoIterator<Item = &'a [u8]>) -> Result<Session, SessionError> {
    rows.into_iter()
        .find_map(parse_session_row)
        .ok_or_else(|| SessionError::NotCreated("tmux did not report the new session".into()))
}

/// tmux's refusal of a name that is in use.
fn is_duplicate(message: &str) -> bool {
    message.contains("duplicate session")
}

/// Whether an engine failure means that no server (or no session) exists to attach to.
fn server_absent(error: &EngineError) -> bool {
    matches!(
        error,
        EngineError::Unavailable {
            cause: ConnectError::NoServer { .. } | ConnectError::NoSessions { .. },
            ..
        }
    )
}

/// Whether no server listens on the endpoint's socket (it is missing, or refuses). Unknown
/// for a sandboxed server (its socket is not this process's to probe): then `false`.
async fn nobody_listens(endpoint: &TmuxEndpoint) -> bool {
    let Some(path) = endpoint.local_socket_path() else {
        return false;
    };
    match tokio::net::UnixStream::connect(&path).await {
        Ok(_) => false,
        Err(error) => matches!(
            error.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    fn row(fields: &[&str]) -> Vec<u8> {
        encode_row(fields)
    }

    #[test]
    fn rows_parse_with_the_name_last() {
        let line = row(&["$2", "3", "1", "100", "200", "@4", "%7", "build|x"]);
        let parsed = parse_session_row(&line).unwrap();
        assert_eq!(parsed.id, SessionId(2));
        assert_eq!(parsed.windows, 3);
        assert_eq!(parsed.created, 100);
        assert_eq!(parsed.active_pane_id, "%7");
        // A separator inside the name cannot shift the other fields.
        assert_eq!(parsed.name, "build|x");
        assert!(parse_session_row(b"$0|1").is_none());
        assert!(
            parse_session_row(&row(&["$0", "1", "0", "x", "1", "@0", "%0", "m"])).is_none(),
            "no creation time, no ownership key"
        );
        let rows = [line, b"junk".to_vec()];
        assert_eq!(
            parse_sessions(&rows).len(),
            1,
            "rows that do not parse are left out"
        );
    }

    #[test]
    fn the_gateways_own_clients_are_not_counted() {
        let rows = [
            row(&["$1", "xterm-256color"]),
            row(&["$1", "muxgate-123"]),
            row(&["$2", "muxgate-9"]),
            row(&["$1", "screen"]),
        ];
        let counts = foreign_clients_by_session(&rows);
        assert_eq!(counts.get("$1"), Some(&2));
        assert_eq!(counts.get("$2"), None);
    }

    #[test]
    fn the_created_row_or_why_not() {
        let line = row(&["$5", "1", "0", "100", "100", "@6", "%9", "new"]);
        let session = created_session([b"".as_slice(), line.as_slice()]).unwrap();
        assert_eq!(session.id, SessionId(5));
        assert!(matches!(
            created_session([b"nothing".as_slice()]),
            Err(SessionError::NotCreated(message)) if message == "tmux did not report the new session"
        ));
        assert!(is_duplicate("duplicate session: build"));
        assert!(!is_duplicate("can't find session: build"));
    }

    fn spec() -> NewSession {
        NewSession {
            name: SessionName::parse("build").unwrap(),
            window_name: Some("edit;".into()),
            start_directory: Some("/".into()),
            width: Some(100),
            height: None,
            environment: vec![("A".into(), "1;".into())],
        }
    }

    #[test]
    fn creation_is_one_command_with_every_value_quoted() {
        let spec = spec();
        let line = spec.command(None).unwrap().text();
        assert!(line.starts_with("new-session -d -E -P -F "), "{line}");
        assert!(
            line.ends_with(" -s 'build' -n 'edit;' -c '/' -x '100' -e 'A=1;'"),
            "{line}"
        );
        let launch = ["/bin/zsh".to_owned(), "-l".to_owned()];
        let integrated = spec.command(Some(&launch)).unwrap();
        assert!(
            integrated
                .as_bytes()
                .ends_with(b" -e 'A=1;' -- '/bin/zsh' '-l'"),
            "the shell comes after every option"
        );
        assert!(!line.contains("@muxgate"), "no owner tag in tmux: {line}");
    }

    #[test]
    fn the_starting_argv_is_one_command() {
        let argv: Vec<String> = spec()
            .argv()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert!(argv.contains(&"edit\\;".to_owned()));
        assert!(argv.contains(&"A=1\\;".to_owned()));
        assert!(!argv.iter().any(|a| a == ";"), "one command: {argv:?}");
    }
}
