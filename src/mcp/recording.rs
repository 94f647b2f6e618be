//! Recordings around a call: before a tmux tool runs, the panes it targets that a
//! `[[recordings.rules]]` rule records for this client start recording (so the call's own
//! output is in the file), and every targeted pane being recorded is named in the call's
//! audit log entry (a `recording` record: file and second).
//!
//! A call costs nothing here unless the recorder [`concerns`](Recorder::concerns) its client:
//! a rule may match it, or some pane is recorded now. Then each target is resolved (one tmux
//! command, as the caller and under its ACL; a `%N` already recorded needs none). A target
//! that cannot be resolved is left to the tool, which reports it.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::McpServer;
use super::access::{TmuxAccess, parse_target};
use super::call::{CallContext, targets_of};
use super::catalog::toolset;
use super::error::{ToolError, ToolErrorKind};
use crate::audit::OpenCall;
use crate::auth::Toolset;
use crate::mux::tmux::PaneId;
use crate::mux::tmux::target::Target;
use crate::recordings::{Recorder, RecordingRef};

/// Distinct targets of one call looked at, at most (a batch may name many panes); a call with
/// more that a rule may record is refused.
const MAX_TARGETS: usize = 16;

/// How long resolving one target may delay the call.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's name in file names and audit records: a workspace is named by its tenant, as
/// every workspace's server is called `workspace`.
pub(crate) fn server_key(access: &TmuxAccess<'_>) -> String {
    match access.workspace {
        Some(_) => format!("workspace-{}", access.call.principal.workspace),
        None => access.server_name().to_owned(),
    }
}

impl McpServer {
    /// Starts the recordings the rules want for this call's panes and names the recordings of
    /// its panes in `open`. Refuses the call when a rule may record it but its targets are more
    /// than can be looked at: part of a call must not run unrecorded.
    pub(crate) async fn note_recordings(
        &self,
        call: &CallContext,
        request: &CallToolRequestParams,
        open: &OpenCall,
    ) -> Result<(), ToolError> {
        let recorder = &self.state().recorder;
        if !recorder.concerns(call.sub()) || toolset::of(&request.name) == Some(Toolset::Zellij) {
            return Ok(());
        }
        let Some(args) = &request.arguments else {
            return Ok(());
        };
        let args = Value::Object(args.clone());
        // Distinct targets only: a target named again costs nothing more and must not push
        // another out of the ones looked at.
        let mut seen = HashSet::new();
        let mut targets = targets_of(&args);
        targets.retain(|text| seen.insert(text.clone()));
        if targets.is_empty() {
            return Ok(());
        }
        if targets.len() > MAX_TARGETS {
            if recorder.may_record_for(call.sub()) {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    format!(
                        "the call names {} distinct targets; a recording rule may apply to \
                         this client, and at most {MAX_TARGETS} can be checked for it",
                        targets.len()
                    ),
                    format!("split the call into calls of at most {MAX_TARGETS} targets each"),
                ));
            }
            targets.truncate(MAX_TARGETS);
        }
        let server = args.get("server").and_then(Value::as_str);
        let Ok(access) = self.tmux_access(call, server).await else {
            return Ok(());
        };
        let key = server_key(&access);
        let mut noted = HashSet::new();
        for text in &targets {
            let Ok(target) = parse_target(text) else {
                continue;
            };
            let Some((pane, at)) = recording_of(recorder, &access, &key, &target).await else {
                continue;
            };
            if noted.insert(pane) {
                open.recording(&key, &pane.to_string(), &at.file, at.at_secs);
            }
        }
        Ok(())
    }
}

/// The recording of `target`'s pane: the one running, else one a rule starts now.
async fn recording_of(
    recorder: &Recorder,
    access: &TmuxAccess<'_>,
    key: &str,
    target: &Target,
) -> Option<(PaneId, RecordingRef)> {
    let sub = access.call.sub();
    // A recording begun on request may still be one a rule wants: then it is resolved, so
    // that the rule takes it over (and `record_pane` can no longer stop it).
    if let Target::Pane(pane) = target
        && let Some(at) = recorder.now(key, *pane)
        && (!recorder.may_record_for(sub) || recorder.by_rule(key, *pane))
    {
        return Some((*pane, at));
    }
    let resolved = tokio::time::timeout(RESOLVE_TIMEOUT, access.resolve(target))
        .await
        .ok()?
        .ok()?;
    let pane = resolved.pane_id;
    let Some(rule) = recorder.rule_for(sub, &resolved.session_name) else {
        return recorder.now(key, pane).map(|at| (pane, at));
    };
    let title = format!(
        "{key} {pane} (session {}): rule {rule}, first call by {sub}",
        resolved.session_name
    );
    match recorder
        .start(&access.server, key, pane, title, Some(rule))
        .await
    {
        Ok(at) => Some((pane, at)),
        Err(error) => {
            tracing::warn!(%pane, %error, "recordings: a rule's recording did not start");
            None
        }
    }
}
