//! How a `zellij_*` tool reaches Zellij on a caller's behalf: which configured server, which
//! session (the call's, or the server's default), whether the caller may see it, how long a
//! wait may last, and turning backend failures into errors a model can act on.
//!
//! The same access rules as for tmux apply ([`crate::auth::policy`]): server names against the
//! caller's server patterns, session names against its session patterns. Zellij sessions carry
//! no owner tag, so they are all unowned. A session the caller may not see is reported exactly
//! like a missing one.
//!
//! Not here: the scope check (tiers) and rate limits, which [`super::call`] applies to every
//! call before a tool runs; the backend itself ([`muxgate_zellij`]).

use muxgate_mux::error::BackendError;
use muxgate_mux::lines::excerpt;

use crate::auth::{SessionRef, can_see_session, check_server};
use crate::limits::Limits;
use muxgate_zellij::backend::ZellijBackend;
use muxgate_zellij::error::ZellijError;
use muxgate_zellij::ids::{PaneId, SessionName, TabId};
use muxgate_zellij::panes::ZellijPanes;
use muxgate_zellij::servers::ZellijServer;

use super::McpServer;
use super::budget::CallBudget;
use super::call::CallContext;
use super::error::{ToolError, ToolErrorKind};

/// One call's access to one configured Zellij server.
pub(crate) struct ZellijAccess<'a> {
    pub server: &'a ZellijServer,
    pub backend: &'a ZellijBackend,
    pub call: &'a CallContext,
    pub limits: &'a Limits,
}

impl McpServer {
    /// The configured Zellij server `name` (or, when `None`, the only one the caller may use),
    /// with its backend opened.
    pub(crate) async fn zellij_access<'a>(
        &'a self,
        call: &'a CallContext,
        name: Option<&str>,
    ) -> Result<ZellijAccess<'a>, ToolError> {
        let state = self.state();
        let visible: Vec<&ZellijServer> = state
            .zellij
            .iter()
            .filter(|s| check_server(&call.principal, s.name()).is_ok())
            .collect();
        let server = match name {
            Some(name) => visible.iter().find(|s| s.name() == name).ok_or_else(|| {
                ToolError::not_found(
                    format!("no Zellij server named {:?}", excerpt(name)),
                    "call list_servers for the names you may use",
                )
            })?,
            None => match visible.as_slice() {
                [only] => only,
                [] => {
                    return Err(ToolError::new(
                        ToolErrorKind::Unavailable,
                        "this gateway drives no Zellij server you may use",
                        "ask the operator to add a [zellij.servers.<name>] table, or use the tmux tools",
                    ));
                }
                several => {
                    let names: Vec<&str> = several.iter().map(|s| s.name()).collect();
                    return Err(ToolError::invalid_arguments(
                        "this gateway drives several Zellij servers: pass `server`",
                        format!("use one of: {}", names.join(", ")),
                    ));
                }
            },
        };
        let backend = server
            .backend()
            .await
            .map_err(|e| zellij_error(server.name(), e))?;
        Ok(ZellijAccess {
            server,
            backend,
            call,
            limits: &state.limits,
        })
    }
}

impl ZellijAccess<'_> {
    pub(crate) fn server_name(&self) -> &str {
        self.server.name()
    }

    /// Whether the caller may see a session (for filtering listings).
    pub(crate) fn can_see(&self, session: &SessionName) -> bool {
        can_see_session(
            &self.call.principal,
            self.server_name(),
            SessionRef {
                name: session.as_str(),
                owner: None,
            },
        )
    }

    /// The session and pane a shared tool's `target` names (`terminal_N` in the configured
    /// session, or `SESSION:terminal_N`), under the same session rules as [`Self::session`].
    pub(crate) fn pane_target(&self, target: &str) -> Result<(SessionName, PaneId), ToolError> {
        let (session, pane) = parse_target(target)?;
        Ok((self.session(session)?, pane))
    }

    /// The session and tab a shared window tool's `target` names (`N` in the configured
    /// session, or `SESSION:N`), under the same session rules as [`Self::session`].
    pub(crate) fn tab_target(&self, target: &str) -> Result<(SessionName, TabId), ToolError> {
        let (session, tab) = parse_tab_target(target)?;
        Ok((self.session(session)?, tab))
    }

    /// The session a call acts on: `given`, else the server's configured session. A session the
    /// caller may not see reads like a missing one. Existence is checked by each operation.
    pub(crate) fn session(&self, given: Option<&str>) -> Result<SessionName, ToolError> {
        let session = match given {
            Some(name) => SessionName::new(name).map_err(|e| {
                ToolError::invalid_arguments(
                    e.to_string(),
                    "call list_sessions and pass a name from its result",
                )
            })?,
            None => self.server.default_session().cloned().ok_or_else(|| {
                ToolError::invalid_arguments(
                    format!(
                        "Zellij server {:?} has no default session: pass `session`",
                        self.server_name()
                    ),
                    "call list_sessions and pass a session name",
                )
            })?,
        };
        if !self.can_see(&session) {
            return Err(zellij_error(
                self.server_name(),
                ZellijError::NoSuchSession { session },
            ));
        }
        Ok(session)
    }

    /// The backend-neutral pane operations on `session`.
    pub(crate) fn panes(&self, session: &SessionName) -> ZellijPanes {
        ZellijPanes::new(self.backend.clone(), session.clone())
    }

    /// Maps a backend failure for this server.
    pub(crate) fn error(&self, error: ZellijError) -> ToolError {
        zellij_error(self.server_name(), error)
    }

    /// What the caller may still spend in this call (waits, answer text).
    pub(crate) fn budget(&self) -> CallBudget<'_> {
        CallBudget::new(self.limits, self.call)
    }
}

/// Parses a pane id argument (`terminal_N`, `plugin_N`, or `N` for `terminal_N`).
pub(crate) fn parse_pane(text: &str) -> Result<PaneId, ToolError> {
    text.parse().map_err(|e: muxgate_zellij::ids::InvalidId| {
        ToolError::invalid_arguments(
            e.to_string(),
            "call list_panes and pass a pane id from its result",
        )
    })
}

/// Parses the `target` of a tool both backends serve: `terminal_N` (or `N`) in the server's
/// default session, or `SESSION:terminal_N`. Returns the session, when named, and the pane.
pub(crate) fn parse_target(text: &str) -> Result<(Option<&str>, PaneId), ToolError> {
    match text.rsplit_once(':') {
        Some((session, pane)) => Ok((Some(session), parse_pane(pane)?)),
        None => Ok((None, parse_pane(text)?)),
    }
}

/// Parses a tab id argument (a tab's stable `tab_id` from list_windows, not its position).
pub(crate) fn parse_tab(text: &str) -> Result<TabId, ToolError> {
    text.parse().map_err(|e: muxgate_zellij::ids::InvalidId| {
        ToolError::invalid_arguments(
            e.to_string(),
            "call list_windows and pass a tab_id from its result",
        )
    })
}

/// Parses the window `target` of a tool both backends serve, on Zellij a tab: `N` (its
/// `tab_id`) in the server's default session, or `SESSION:N`.
pub(crate) fn parse_tab_target(text: &str) -> Result<(Option<&str>, TabId), ToolError> {
    match text.rsplit_once(':') {
        Some((session, tab)) => Ok((Some(session), parse_tab(tab)?)),
        None => Ok((None, parse_tab(text)?)),
    }
}

/// Turns a backend failure into an error a model can act on: its kind as the backend names
/// it, its message, and what to do next.
pub(crate) fn zellij_error(server: &str, error: ZellijError) -> ToolError {
    ToolError::new(
        error.kind().into(),
        error.to_string(),
        suggestion(server, &error),
    )
}

/// What to do about a backend failure.
fn suggestion(server: &str, error: &ZellijError) -> String {
    use ZellijError as E;
    match error {
        E::BatchStep { source, .. } => suggestion(server, source),
        E::NotInstalled { .. } | E::UnsupportedVersion { .. } => {
            "ask the operator to install zellij 0.44 or newer (scripts/install-zellij)".to_owned()
        }
        E::Unsupported(_) => "omit the option for a Zellij server, or use a tmux server".to_owned(),
        E::InvalidId(_) | E::InvalidArgument { .. } => {
            "fix the named argument as the message says and call again".to_owned()
        }
        E::NoSuchSession { .. } => "call list_sessions to see the sessions you may use".to_owned(),
        E::NoSuchPane { .. } => "call list_panes to see valid pane ids".to_owned(),
        E::NoSuchTab { .. } => {
            "call list_windows to see valid tab ids (ids, not positions)".to_owned()
        }
        E::SessionExists { .. } => "pick another session name".to_owned(),
        E::WrongPaneKind { .. } => {
            "call list_panes and pick a terminal pane (terminal_N) whose shell is running"
                .to_owned()
        }
        E::WouldEndSession { .. } => {
            "open another tab or pane first (create_window / zellij_new_pane) if you need this one gone"
                .to_owned()
        }
        E::CommandFailed { .. } | E::NoEffect { .. } | E::WatchEnded { .. } => {
            "check the session's state (list_panes / list_windows) before retrying".to_owned()
        }
        E::Timeout { .. } => "the message says what is still running: read it (capture_pane), \
             interrupt it (send_keys [\"C-c\"]) or close it (kill_pane), or retry with a longer \
             timeout"
            .to_owned(),
        E::Busy { .. } => {
            "wait for your other calls on this session to finish, then retry".to_owned()
        }
        E::OutputTooLarge { .. } => {
            "read the visible part only (scope \"visible\"), or clear the scrollback".to_owned()
        }
        E::Parse(_) => {
            "retry once; if it persists the Zellij version may not be supported".to_owned()
        }
        E::Io { .. } => format!("Zellij server {server:?} could not be reached; retry shortly"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_parsed_with_a_hint() {
        assert_eq!(parse_pane("terminal_2").unwrap(), PaneId::Terminal(2));
        let err = parse_pane("%3").unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        assert!(err.message.contains("%3"), "{}", err.message);
        assert!(err.suggestion.contains("list_panes"));
        assert_eq!(parse_tab("4").unwrap(), TabId(4));
        assert_eq!(parse_tab_target("4").unwrap(), (None, TabId(4)));
        assert_eq!(parse_tab_target("w:1:7").unwrap(), (Some("w:1"), TabId(7)));
        assert!(parse_tab_target("work:@2").is_err());
        assert!(
            parse_tab("@4")
                .unwrap_err()
                .suggestion
                .contains("list_windows")
        );
    }

    #[test]
    fn a_target_names_a_pane_and_maybe_its_session() {
        assert_eq!(
            parse_target("terminal_2").unwrap(),
            (None, PaneId::Terminal(2))
        );
        assert_eq!(parse_target("7").unwrap(), (None, PaneId::Terminal(7)));
        assert_eq!(
            parse_target("work:terminal_0").unwrap(),
            (Some("work"), PaneId::Terminal(0))
        );
        // The pane id has no colon, so a session name may hold one.
        assert_eq!(
            parse_target("a:b:terminal_1").unwrap(),
            (Some("a:b"), PaneId::Terminal(1))
        );
        for bad in ["%3", "work:", "work:@1", ""] {
            let err = parse_target(bad).unwrap_err();
            assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{bad}");
        }
    }

    #[test]
    fn errors_keep_their_kind() {
        let session = SessionName::new("s").unwrap();
        let err = zellij_error(
            "dev",
            ZellijError::NoSuchPane {
                session: session.clone(),
                pane: PaneId::Terminal(9),
            },
        );
        assert_eq!(err.kind, ToolErrorKind::NotFound);
        assert_eq!(err.message, "no pane terminal_9 in session s");
        let err = zellij_error(
            "dev",
            ZellijError::WouldEndSession {
                session,
                what: "tab",
            },
        );
        assert_eq!(err.kind, ToolErrorKind::Conflict);
    }
}
