//! Self-protection: when the gateway itself runs inside tmux, no tool may kill or respawn the
//! server, session, window or pane it runs in.
//!
//! Where muxgate runs comes from its own environment at start (`TMUX` =
//! `<socket path>,<server pid>,<session index>` and `TMUX_PANE` = `%N`). A configured server is
//! "ours" when its socket has the same real path as ours (symlinks and `..` resolved); then the
//! tool asks tmux which windows and sessions hold our pane (one `list-panes -a`) and refuses a
//! kill that would take it down. If our socket cannot be resolved we assume the worst.
//!
//! [`SelfLocation::refusal`] is the pure decision; [`SelfLocation::check`] does the two
//! lookups ([`muxgate_tmux::typed::placement`]) through the caller's [`TmuxAccess`].

use std::path::{Path, PathBuf};

use super::access::TmuxAccess;
use super::error::{ToolError, ToolErrorKind};
use super::tools::support::op_failure;
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::typed::placement::Placement;
use muxgate_tmux::{PaneId, SessionId, WindowId};

/// Where this gateway process runs, if inside tmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfLocation {
    /// Real path of the tmux socket we run under (`None`: present but unresolvable).
    pub socket: Option<PathBuf>,
    pub pane: PaneId,
}

/// What a destructive tool is about to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    Server,
    Session(SessionId),
    Window(WindowId),
    /// Kill or respawn.
    Pane(PaneId),
}

impl SelfLocation {
    /// From `TMUX` and `TMUX_PANE` as given (pass the process environment at start).
    pub fn from_env(tmux: Option<&str>, tmux_pane: Option<&str>) -> Option<Self> {
        let pane = tmux_pane?.parse().ok()?;
        let socket_path = tmux?.split(',').next().filter(|p| !p.is_empty())?;
        Some(Self {
            socket: std::fs::canonicalize(socket_path).ok(),
            pane,
        })
    }

    /// Whether a server whose socket is at `socket` is the one we run under.
    pub fn is_our_server(&self, socket: &Path) -> bool {
        match (&self.socket, std::fs::canonicalize(socket)) {
            (Some(ours), Ok(theirs)) => *ours == theirs,
            // Cannot tell: protect.
            _ => true,
        }
    }

    /// Why `kill` must be refused on our own server, given where our pane is.
    pub fn refusal(&self, kill: Kill, placement: &Placement) -> Option<String> {
        match kill {
            Kill::Server => Some("the tmux server muxgate itself runs in".to_owned()),
            Kill::Session(s) if placement.sessions.contains(&s) => Some(format!(
                "session {s}, which holds muxgate's own pane {}",
                self.pane
            )),
            Kill::Window(w) if placement.windows.contains(&w) => Some(format!(
                "window {w}, which holds muxgate's own pane {}",
                self.pane
            )),
            Kill::Pane(p) if p == self.pane => Some(format!("pane {p}, where muxgate itself runs")),
            _ => None,
        }
    }

    /// Refuses `kill` on `tmux`'s server if it would take down the gateway.
    pub async fn check(&self, tmux: &TmuxAccess<'_>, kill: Kill) -> Result<(), ToolError> {
        let place = tmux.placement();
        let path = place
            .socket_path()
            .await
            .map_err(|e| lookup_error(tmux, e, "call list_servers"))?;
        if !path.is_some_and(|p| self.is_our_server(Path::new(&p))) {
            return Ok(());
        }
        let placement = place
            .of(self.pane)
            .await
            .map_err(|e| lookup_error(tmux, e, "call list_panes"))?;
        match self.refusal(kill, &placement) {
            Some(what) => Err(ToolError::new(
                ToolErrorKind::Forbidden,
                format!("refused: this would kill {what}"),
                "target another object; the gateway never kills the tmux object it runs in",
            )),
            None => Ok(()),
        }
    }
}

/// A failed lookup as an error for the model: engine failures suggest `list_hint`.
fn lookup_error(tmux: &TmuxAccess<'_>, error: OpError, list_hint: &str) -> ToolError {
    match error {
        OpError::Quote(error) => ToolError::new(ToolErrorKind::Internal, error.to_string(), ""),
        error => op_failure(tmux.server_name(), error, list_hint),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> SelfLocation {
        SelfLocation {
            socket: Some("/tmp/tmux-0/default".into()),
            pane: PaneId(4),
        }
    }

    #[test]
    fn reads_the_environment() {
        assert_eq!(SelfLocation::from_env(None, Some("%4")), None);
        assert_eq!(SelfLocation::from_env(Some("/x,1,0"), None), None);
        let loc = SelfLocation::from_env(Some("/nonexistent/socket,12,0"), Some("%7")).unwrap();
        assert_eq!(loc.pane, PaneId(7));
        assert_eq!(
            loc.socket, None,
            "an unresolvable socket is kept as unknown"
        );
        assert!(
            loc.is_our_server(Path::new("/anything")),
            "unknown means protect"
        );
    }

    #[test]
    fn refuses_only_what_holds_our_pane() {
        let placement = Placement {
            windows: vec![WindowId(2)],
            sessions: vec![SessionId(1), SessionId(5)],
        };
        let me = me();
        assert!(me.refusal(Kill::Server, &placement).is_some());
        assert!(
            me.refusal(Kill::Session(SessionId(5)), &placement)
                .is_some()
        );
        assert!(
            me.refusal(Kill::Session(SessionId(0)), &placement)
                .is_none()
        );
        assert!(me.refusal(Kill::Window(WindowId(2)), &placement).is_some());
        assert!(me.refusal(Kill::Window(WindowId(3)), &placement).is_none());
        assert!(me.refusal(Kill::Pane(PaneId(4)), &placement).is_some());
        assert!(me.refusal(Kill::Pane(PaneId(9)), &placement).is_none());
    }

    #[test]
    fn compares_sockets_by_real_path() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("sock");
        std::fs::write(&real, b"").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let env = format!("{},1,0", link.display());
        let loc = SelfLocation::from_env(Some(&env), Some("%1")).unwrap();
        assert!(loc.is_our_server(&real));
        assert!(!loc.is_our_server(dir.path()));
    }
}
