//! Recordings around a call: before a tmux tool runs, the panes it targets that a
//! `[[recordings.rules]]` rule records for this client start recording (so the call's own
//! output is in the file), and every targeted pane being recorded is named in the call's
//! audit log entry (a `recording` record: file and second).
//!
//! A call costs nothing here unless the recorder [`concerns`](Recorder::concerns) its client:
//! a rule may match it, or some pane is recorded now. Then each target is resolved (one tmux
//! command, as the caller and under its ACL, and one more for a path `SESSION:WINDOW.PANE`; a
//! `%N` already recorded needs none). A target
//! that cannot be resolved is left to the tool, which reports it. When a rule applies but its
//! recording cannot start (the recorder is full, the pane does not answer in time), the call
//! is refused: it never runs unrecorded.

use std::collections::HashSet;
use std::time::Duration;

use muxgate_mux::lines::excerpt;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::McpServer;
use super::access::TmuxAccess;
use super::call::{CallContext, targets_of};
use super::catalog::toolset;
use super::error::{ToolError, ToolErrorKind};
use crate::audit::OpenCall;
use crate::auth::Toolset;
use crate::recordings::{RecordError, Recorder, RecordingRef};
use muxgate_tmux::PaneId;
use muxgate_tmux::wire::target::{ClientTarget, Target};

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
            let Ok(target) = ClientTarget::parse(text) else {
                continue;
            };
            let Some((pane, at)) = recording_of(recorder, &access, &key, text, &target).await?
            else {
                continue;
            };
            if noted.insert(pane) {
                open.recording(&key, &pane.to_string(), &at.file, at.at_secs);
            }
        }
        Ok(())
    }
}

/// The recording of `target`'s pane: the one running, else one a rule starts now. A rule is a
/// promise to the operator: when one may apply and the pane cannot be found in time, or its
/// recording cannot start, the call is refused rather than run unrecorded.
async fn recording_of(
    recorder: &Recorder,
    access: &TmuxAccess<'_>,
    key: &str,
    text: &str,
    target: &ClientTarget,
) -> Result<Option<(PaneId, RecordingRef)>, ToolError> {
    let sub = access.call.sub();
    let ruled = recorder.may_record_for(sub);
    // A recording begun on request may still be one a rule wants: then it is resolved, so
    // that the rule takes it over (and `record_pane` can no longer stop it).
    if let ClientTarget::Direct(Target::Pane(pane)) = target
        && let Some(at) = recorder.now(key, *pane)
        && (!ruled || recorder.by_rule(key, *pane))
    {
        return Ok(Some((*pane, at)));
    }
    let resolve = async { access.resolve(&access.target(text).await?).await };
    let resolved = match tokio::time::timeout(RESOLVE_TIMEOUT, resolve).await {
        Ok(Ok(resolved)) => resolved,
        // A target that does not resolve is left to the tool, which reports it.
        Ok(Err(_)) => return Ok(None),
        Err(_) if ruled => {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                format!(
                    "cannot tell within {RESOLVE_TIMEOUT:?} whether a recording rule applies \
                     to {:?}; the call was not run",
                    excerpt(text)
                ),
                "retry later",
            ));
        }
        Err(_) => return Ok(None),
    };
    let pane = resolved.pane_id;
    let Some(rule) = recorder.rule_for(sub, &resolved.session_name) else {
        return Ok(recorder.now(key, pane).map(|at| (pane, at)));
    };
    let title = format!(
        "{key} {pane} (session {}): rule {rule}, first call by {sub}",
        resolved.session_name
    );
    match recorder
        .start(&access.server, key, pane, title, Some(rule.clone()))
        .await
    {
        Ok(at) => Ok(Some((pane, at))),
        Err(error) => {
            tracing::warn!(%pane, %error, "recordings: a rule's recording did not start; call refused");
            let kind = match error {
                RecordError::TooMany(_) | RecordError::TooManyRequested(_) => ToolErrorKind::Busy,
                _ => ToolErrorKind::Unavailable,
            };
            // Paths and OS errors are for the operator's log, not for clients.
            let why = match error {
                RecordError::Io(_) => "the gateway cannot write recordings now".to_owned(),
                other => other.to_string(),
            };
            Err(ToolError::new(
                kind,
                format!(
                    "the recording rule {rule:?} records {pane}, but its recording cannot \
                     start ({why}); the call was not run"
                ),
                "retry later, or ask the gateway's operator (recordings.max_panes)",
            ))
        }
    }
}
