//! What the inbox ([`crate::http::inbox`]) reads and does through the engine for an approver:
//! the screen of the pane a held call names, the spawned agents blocked on a human with their
//! screens, and an answer typed to one of them.
//!
//! Every read is made as the client whose call or agent it is, so an approver is shown what
//! that client may see and nothing beside it. An answer goes the way of `answer_agent`: typed
//! only while the agent's screen is still the one the approver was shown (its digest), once
//! per form (its idempotency key), and recorded in the audit log under the approver's name
//! (the keys as length and hash only).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::access::TmuxAccess;
use super::agent_watch::{Edge, Watched};
use super::error::ToolError;
use super::once::{self, Once};
use super::pane_state::ScreenRead;
use super::tools::agent_answer::{typed_then, visible_lines};
use crate::audit::{CallStart, Outcome};
use muxgate_tmux::PaneId;
use muxgate_tmux::ops::keys::KeyName;

/// Longest a screen read for the page may take: one slow host must not stall the page.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Most blocked agents one page shows (the longest-blocked first).
const MAX_AGENTS_SHOWN: usize = 32;

/// A blocked agent as the inbox shows it.
pub(crate) struct BlockedAgent {
    pub(crate) agent: Arc<Watched>,
    pub(crate) edge: Edge,
    pub(crate) screen: Vec<String>,
    pub(crate) digest: String,
}

/// An answer an approver typed into the inbox's form.
pub(crate) struct InboxAnswer {
    /// The agent's server scope ([`crate::auth::owners::OwnerScope`]'s text) and id.
    pub(crate) scope: String,
    pub(crate) agent: String,
    /// The digest of the screen the approver was shown.
    pub(crate) digest: String,
    /// Typed as it is, never read as key names.
    pub(crate) text: String,
    /// The key pressed after it, if any.
    pub(crate) then: Option<KeyName>,
    /// The form's idempotency key.
    pub(crate) nonce: String,
}

/// Why an answer was not typed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AnswerRefused {
    /// No watched agent of that name (stopped, exited, or never spawned here).
    Gone,
    /// The answer is empty, too long or holds control characters.
    Invalid,
    /// The agent's pane could not be reached.
    Unreachable,
}

/// A pane's visible screen: its lines and their digest.
async fn visible(tmux: &TmuxAccess<'_>, pane: PaneId) -> Result<(Vec<String>, String), ToolError> {
    let lines = visible_lines(tmux, pane).await?;
    let digest = ScreenRead::of(&lines).digest.unwrap_or_default();
    Ok((lines, digest))
}

impl McpServer {
    /// The pane held call `id` names and its screen now, read as its caller.
    pub(crate) async fn held_call_screen(&self, id: &str) -> Option<(String, Vec<String>)> {
        let held = self.state().held_targets.get(id)?;
        let read = async {
            let tmux = self
                .tmux_access(&held.call, held.server.as_deref())
                .await
                .ok()?;
            let pane = tmux.pane_named(&held.target).await.ok()?;
            let (lines, _) = visible(&tmux, pane).await.ok()?;
            Some((pane.to_string(), lines))
        };
        tokio::time::timeout(READ_TIMEOUT, read)
            .await
            .ok()
            .flatten()
    }

    /// The spawned agents blocked on a human, with their screens now. One whose screen cannot
    /// be read in time is left out (it shows again once it can be).
    /// The reads run side by side: a page waits [`READ_TIMEOUT`] at most, however many.
    pub(crate) async fn blocked_agents(&self) -> Vec<BlockedAgent> {
        let mut blocked = self.state().agent_watches.blocked();
        blocked.truncate(MAX_AGENTS_SHOWN);
        let reads = blocked.into_iter().map(|(agent, edge)| async move {
            let read = async {
                let tmux = self
                    .tmux_access(&agent.call, Some(&agent.server))
                    .await
                    .ok()?;
                visible(&tmux, agent.pane).await.ok()
            };
            let (screen, digest) = tokio::time::timeout(READ_TIMEOUT, read).await.ok()??;
            Some(BlockedAgent {
                agent,
                edge,
                screen,
                digest,
            })
        });
        futures::future::join_all(reads)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Types `answer` into the agent's pane for `approver`, if its screen is still the one
    /// shown; the outcome as `answer_agent` names it (`answered`, `screen_changed`,
    /// `not_taken`).
    pub(crate) async fn answer_from_inbox(
        &self,
        approver: &str,
        answer: InboxAnswer,
    ) -> Result<&'static str, AnswerRefused> {
        let pieces =
            typed_then(&answer.text, answer.then.clone()).map_err(|_| AnswerRefused::Invalid)?;
        once::check(Some(&answer.nonce)).map_err(|_| AnswerRefused::Invalid)?;
        let agent = self
            .state()
            .agent_watches
            .find(&answer.scope, &answer.agent)
            .ok_or(AnswerRefused::Gone)?;
        let tmux = self
            .tmux_access(&agent.call, Some(&agent.server))
            .await
            .map_err(|_| AnswerRefused::Unreachable)?;
        let request = once::request_digest((
            tmux.server_name(),
            agent.pane.0,
            &answer.digest,
            (&answer.text, answer.then.as_ref().map(|k| k.to_string())),
        ));
        let keys = &self.state().answers;
        // Apart from any client's keys: an approver's `sub` is no client's.
        let owner = format!("inbox:{approver}");
        let claim = match once::claim(keys, &owner, Some(&answer.nonce), request) {
            Ok(Once::Act(claim)) => claim,
            Ok(Once::Replay(first)) => return Ok(first.outcome),
            Err(_) => return Err(AnswerRefused::Invalid),
        };
        let pane = agent.pane.to_string();
        let audit = self.state().audit.clone();
        let open = audit
            .start(CallStart {
                sub: approver,
                mcp_session: None,
                tool: "inbox_answer",
                server: Some(&agent.server),
                host: None,
                targets: std::slice::from_ref(&pane),
                args: &json!({"agent": agent.id, "screen_digest": answer.digest,
                              "keys": [answer.text, answer.then.as_ref().map(|k| k.to_string())]}),
                schema: None,
            })
            .await
            .map_err(|_| AnswerRefused::Unreachable)?;
        // The approver's browser cannot cancel a form it sent; shutdown ends the wait.
        let cancel = CancellationToken::new();
        let work = self.answer(&tmux, agent.pane, &answer.digest, pieces, &cancel);
        let typed = self.state().until_shutdown(work).await;
        let Ok(typed) = typed else {
            open.end(Outcome::Error, Some("unavailable"));
            return Err(AnswerRefused::Unreachable);
        };
        open.end(Outcome::Ok, None);
        if let Some(guard) = claim
            && typed.outcome != "screen_changed"
        {
            guard.finish(typed.clone());
        }
        Ok(typed.outcome)
    }
}
