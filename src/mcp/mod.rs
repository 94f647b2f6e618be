//! The MCP server: what muxgate says about itself and which tools it serves.
//!
//! [`McpServer`] is rmcp's `ServerHandler`. The HTTP layer builds one per MCP session (or per
//! request for stateless clients) by cloning a prototype, so it is a cheap handle around shared
//! state. It declares only the capabilities it serves (tools) and refuses the other methods,
//! which rmcp would otherwise answer with empty lists.
//!
//! - [`tools`]: the tool groups and the combined router;
//! - [`error`]: [`ToolError`], the `isError` result a model can act on;
//! - [`args`]: helpers for tool input structs;
//! - [`catalog`]: the catalog as data (tiers) and as Markdown (`muxgate tools`).
//!
//! Not here: transport (see [`crate::http`]), authentication and policy (they wrap the HTTP
//! service and filter `tools/list` / `tools/call`), the multiplexer itself ([`crate::mux`]).

pub mod args;
pub mod catalog;
pub mod error;
pub mod tools;

use std::sync::Arc;

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

use crate::config::Config;
pub use error::{ToolError, ToolErrorKind};

/// The name muxgate reports in `serverInfo`.
pub const SERVER_NAME: &str = "muxgate";

/// Guidance sent to clients at initialization / discovery.
pub const INSTRUCTIONS: &str = "muxgate drives the tmux servers of one host on your behalf. \
Start with list_servers: it names the tmux servers this gateway may drive, and other tools select \
one by that name. Tool failures you can fix come back as results with isError set, a message and \
a one-line suggestion; follow the suggestion instead of retrying the same call.";

/// What tool handlers can reach. Shared by every MCP session.
#[derive(Debug)]
pub struct McpState {
    pub config: Arc<Config>,
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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCallContext::new(self, request, context);
        let response = self.inner.tools.call(call).await?;
        Ok(error::normalize_argument_error(response))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: self.inner.tools.list_all(),
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
