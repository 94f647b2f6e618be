//! `wait_for_channel` and `signal_channel`: tmux `wait-for` channels, for a script in a pane to
//! tell an agent it is done (`tmux wait-for -S NAME`) without any output to match.
//!
//! Each wait runs on its own short-lived tmux client ([`muxgate_tmux::client::channel`]), so no
//! command of anyone else queues behind it; it ends on the signal, the timeout, cancellation or
//! shutdown, and the client is killed whichever comes first.

use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::support::op_failure;
use super::watch::{cancelled, elapsed_ms};
use crate::mcp::McpServer;
use crate::mcp::access::{TmuxAccess, engine_error, link_down_error};
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use muxgate_tmux::client::channel::{ChannelName, ChannelWaitError};
use muxgate_tmux::typed::op_error::OpError;

/// `wait_for_channel`'s timeout when the client gives none.
const DEFAULT_CHANNEL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChannelInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Channel name: 1-128 of letters, digits and `_ . : -`.
    pub channel: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitForChannelInput {
    #[serde(default)]
    pub server: Option<String>,
    /// Channel name: 1-128 of letters, digits and `_ . : -`.
    pub channel: String,
    /// Seconds to wait (default 30), capped at your `max_wait_seconds`.
    #[serde(default)]
    pub timeout: Option<f64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct WaitForChannelOutput {
    pub channel: String,
    /// The channel's name in tmux: what a script in a pane signals (`tmux wait-for -S …`).
    /// On a server shared with other clients it carries your client's tag, so no other client
    /// can signal or consume it; in your workspace it is `channel` itself.
    pub tmux_channel: String,
    /// The channel was signalled (or had been, since the last wait on it).
    pub signalled: bool,
    pub timed_out: bool,
    pub elapsed_ms: u64,
    /// The timeout applied, in seconds.
    pub effective_timeout: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SignalChannelOutput {
    pub channel: String,
    /// The channel's name in tmux (see wait_for_channel).
    pub tmux_channel: String,
    pub signalled: bool,
}

/// Which server process answers (pid and start time): a wait compares it before and after,
/// to tell a signal from its server's exit.
async fn server_identity(tmux: &TmuxAccess<'_>) -> Result<Option<String>, ToolError> {
    tmux.server_ops()
        .identity()
        .await
        .map_err(|e| engine_error(tmux.server_name(), e, "call list_servers"))
}

fn channel_name(name: &str) -> Result<ChannelName, ToolError> {
    ChannelName::parse(name).map_err(|e| {
        ToolError::invalid_arguments(
            format!("channel: {e}"),
            "use a name like build.done or job-42",
        )
    })
}

#[tool_router(router = channel_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "wait_for_channel",
        description = "Wait until a tmux wait-for channel is signalled (`tmux wait-for -S`).\n\n\
            A signal sent before the wait is remembered: it returns at once, consuming it. Scripts \
            signal `tmux_channel` = `<channel_prefix><channel>` (prefix from get_server_info; \
            empty in your workspace). Returns `signalled` or `timed_out`.",
        annotations(
            title = "Wait for a tmux channel",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn wait_for_channel(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<WaitForChannelInput>,
    ) -> Result<Json<WaitForChannelOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let channel = channel_name(&input.channel)?;
        let budget = tmux.budget().wait(input.timeout, DEFAULT_CHANNEL_TIMEOUT)?;
        let settings = self.state().config.engine.settings();
        let started = Instant::now();
        let server_before = server_identity(&tmux).await?;
        let channels = tmux.channels();
        let wait = channels.wait(&settings.tmux_bin, &channel);
        let work = async {
            tokio::select! {
                biased;
                () = cancel.cancelled() => Err(cancelled()),
                () = tokio::time::sleep_until(budget.deadline) => Ok(false),
                signalled = wait => match signalled {
                    Ok(()) => Ok(true),
                    Err(ChannelWaitError::Spawn(e)) => Err(ToolError::new(
                        ToolErrorKind::Internal,
                        format!("could not start tmux for the wait: {e}"),
                        "check the gateway's engine.tmux_bin",
                    )),
                    Err(ChannelWaitError::ServerGone(e)) => Err(ToolError::new(
                        ToolErrorKind::Unavailable,
                        format!("the tmux server went away during the wait: {e}"),
                        "call list_servers; the channel was not signalled",
                    )),
                    Err(ChannelWaitError::LinkDown(down)) => Err(link_down_error(&down)),
                },
            }
        };
        let signalled = self.state().until_shutdown(work).await?;
        // A `wait-for` client whose server dies exits as quietly as a signalled one: the server
        // must still be the same one for this to be a signal.
        if signalled && server_identity(&tmux).await.ok() != Some(server_before) {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                "the tmux server went away during the wait",
                "call list_servers; the channel was not signalled",
            ));
        }
        Ok(Json(WaitForChannelOutput {
            channel: channel.as_str().to_owned(),
            tmux_channel: channels.in_tmux(&channel),
            signalled,
            timed_out: !signalled,
            elapsed_ms: elapsed_ms(started),
            effective_timeout: budget.effective_secs(),
        }))
    }

    #[tool(
        name = "signal_channel",
        description = "Signal a tmux wait-for channel (wakes wait_for_channel).\n\n\
            Remembered if nobody waits yet.",
        annotations(
            title = "Signal a tmux channel",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn signal_channel(
        &self,
        Extension(call): Extension<CallContext>,
        Parameters(input): Parameters<ChannelInput>,
    ) -> Result<Json<SignalChannelOutput>, ToolError> {
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let channel = channel_name(&input.channel)?;
        let channels = tmux.channels();
        channels.signal(&channel).await.map_err(|e| match e {
            OpError::Quote(e) => {
                ToolError::invalid_arguments(e.to_string(), "fix the channel name")
            }
            e => op_failure(tmux.server_name(), e, "call list_servers"),
        })?;
        Ok(Json(SignalChannelOutput {
            channel: channel.as_str().to_owned(),
            tmux_channel: channels.in_tmux(&channel),
            signalled: true,
        }))
    }
}
