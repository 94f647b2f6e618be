//! [`ConformanceServer`]: muxgate's MCP handler with the suite's fixtures beside its catalog.
//!
//! Every request goes to the real [`McpServer`] unless it names a fixture, so the suite's
//! transport, lifecycle, session, error and caching scenarios exercise production code.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ContentBlock,
    DiscoverResult, GetPromptRequestParams, GetPromptResponse, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::fixtures;
use crate::mcp::McpServer;

/// Pause between the fixture's progress notifications, so clients see them as separate events.
const PROGRESS_STEP: std::time::Duration = std::time::Duration::from_millis(50);

/// muxgate's handler plus the conformance fixtures. Cloning is cheap.
#[derive(Clone)]
pub struct ConformanceServer {
    inner: McpServer,
}

impl ConformanceServer {
    /// muxgate's handler `inner`, with the fixtures added.
    pub fn new(inner: McpServer) -> Self {
        Self { inner }
    }

    /// `test_tool_with_progress`: progress 0, 50, 100 of 100 on the caller's token, then the
    /// token as text.
    async fn call_progress_tool(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = context.meta.get_progress_token();
        if let Some(token) = &token {
            for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if step > 0 {
                    tokio::time::sleep(PROGRESS_STEP).await;
                }
                let param = ProgressNotificationParam::new(token.clone(), progress)
                    .with_total(100.0)
                    .with_message(format!("Completed step {progress} of 100"));
                // A client that went away just misses its progress.
                let _ = context.peer.notify_progress(param).await;
            }
        }
        let text = token.map_or_else(|| "0".to_owned(), |t| t.0.to_string());
        Ok(rmcp::model::CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.initialize(request, context).await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.inner.discover(context).await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.inner.ping(context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == fixtures::PROGRESS_TOOL {
            return self.call_progress_tool(context).await;
        }
        if fixtures::is_tool(&request.name) {
            return fixtures::call(&request.name, request.arguments.as_ref()).map(Into::into);
        }
        self.inner.call_tool(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut result = self.inner.list_tools(request, context).await?;
        result.tools.extend(fixtures::tools());
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        fixtures::tools()
            .into_iter()
            .find(|t| t.name == name)
            .or_else(|| self.inner.get_tool(name))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let first_page = request.as_ref().and_then(|r| r.cursor.as_ref()).is_none();
        let mut result = self.inner.list_resources(request, context).await?;
        if first_page {
            result.resources.extend(fixtures::resources());
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut result = self.inner.list_resource_templates(request, context).await?;
        result.resource_templates.extend(fixtures::templates());
        Ok(result)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        self.inner.listen(subscription).await
    }

    #[allow(deprecated)] // The 2025 sessions' way, as muxgate's handler serves it.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.subscribe(request, context).await
    }

    #[allow(deprecated)] // See `subscribe`.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.unsubscribe(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // Any other URI, an unknown `test://` one too, goes on to muxgate, whose not-found
        // error is under test.
        if let Some(found) = fixtures::read(&request.uri) {
            return found.map(Into::into);
        }
        self.inner.read_resource(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut result = self.inner.list_prompts(request, context).await?;
        result.prompts.extend(fixtures::prompts());
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if fixtures::is_prompt(&request.name) {
            return fixtures::prompt(&request.name, request.arguments.as_ref()).map(Into::into);
        }
        self.inner.get_prompt(request, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.inner.complete(request, context).await
    }
}
