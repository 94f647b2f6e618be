//! `view_link`: a signed link to a read-only page showing a pane live, for a person to watch
//! what an agent does (README: Live view). The link shows that one pane until it expires, and
//! grants nothing else: no typing, no approving. In the `humans` toolset.

use std::time::SystemTime;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp::McpServer;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::links;
use crate::view::link::{ViewGrant, sign};
use muxgate_tmux::typed::panes::TmuxPanes;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ViewLinkInput {
    #[serde(default)]
    pub server: Option<String>,
    /// The pane `%N`, or a window or session (its active pane now).
    pub target: String,
    /// Minutes the link lives (default 15, at most the gateway's view.max_link_minutes and
    /// never past your token's expiry).
    #[serde(default)]
    pub minutes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ViewLinkOutput {
    pub pane_id: String,
    /// The page. Its query is the credential: share it only with who may watch.
    pub url: String,
    /// When the link stops working, in Unix seconds.
    pub expires_at: u64,
}

#[tool_router(router = view_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "view_link",
        description = "Make a link to a read-only page showing a pane live in a browser, for a person to watch.\n\n\
            The page shows the pane's screen as output arrives, until the link expires; nobody \
            can type through it.",
        annotations(
            title = "Link to a live view of a pane",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn view_link(
        &self,
        Extension(call): Extension<CallContext>,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<ViewLinkInput>,
    ) -> Result<Json<ViewLinkOutput>, ToolError> {
        let state = self.state();
        if !state.config.view.enabled {
            return Err(ToolError::new(
                ToolErrorKind::Unavailable,
                "the live view is off on this gateway",
                "ask the operator to set view.enabled = true",
            ));
        }
        let ttl = state.config.view.link_ttl(input.minutes).map_err(|why| {
            ToolError::invalid_arguments(format!("minutes: {why}"), "pass fewer minutes")
        })?;
        let ttl = links::within_token(ttl, &call.principal)?;
        let base = links::base(&state.config.http, &parts)?;
        let tmux = self.tmux_access(&call, input.server.as_deref()).await?;
        let pane = tmux
            .resolve(&tmux.target(&input.target).await?)
            .await?
            .pane_id;
        let terminal = TmuxPanes::new(tmux.server.clone(), tmux.caller.clone())
            .terminal(pane)
            .await
            .map_err(|e| {
                ToolError::new(ToolErrorKind::Unavailable, e.to_string(), "retry shortly")
            })?
            .ok_or_else(|| super::watch::missing_pane(pane))?;
        let grant = ViewGrant::new(
            tmux.server_name(),
            pane,
            terminal.server_pid,
            SystemTime::now(),
            ttl,
        );
        let grant = match tmux.workspace {
            Some(_) => grant.in_workspace(&call.principal.workspace, tmux.instance().epoch),
            None => grant,
        };
        let token = sign(&state.view_key, &grant);
        Ok(Json(ViewLinkOutput {
            pane_id: pane.to_string(),
            url: format!("{base}/view?t={token}"),
            expires_at: grant.expires,
        }))
    }
}
