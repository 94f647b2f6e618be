//! The contract of a tool both backends serve ([`super::backend::SHARED_TOOLS`]): one trait,
//! [`MuxTool`], a body written once against any backend's [`PaneAccess`], and
//! [`McpServer::serve`], which opens the server the call names and runs the body on it.
//!
//! A shared tool then reads the same way in every file: check what the backend refuses without
//! asking a server ([`MuxTool::check`]), then `serve`, which opens the access (already checked
//! against the caller's grants: a [`TmuxAccess`](super::access::TmuxAccess) or a
//! [`ZellijAccess`](super::zellij_access::ZellijAccess)) and runs the body. The
//! body parses, takes its budget, finds its pane or window through the access and asks the
//! backend's [`Multiplexer`](muxgate_mux::multiplexer::Multiplexer), or the access's listings
//! ([`super::listing`]) and window creation ([`super::window_creation`]). The tests in
//! `tests/zellij_tools.rs` and the tmux tool tests hold both backends to the semantics
//! `docs/tools.md` states.
//!
//! Not here: which server a name picks ([`McpServer::backend_of`]), and the acts only one
//! backend has, whose tools call their backend's access directly.

use std::future::Future;

use super::McpServer;
use super::backend::Backend;
use super::call::CallContext;
use super::error::ToolError;
use super::pane_access::PaneAccess;

/// A tool both backends serve with one body: its arguments, what it refuses without asking a
/// server, and its act, written against any backend's [`PaneAccess`].
pub(crate) trait MuxTool: Send + Sync + Sized {
    /// The tool's answer.
    type Answer;

    /// The `server` the call names, if it names one.
    fn server(&self) -> Option<&str>;

    /// What the `backend` refuses in these arguments without asking a server. It runs before
    /// the access opens, so bad input starts nothing (a caller's workspace) and is refused the
    /// same way whatever state the server is in. The body may parse again.
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

/// What a call of `T` gives: its answer, or the error for the model.
pub(crate) type Reply<T> = Result<<T as MuxTool>::Answer, ToolError>;

impl McpServer {
    /// Runs `tool` on the backend its `server` names for this caller.
    pub(crate) async fn serve<T: MuxTool>(&self, call: &CallContext, tool: T) -> Reply<T> {
        let backend = self.backend_of(call, tool.server());
        tool.check(backend)?;
        match backend {
            Backend::Tmux => {
                let tmux = self.tmux_access(call, tool.server()).await?;
                tool.act(self, tmux).await
            }
            Backend::Zellij => {
                let zellij = self.zellij_access(call, tool.server()).await?;
                tool.act(self, zellij).await
            }
        }
    }
}
