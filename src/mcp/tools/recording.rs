//! `record_pane`: start or stop recording a pane's output as an asciinema cast, on request
//! (toolset `humans`; the `[[recordings.rules]]` record without being asked). The files are
//! the operator's: the tool names one, `muxgate recordings` reads them.

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::access::engine_error;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::recording::server_key;
use crate::recordings::{RecordError, Stopped};

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordPaneInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Pane (`%N`), or window/session (their active pane).
    pub target: String,
    /// true (default): start recording; false: stop.
    #[serde(default = "yes")]
    pub record: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct RecordPaneOutput {
    pub pane: String,
    /// Whether the pane is recorded now.
    pub recording: bool,
    /// The cast file (in the gateway's recordings directory) being written, or just ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Seconds into that file now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_secs: Option<f64>,
}

#[tool_router(router = recording_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "record_pane",
        description = "Start or stop recording a pane's output as an asciinema cast file.\n\n\
            Output only: typed keys are not recorded, what the pane echoes is. A recording a \
            gateway rule started cannot be stopped here.",
        annotations(
            title = "Record a pane",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn record_pane(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<RecordPaneInput>,
    ) -> Result<Json<RecordPaneOutput>, ToolError> {
        let recorder = &self.state().recorder;
        if !recorder.is_enabled() {
            return Err(disabled());
        }
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let target = tmux.target(&input.target).await?;
        let resolved = tmux.resolve(&target).await?;
        let pane = resolved.pane_id;
        let key = server_key(&tmux);
        if !input.record {
            return match recorder.stop(&key, pane) {
                Stopped::Was(at) => Ok(Json(RecordPaneOutput {
                    pane: pane.to_string(),
                    recording: false,
                    file: Some(at.file),
                    at_secs: Some(at.at_secs),
                })),
                Stopped::NotRecorded => Ok(Json(RecordPaneOutput {
                    pane: pane.to_string(),
                    recording: false,
                    file: None,
                    at_secs: None,
                })),
                Stopped::ByRule(rule) => Err(ToolError::new(
                    ToolErrorKind::Forbidden,
                    format!("the gateway's recording rule {rule:?} records this pane"),
                    "only the gateway's operator can change that (recordings.rules)",
                )),
            };
        }
        let title = format!(
            "{key} {pane} (session {}): requested by {}",
            resolved.session_name,
            call.sub()
        );
        let at = recorder
            .start(&tmux.server, &key, pane, title, None)
            .await
            .map_err(|error| match error {
                RecordError::Disabled => disabled(),
                RecordError::TooMany(_) | RecordError::TooManyRequested(_) => ToolError::new(
                    ToolErrorKind::Busy,
                    error.to_string(),
                    "stop a recording you started (record: false), or retry later",
                ),
                RecordError::Engine(engine) => {
                    engine_error(tmux.server_name(), engine, "call list_panes")
                }
                RecordError::Timeout => ToolError::new(
                    ToolErrorKind::Timeout,
                    error.to_string(),
                    "retry; the pane was not recorded",
                ),
                // Paths and OS errors are for the operator's log, not for clients.
                RecordError::Io(io) => {
                    tracing::warn!(error = %io, "recordings: cannot start a file");
                    ToolError::new(
                        ToolErrorKind::Unavailable,
                        "the gateway cannot write recordings now",
                        "ask the gateway's operator to check the recordings directory",
                    )
                }
            })?;
        Ok(Json(RecordPaneOutput {
            pane: pane.to_string(),
            recording: true,
            file: Some(at.file),
            at_secs: Some(at.at_secs),
        }))
    }
}

fn disabled() -> ToolError {
    ToolError::new(
        ToolErrorKind::Unavailable,
        "recordings are off on this gateway",
        "ask the gateway's operator to set recordings.enabled",
    )
}
