//! The MCP server: what muxgate says about itself and which tools it serves.
//!
//! [`McpServer`] is rmcp's `ServerHandler`. The HTTP layer builds one per MCP session (or per
//! request for stateless clients) by cloning a prototype, so it is a cheap handle around shared
//! state. It declares only the capabilities it serves (tools) and refuses the other methods,
//! which rmcp would otherwise answer with empty lists.
//!
//! - [`tools`]: the tool groups and the combined router;
//! - [`call`]: what happens around every call (scope check, rate limit, audit);
//! - [`access`]: how a tool reaches tmux for a caller (server choice, target ACL, errors);
//! - [`self_guard`]: destructive tools never take down the tmux object the gateway runs in;
//! - [`error`]: [`ToolError`], the `isError` result a model can act on;
//! - [`args`]: helpers for tool input structs;
//! - [`filter`]: Django-style filters applied to listing rows;
//! - [`pane_ops`]: pane operations (listing, input, capture) reused by several tools;
//! - [`catalog`]: the catalog as data (tiers) and as Markdown (`muxgate tools`).
//!
//! Not here: transport and authentication (see [`crate::http`], [`crate::auth`]: the HTTP layers
//! put the caller's `Principal` into every request), the multiplexer itself ([`crate::mux`]).

pub mod access;
pub mod args;
pub mod call;
pub mod catalog;
pub mod error;
pub mod filter;
pub mod pane_ops;
pub mod self_guard;
pub mod tools;

use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, Implementation, ListPromptsRequestMethod,
    ListPromptsResult, ListResourceTemplatesRequestMethod, ListResourceTemplatesResult,
    ListResourcesRequestMethod, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ResultType, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::audit::AuditLog;
use crate::config::Config;
use crate::limits::Limits;
use crate::mux::tmux::TmuxEngine;
pub use call::CallContext;
pub use error::{ToolError, ToolErrorKind};

/// The name muxgate reports in `serverInfo`.
pub const SERVER_NAME: &str = "muxgate";

/// Guidance sent to clients at initialization / discovery.
pub const INSTRUCTIONS: &str = "muxgate drives the tmux servers of one host on your behalf. \
Start with list_servers: it names the tmux servers this gateway may drive, and other tools select \
one by that name. Tool failures you can fix come back as results with isError set, a message and \
a one-line suggestion; follow the suggestion instead of retrying the same call.";

/// What tool handlers can reach. Shared by every MCP session.
pub struct McpState {
    pub config: Arc<Config>,
    pub tmux: TmuxEngine,
    pub limits: Arc<Limits>,
    pub audit: Arc<AuditLog>,
    /// Where the gateway itself runs, when inside tmux (see [`self_guard`]).
    pub self_location: Option<self_guard::SelfLocation>,
}

/// The rmcp `ServerHandler` for muxgate. Cloning is cheap (one `Arc`).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    state: McpState,
    tools: ToolRouter<McpServer>,
}

impl McpServer {
    pub fn new(state: McpState) -> Self {
        Self {
            inner: Arc::new(Inner {
                state,
                tools: tools::router(),
            }),
        }
    }

    pub fn state(&self) -> &McpState {
        &self.inner.state
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let caller = authenticated(&context)?;
        let Some(tool) = self.inner.tools.get(&request.name) else {
            // Unknown tool: the router answers with the JSON-RPC error.
            return self
                .inner
                .tools
                .call(ToolCallContext::new(self, request, context))
                .await;
        };
        let state = self.state();
        if let Err((error, outcome)) = call::admit(&caller, catalog::tier_of(tool), &state.limits) {
            call::record(&state.audit, &caller, &request, started, Err(outcome));
            return Ok(error.into_result().into());
        }
        context.extensions.insert(caller.clone());
        let call = ToolCallContext::new(self, request.clone(), context);
        let response = error::normalize_argument_error(self.inner.tools.call(call).await?);
        call::record(&state.audit, &caller, &request, started, Ok(&response));
        Ok(response)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = authenticated(&context)?;
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let tools = self
            .inner
            .tools
            .list_all()
            .into_iter()
            .filter(|tool| call::visible(&caller.principal, tool))
            .collect();
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            // Private: the list is meant to be filtered by the caller's policy.
            cache_scope: cache_hints.then_some(CacheScope::Private),
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.get(name).cloned()
    }

    // Capabilities not declared in `get_info` are refused rather than answered empty.

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListPromptsRequestMethod>())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListResourcesRequestMethod>())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(ErrorData::method_not_found::<
            ListResourceTemplatesRequestMethod,
        >())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Err(ErrorData::method_not_found::<CompleteRequestMethod>())
    }
}

/// The caller the HTTP auth layer established; its absence is a wiring fault, not a client error.
fn authenticated(context: &RequestContext<RoleServer>) -> Result<CallContext, ErrorData> {
    CallContext::from_request(context).ok_or_else(|| {
        tracing::error!("MCP request without an authenticated principal; check the HTTP layers");
        ErrorData::internal_error("request not authenticated", None)
    })
}

/// What muxgate declares at `initialize` and `server/discover`: tools only.
pub fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(
            Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                .with_title("muxgate")
                .with_description("MCP gateway to terminal multiplexers (tmux)"),
        )
        .with_instructions(INSTRUCTIONS)
}
