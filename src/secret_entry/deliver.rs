//! Typing a secret into the pane it was asked for, unless it would show or go astray.

use muxgate_mux::host::Host;

use super::exposure::{self, Unsafe};
use muxgate_tmux::PaneId;
use muxgate_tmux::typed::panes::{TmuxPaneError, TmuxPanes};

/// Where a request's secret goes and how.
#[derive(Clone)]
pub struct PaneDestination {
    /// The pane's server, acted on as the client that asked.
    pub panes: TmuxPanes,
    pub pane: PaneId,
    /// Press Enter after the secret.
    pub enter: bool,
    /// The machine the pane runs on, which tells its terminal's modes and its processes (a
    /// workspace's tells nothing: those live in the sandbox's own pid namespace and
    /// `/dev/pts`).
    pub host: std::sync::Arc<dyn Host>,
    /// The pane's program when the secret was asked for ([`Self::bind`]); a secret goes to
    /// that program only.
    pub bound: Option<PaneIdentity>,
}

/// Which program a pane ran: the tmux server (its pid, and the process the gateway knows
/// behind it: a workspace's server has the same pid after a restart) and the pane's own
/// process. A pane number (`%N`) is reused when tmux restarts, and a pane can be respawned
/// with another program; a secret asked for one of them must not reach the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneIdentity {
    server_epoch: u64,
    server_pid: u32,
    pane_pid: u32,
}

/// Who would receive a secret typed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    /// The foreground program's command line (`sudo apt install …`); `None` when the gateway
    /// cannot see the pane's processes.
    pub program: Option<String>,
    pub identity: PaneIdentity,
}

/// Why a secret was not typed.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error("pane {0} no longer exists or its program has exited")]
    Gone(PaneId),
    #[error("{0}")]
    Unsafe(Unsafe),
    #[error("typing into the pane failed: {0}")]
    Failed(#[from] TmuxPaneError),
}

impl PaneDestination {
    /// Types `secret` into the pane (then Enter, if asked), in one write. Call [`Self::check`]
    /// first.
    pub async fn type_in(&self, secret: &str) -> Result<(), DeliverError> {
        Ok(self.panes.type_text(self.pane, secret, self.enter).await?)
    }

    /// Checks the pane as [`Self::check`] does and binds the destination to the program found
    /// there: later checks find the pane gone if another program holds it.
    pub async fn bind(mut self) -> Result<(Self, Receiver), DeliverError> {
        let receiver = self.check().await?;
        self.bound = Some(receiver.identity);
        Ok((self, receiver))
    }

    /// Who would receive a secret typed now, or why it would show or go astray (see
    /// [`exposure`]).
    pub async fn check(&self) -> Result<Receiver, DeliverError> {
        let terminal = self
            .panes
            .terminal(self.pane)
            .await?
            .filter(|t| !t.dead)
            .ok_or(DeliverError::Gone(self.pane))?;
        let identity = PaneIdentity {
            server_epoch: self.panes.instance().epoch,
            server_pid: terminal.server_pid,
            pane_pid: terminal.pane_pid,
        };
        if self.bound.is_some_and(|bound| bound != identity) {
            return Err(DeliverError::Gone(self.pane));
        }
        let modes = self.host.term_modes(&terminal.tty).await;
        let foreground = self
            .host
            .foreground(terminal.server_pid, terminal.pane_pid, &terminal.tty)
            .await;
        exposure::judge(&terminal, modes, foreground.as_ref()).map_err(DeliverError::Unsafe)?;
        Ok(Receiver {
            program: foreground.map(|f| f.command_line),
            identity,
        })
    }
}
