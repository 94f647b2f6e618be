//! [`PaneIo`] for one Zellij session: the backend-neutral pane operations on
//! [`ZellijBackend`]. Every call goes through the session's queue like any other backend call.

use std::time::Duration;

use muxgate_mux::text_match::Pattern;

use super::backend::{ReadScope, ZellijBackend};
use super::error::ZellijError;
use super::ids::{PaneId, SessionName};
use super::keys::Key;
use muxgate_mux::pane_io::{PaneIo, PaneSummary, ScreenMatch, ScreenScope};

/// The panes of one Zellij session.
#[derive(Clone)]
pub struct ZellijPanes {
    backend: ZellijBackend,
    session: SessionName,
}

impl ZellijPanes {
    /// The panes of `session`, reached through `backend`.
    pub fn new(backend: ZellijBackend, session: SessionName) -> Self {
        Self { backend, session }
    }
}

/// Zellij's key names, validated.
pub fn parse_keys(keys: &[String]) -> Result<Vec<Key>, ZellijError> {
    keys.iter()
        .map(|k| {
            Key::parse(k).map_err(|e| ZellijError::InvalidArgument {
                what: "keys",
                reason: e.to_string(),
            })
        })
        .collect()
}

impl From<ScreenScope> for ReadScope {
    fn from(scope: ScreenScope) -> Self {
        match scope {
            ScreenScope::Visible => ReadScope::Viewport,
            ScreenScope::Full => ReadScope::Full,
        }
    }
}

impl PaneIo for ZellijPanes {
    type PaneId = PaneId;
    type Error = ZellijError;

    fn backend(&self) -> &'static str {
        "zellij"
    }

    async fn list_panes(&self) -> Result<Vec<PaneSummary<PaneId>>, ZellijError> {
        let panes = self.backend.list_panes(&self.session).await?;
        Ok(panes
            .into_iter()
            .filter(|p| p.is_user_terminal())
            .map(|p| PaneSummary {
                id: p.id,
                container: p.tab_id.to_string(),
                title: p.title,
                command: p.running_command.or(p.terminal_command),
                cwd: p.cwd,
                rows: p.geometry.content_rows,
                columns: p.geometry.content_columns,
                exited: p.exited,
            })
            .collect())
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<(), ZellijError> {
        self.backend.write_chars(&self.session, *pane, text).await
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[String]) -> Result<(), ZellijError> {
        let keys = parse_keys(keys)?;
        self.backend.send_keys(&self.session, *pane, &keys).await
    }

    async fn read_screen(
        &self,
        pane: &PaneId,
        scope: ScreenScope,
    ) -> Result<Vec<String>, ZellijError> {
        let text = self
            .backend
            .read_pane(&self.session, *pane, scope.into())
            .await?;
        Ok(text.lines)
    }

    async fn wait_for_screen(
        &self,
        pane: &PaneId,
        pattern: &Pattern,
        timeout: Duration,
    ) -> Result<ScreenMatch, ZellijError> {
        let found = self
            .backend
            .wait_for_text(&self.session, *pane, pattern, timeout)
            .await?;
        Ok(ScreenMatch {
            line: found.line,
            line_index: found.line_index,
            screen: found.viewport,
        })
    }
}
