//! The contract of a tool both backends serve ([`super::backend::SHARED_TOOLS`]): one trait,
//! [`SharedTool`], with a tmux half and a Zellij half that take the same arguments and give
//! the same answer type, and [`McpServer::serve`], which opens the server the call names and
//! runs the matching half.
//!
//! A shared tool then reads the same way on every file: check what both backends check (the
//! tool's rules, stated once), then `serve`, which runs the call's own checks for the backend
//! ([`SharedTool::check`]) before it opens anything. Each half is handed the access it needs, already
//! checked against the caller's grants: a [`TmuxAccess`] or a [`ZellijAccess`]. The compiler
//! holds both halves to one answer; the tests in `tests/zellij_tools.rs` and the tmux tool
//! tests hold them to the semantics `docs/tools.md` states.
//!
//! A tool whose act every backend's [`Multiplexer`](muxgate_mux::multiplexer::Multiplexer)
//! offers is written once instead: [`MuxTool`], one body against a [`PaneAccess`], which
//! serves as both halves.
//!
//! Not here: which server a name picks ([`McpServer::backend_of`]), and the acts only one
//! backend has, whose tools call their backend's access directly.

use std::future::Future;

use super::McpServer;
use super::access::TmuxAccess;
use super::backend::Backend;
use super::call::CallContext;
use super::error::ToolError;
use super::pane_access::PaneAccess;
use super::zellij_access::ZellijAccess;

/// One call of a tool both backends serve: its arguments (checked as far as both backends
/// check them) and its two halves.
pub(crate) trait SharedTool: Send + Sync + Sized {
    /// The tool's answer, one type for both backends.
    type Answer;

    /// The `server` the call names, if it names one.
    fn server(&self) -> Option<&str>;

    /// What the `backend` half refuses in these arguments without asking a server. It runs
    /// before the access opens, so bad input starts nothing (a caller's workspace) and is
    /// refused the same way whatever state the server is in. The halves may parse again.
    fn check(&self, _backend: Backend) -> Result<(), ToolError> {
        Ok(())
    }

    /// The call on a tmux server.
    fn on_tmux(
        self,
        gateway: &McpServer,
        tmux: TmuxAccess<'_>,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send;

    /// The call on a Zellij server.
    fn on_zellij(
        self,
        gateway: &McpServer,
        zellij: ZellijAccess<'_>,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send;
}

/// A tool both backends serve with one body: its arguments, what it refuses without asking a
/// server, and its act, written against any backend's [`PaneAccess`].
pub(crate) trait MuxTool: Send + Sync + Sized {
    /// The tool's answer.
    type Answer;

    /// The `server` the call names, if it names one.
    fn server(&self) -> Option<&str>;

    /// As [`SharedTool::check`].
    fn check(&self, _backend: Backend) -> Result<(), ToolError> {
        Ok(())
    }

    /// The call, on the server `access` opened.
    fn act<A: PaneAccess>(
        self,
        gateway: &McpServer,
        access: A,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send;
}

impl<T: MuxTool> SharedTool for T {
    type Answer = T::Answer;

    fn server(&self) -> Option<&str> {
        MuxTool::server(self)
    }

    fn check(&self, backend: Backend) -> Result<(), ToolError> {
        MuxTool::check(self, backend)
    }

    fn on_tmux(
        self,
        gateway: &McpServer,
        tmux: TmuxAccess<'_>,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send {
        self.act(gateway, tmux)
    }

    fn on_zellij(
        self,
        gateway: &McpServer,
        zellij: ZellijAccess<'_>,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send {
        self.act(gateway, zellij)
    }
}

/// What a half of `T` gives: its answer, or the error for the model.
pub(crate) type Reply<T> = Result<<T as SharedTool>::Answer, ToolError>;

impl McpServer {
    /// Runs `tool` on the backend its `server` names for this caller.
    pub(crate) async fn serve<T: SharedTool>(&self, call: &CallContext, tool: T) -> Reply<T> {
        let backend = self.backend_of(call, tool.server());
        tool.check(backend)?;
        match backend {
            Backend::Tmux => {
                let tmux = self.tmux_access(call, tool.server()).await?;
                tool.on_tmux(self, tmux).await
            }
            Backend::Zellij => {
                let zellij = self.zellij_access(call, tool.server()).await?;
                tool.on_zellij(self, zellij).await
            }
        }
    }
}
