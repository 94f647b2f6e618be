//! The MCP server: what muxgate says about itself and which tools it serves.
//!
//! [`McpServer`] is rmcp's `ServerHandler`. The HTTP layer builds one per MCP session (or per
//! request for stateless clients) by cloning a prototype, so it is a cheap handle around shared
//! state. It declares only the capabilities it serves (tools, resources and subscriptions to
//! the fleet resource, prompts, and the Skills extension) and refuses the other methods
//! (completion), which rmcp would otherwise answer with empty results.
//!
//! - [`tools`]: the tool groups and the combined router;
//! - [`resources`]: the `tmux://` resources, read through the same access rules as tools;
//! - [`fleet_feed`]: the fleet resource's changes, for its subscribers;
//! - [`prompts`]: recipes naming the tools to call for common jobs;
//! - [`skill`]: the SKILL.md that teaches an agent the gateway (Skills extension, resource,
//!   prompt);
//! - [`approval`]: calls the `[approvals]` policy holds until a human decides;
//! - [`inbox_desk`]: what the inbox reads and types for an approver (held calls' screens,
//!   blocked agents, answers);
//! - [`recording`]: the recordings a call's panes get by rule, named in its audit record;
//! - [`call`]: what happens around every call (scope check, rate limit, audit, metrics) and
//!   how long-running tools end at shutdown ([`McpState::until_shutdown`]);
//! - [`access`]: how a tool reaches tmux for a caller (server choice, target ACL, errors);
//! - [`zellij_access`]: the same for the `zellij_*` tools (server, session, ACL, errors, waits);
//! - [`self_guard`]: destructive tools never take down the tmux object the gateway runs in;
//! - [`shared_tool`]: the contract of a tool both backends serve: one body, and how a call
//!   reaches the backend its server names;
//! - [`listing`]: what the listing tools ask of a backend (its rows);
//! - [`window_creation`]: what `create_window` asks of a backend;
//! - [`error`]: [`ToolError`], the `isError` result a model can act on;
//! - [`args`]: helpers for tool input structs;
//! - [`filter`]: Django-style filters applied to listing rows;
//! - [`pane_ops`]: pane operations (listing, input, capture) reused by several tools;
//! - [`links`]: where the links tools give humans (secret entry, live view) point;
//! - [`catalog`]: the catalog as data (tiers) and as Markdown (`muxgate tools`).
//!
//! Every request the handler serves is observed (span, duration histogram, log line) by
//! [`crate::telemetry::mcp`].
//!
//! Not here: transport and authentication (see [`crate::http`], [`crate::auth`]: the HTTP layers
//! put the caller's `Principal` into every request), the multiplexer itself ([`crate::mux`]).

pub(crate) mod access;
mod agent_follow;
mod agent_wait;
pub(crate) mod agent_watch;
pub(crate) mod answers;
pub(crate) mod approval;
pub(crate) mod args;
pub mod backend;
pub(crate) mod budget;
pub(crate) mod call;
pub mod catalog;
pub(crate) mod command_run;
pub(crate) mod error;
pub(crate) mod fields;
pub(crate) mod filter;
pub(crate) mod fleet_feed;
pub(crate) mod heartbeat;
pub(crate) mod inbox_desk;
pub(crate) mod input_batch;
pub(crate) mod json_answer;
pub(crate) mod links;
pub(crate) mod listing;
mod once;
pub(crate) mod pane_access;
pub(crate) mod pane_ops;
pub(crate) mod pane_state;
pub(crate) mod position;
pub(crate) mod prompts;
pub(crate) mod recording;
pub(crate) mod render;
pub(crate) mod resources;
pub(crate) mod row_object;
pub(crate) mod scoped;
pub(crate) mod self_guard;
pub(crate) mod shared_tool;
pub(crate) mod skill;
pub(crate) mod text_wait;
pub(crate) mod tools;
pub(crate) mod window_creation;
pub(crate) mod zellij_access;

use std::sync::Arc;

use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, GetSkillRequestParams, GetSkillResult, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResultType,
    SKILLS_EXTENSION_ID, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use resources::ResourceUri;
use tokio_util::sync::CancellationToken;

use crate::approvals::{ApprovalDesk, ApprovalPolicy};
use crate::audit::AuditLog;
use crate::auth::Tier;
use crate::auth::owners::SessionOwners;
use crate::config::Config;
use crate::limits::Limits;
use crate::recordings::Recorder;
use crate::secret_entry::{PaneDestination, SecretDesk};
use crate::telemetry::Metrics;
use crate::telemetry::mcp::{RequestObserver, Requester, ToolName, is_tool_error};
use crate::workspace::Workspaces;
pub use call::CallContext;
pub use error::{ToolError, ToolErrorKind};
use heartbeat::Heartbeat;
use muxgate_tmux::TmuxEngine;
use muxgate_zellij::servers::ZellijServers;

/// The name muxgate reports in `serverInfo`.
pub const SERVER_NAME: &str = "muxgate";

/// Guidance sent to clients at initialization / discovery.
pub const INSTRUCTIONS: &str = "muxgate drives the tmux servers of one host on your behalf. \
Start with list_servers: it names the servers this gateway may drive, and other tools select \
one by that name (`server`; omit it when there is only one). A Zellij server (backend zellij) is read \
with capture_pane too; its other acts have zellij_* tools (tabs, not windows; panes terminal_N). Tool failures you can fix come back as results with isError set, a message and \
a one-line suggestion; follow the suggestion instead of retrying the same call. A tmux `target` is \
an id (`%N` pane, `@N` window, `$N` session), a session name, or `SESSION:WINDOW.PANE` / \
`SESSION:WINDOW` (indexes, or an exact window name), matched exactly; answers name ids.";

/// What tool handlers can reach. Shared by every MCP session.
pub struct McpState {
    /// The configuration the gateway started with.
    pub config: Arc<Config>,
    /// The configured tmux servers (and, in workspace mode, the tenants' ones).
    pub tmux: TmuxEngine,
    /// The other machines the configured servers run on, and their links.
    pub hosts: Arc<crate::hosts::Hosts>,
    /// The configured Zellij servers (the `zellij_*` tools).
    pub zellij: ZellijServers,
    /// Each client's rate limits and budgets.
    pub limits: Arc<Limits>,
    /// The audit log every call writes to.
    pub audit: Arc<AuditLog>,
    /// Where the gateway itself runs, when inside tmux (see [`self_guard`]).
    pub self_location: Option<self_guard::SelfLocation>,
    /// The metrics `/metrics` exposes.
    pub metrics: Arc<Metrics>,
    /// Who created which session (gateway state, saved in the state directory).
    pub owners: Arc<SessionOwners>,
    /// Each tenant's own sandboxed tmux server, in workspace mode.
    pub workspaces: Option<Workspaces>,
    /// Cancelled when the gateway begins shutting down; waits end on it (see
    /// [`McpState::until_shutdown`]).
    pub shutdown: CancellationToken,
    /// What agent CLIs' hooks last reported about their panes (`report_agent_state`).
    pub agent_reports: crate::mux::agent_report::AgentReports,
    /// The agent CLIs known by their manifests (claude-code, codex, …).
    pub(crate) agent_kinds: crate::mux::agent_kind::AgentKinds,
    /// The spawned agents whose states are followed (for `[notify]`).
    pub(crate) agent_watches: agent_watch::AgentWatches,
    /// The idempotency keys of the calls that carry one, per tool.
    pub(crate) answers: once::OnceKeys<crate::mcp::tools::agent_answer::AnswerAgentOutput>,
    pub(crate) prompts: once::OnceKeys<crate::mcp::tools::prompt::SendPromptOutput>,
    /// Every read of an agent's state, for the followers of its pane.
    pub(crate) agent_reads: agent_follow::StateReads,
    /// The fleet's changes, for the subscribers of its resources.
    pub(crate) fleet_feed: fleet_feed::FleetFeed,
    /// The agents `spawn_agent` started, by server scope and id.
    pub(crate) fleet: crate::fleet::registry::Fleet,
    /// Which agent kind ran in which pane, and since when.
    pub(crate) agent_sightings: crate::mux::agent_status::AgentSightings,
    /// Where events a human should know of go (`[notify]`).
    pub(crate) notifier: crate::notify::Notifier,
    /// Which calls wait for a human (`[approvals]`), and the desk where they wait.
    pub approval_policy: Arc<ApprovalPolicy>,
    /// The calls held for a human's decision.
    pub approvals: ApprovalDesk,
    /// The pane each held call names, for the inbox.
    pub(crate) held_targets: approval::HeldTargets,
    /// Open secret entry requests (`request_secret_input`, typed through `/secret`).
    pub secrets: SecretDesk<PaneDestination>,
    /// Panes' output recorded as casts (`[recordings]`; disabled unless enabled).
    pub recorder: Recorder,
    /// The key live-view links are signed with (`view_link`).
    pub view_key: crate::view::link::ViewKey,
}

impl McpState {
    /// The multiplexers with at least one server: only their tools are listed.
    fn backends(&self) -> Vec<catalog::Backend> {
        let config = &self.config;
        let tmux = !config.tmux.servers.is_empty()
            || !config.hosts.is_empty()
            || config.workspaces.enabled;
        let zellij = !config.zellij.servers.is_empty();
        [
            tmux.then_some(catalog::Backend::Tmux),
            zellij.then_some(catalog::Backend::Zellij),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The rmcp `ServerHandler` for muxgate. Cloning is cheap (one `Arc`).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    state: McpState,
    tools: ToolRouter<McpServer>,
    /// What `tools/list` may show (tools of a backend with a server), with their toolsets.
    listable: Vec<(Tool, catalog::Toolset)>,
}

impl McpServer {
    /// The handler over `state`, with the tools of the backends it has servers for.
    pub fn new(state: McpState) -> Self {
        let backends = state.backends();
        let tools = catalog::router(state.config.limits.max_batch_ops.get(), &backends);
        let listable = catalog::listable(&tools, &backends);
        Self {
            inner: Arc::new(Inner {
                state,
                tools,
                listable,
            }),
        }
    }

    /// What tool handlers can reach.
    pub fn state(&self) -> &McpState {
        &self.inner.state
    }

    /// Starts observing one request (span, duration, log line).
    fn observe(
        &self,
        method: &'static str,
        tool: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> RequestObserver {
        let tool = tool.map(|name| ToolName {
            name,
            known: self.inner.tools.get(name).is_some(),
        });
        let who = CallContext::from_request(context).map_or_else(Requester::default, |caller| {
            Requester {
                sub: Some(caller.principal.sub),
                mcp_session: caller.mcp_session,
            }
        });
        RequestObserver::start(&self.state().metrics, method, tool, context, who)
    }

    /// A tool call, in stages: begin (the start record), clear (scope and rate, a human's
    /// approval where a rule holds the call, the recordings rules start), run the tool, end
    /// (the end record and metric, written by [`call::RunningCall`] on every way out).
    async fn run_call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = authenticated(&context)?;
        let Some(tool) = self.inner.tools.get(&request.name) else {
            // Unknown tool: the router answers with the JSON-RPC error.
            return self
                .inner
                .tools
                .call(ToolCallContext::new(self, request, context))
                .await;
        };
        let tier = catalog::tier::tier_of(tool);
        let state = self.state();
        let running = match call::begin(state, &caller, &request, tool).await {
            Ok(running) => running,
            Err(refused) => return Ok(refused.into_result().into()),
        };
        let approved = match self
            .clear(&running, &caller, &request, tier, &context)
            .await
        {
            Ok(approved) => approved,
            Err(refusal) => return Ok(running.refused(refusal)),
        };
        context.extensions.insert(caller.clone());
        let (outcome, error) = error::noting_kinds(self.run_tool(&caller, &request, context)).await;
        match outcome {
            Ok(mut response) => {
                if let Some(approved) = approved {
                    approved.annotate(&mut response);
                }
                running.answered(&response, error);
                Ok(response)
            }
            Err(protocol) => {
                running.failed();
                Err(protocol)
            }
        }
    }

    /// Whether a begun call may run: the caller's scopes and rate, then a human's approval
    /// where a rule holds the call, then the recordings the rules start. `Ok` carries the
    /// approval to note on the answer.
    async fn clear(
        &self,
        running: &call::RunningCall<'_>,
        caller: &CallContext,
        request: &CallToolRequestParams,
        tier: Tier,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<approval::Approved>, call::Refusal> {
        let state = self.state();
        call::admit(caller, tier, &state.limits)?;
        let held = approval::HeldRequest {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            cancelled: context.ct.clone(),
        };
        // Boxed, as is the recordings check below: they are over before the tool runs, and
        // inline they would size this future for the whole of a long call.
        let hold = approval::hold_if_needed(state, caller, request, tier, running.audit(), held);
        let approved = Box::pin(hold).await?;
        Box::pin(self.note_recordings(caller, request, running.audit())).await?;
        Ok(approved)
    }

    /// Runs the tool (with progress notifications while it takes long) and shapes its answer:
    /// rmcp's argument errors in the tool-error form, rendering, the caller's output budget.
    async fn run_tool(
        &self,
        caller: &CallContext,
        request: &CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let state = self.state();
        let heartbeat = Heartbeat::for_call(
            &request.name,
            request.arguments.as_ref(),
            context.meta.get_progress_token(),
            context.peer.clone(),
            state.config.http.progress_interval(),
            state.limits.max_wait(caller.sub()),
        );
        let running = self
            .inner
            .tools
            .call(ToolCallContext::new(self, request.clone(), context));
        let response = match heartbeat {
            Some(heartbeat) => heartbeat.around(running).await,
            None => running.await,
        }?;
        let mut response = error::normalize_argument_error(response);
        render::shape(&mut response);
        Ok(call::within_output_budget(response, caller, &state.limits))
    }

    async fn run_list_tools(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = authenticated(&context)?;
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let principal = &caller.principal;
        let tools = self
            .inner
            .listable
            .iter()
            .filter(|(tool, toolset)| {
                principal.toolsets.contains(*toolset) && call::visible(principal, tool)
            })
            .map(|(tool, _)| tool.clone())
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
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    // Every method below is wrapped in `observe`; a method added here should be too.

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let observer = self.observe("initialize", None, &context);
        // rmcp's default `initialize`, observed.
        context.peer.set_peer_info(request.clone());
        let answer = self.negotiate_initialize(&request);
        observer.run(async { answer }, |_| false).await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let observer = self.observe("server/discover", None, &context);
        // rmcp's default `discover`, observed.
        let answer = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        observer.run(async { Ok(answer) }, |_| false).await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let observer = self.observe("ping", None, &context);
        observer.run(async { Ok(()) }, |_| false).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let observer = self.observe("tools/call", Some(&request.name), &context);
        observer
            .run(self.run_call_tool(request, context), is_tool_error)
            .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let observer = self.observe("tools/list", None, &context);
        observer.run(self.run_list_tools(context), |_| false).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.get(name).cloned()
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let observer = self.observe("resources/list", None, &context);
        let answer = async {
            let caller = authenticated(&context)?;
            let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
            let with_skill = !negotiated_skills(&context);
            let result = self.list_resources_for(&caller, cursor, with_skill).await?;
            Ok(with_cache_hints(&context, result, |r, ttl, scope| {
                r.ttl_ms = ttl;
                r.cache_scope = scope;
            }))
        };
        observer.run(answer, |_| false).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let observer = self.observe("resources/templates/list", None, &context);
        let answer = async {
            authenticated(&context)?;
            Ok(self.resource_templates())
        };
        observer.run(answer, |_| false).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let observer = self.observe("resources/read", None, &context);
        let answer = async {
            let caller = authenticated(&context)?;
            let result = self.read_resource_for(&caller, &request.uri).await?;
            Ok(with_cache_hints(&context, result, |r, ttl, scope| {
                r.ttl_ms = ttl;
                r.cache_scope = scope;
            })
            .into())
        };
        observer.run(answer, |_| false).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Only the fleet resources send updates; whether the caller may follow each is
        // checked when the subscription starts (`listen`).
        let agents = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| matches!(ResourceUri::parse(uri), Ok(ResourceUri::Agents { .. })))
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(agents);
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let observer = self.observe("subscriptions/listen", None, subscription.request_context());
        observer
            .run(self.run_listen(&subscription), |_| false)
            .await
    }

    #[allow(deprecated)] // The 2025 sessions' way, served beside `subscriptions/listen`.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let observer = self.observe("resources/subscribe", None, &context);
        let answer = async {
            let caller = authenticated(&context)?;
            let followed = self.followed(&caller, &request.uri).await?;
            let Some(session) = caller.mcp_session.as_deref() else {
                return Err(ErrorData::invalid_request(
                    "resources/subscribe needs a session; at 2026-07-28 use subscriptions/listen",
                    None,
                ));
            };
            let stop = self.state().shutdown.child_token();
            let feed = &self.state().fleet_feed;
            let principal = caller.principal.clone();
            if !feed.subscribe_session(session, followed, principal, context.peer.clone(), stop) {
                return Err(ErrorData::invalid_request(
                    format!(
                        "this session follows {} resources already",
                        fleet_feed::MAX_PER_SESSION
                    ),
                    None,
                ));
            }
            Ok(())
        };
        observer.run(answer, |_| false).await
    }

    #[allow(deprecated)] // See `subscribe`.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let observer = self.observe("resources/unsubscribe", None, &context);
        let answer = async {
            let caller = authenticated(&context)?;
            if let Some(session) = caller.mcp_session.as_deref() {
                self.state()
                    .fleet_feed
                    .unsubscribe_session(session, &request.uri);
            }
            Ok(())
        };
        observer.run(answer, |_| false).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let observer = self.observe("prompts/list", None, &context);
        let answer = async {
            authenticated(&context)?;
            let mut list = prompts::list();
            if !negotiated_skills(&context) {
                list.push(skill::prompt());
            }
            Ok(ListPromptsResult::with_all_items(list))
        };
        observer.run(answer, |_| false).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let observer = self.observe("prompts/get", None, &context);
        let answer = async {
            authenticated(&context)?;
            let no_arguments = request.arguments.as_ref().is_none_or(|a| a.is_empty());
            if request.name == skill::PROMPT_NAME && no_arguments {
                return Ok(skill::get_prompt().into());
            }
            Ok(prompts::get(&request.name, request.arguments.as_ref())?.into())
        };
        observer.run(answer, |_| false).await
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let observer = self.observe("skills/list", None, &context);
        let answer = async {
            authenticated(&context)?;
            Ok(ListSkillsResult::with_all_items(vec![skill::entry()]))
        };
        observer.run(answer, |_| false).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let observer = self.observe("skills/get", None, &context);
        let answer = async {
            authenticated(&context)?;
            if request.uri != skill::URI {
                return Err(ErrorData::invalid_params(
                    format!(
                        "no skill is served at {:?}; this gateway serves {}",
                        request.uri.chars().take(64).collect::<String>(),
                        skill::URI
                    ),
                    None,
                ));
            }
            Ok(GetSkillResult::new(skill::entry()))
        };
        observer.run(answer, |_| false).await
    }

    // Capabilities not declared in `get_info` are refused rather than answered empty.

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let observer = self.observe("completion/complete", None, &context);
        let refusal = Err(ErrorData::method_not_found::<CompleteRequestMethod>());
        observer.run(async { refusal }, |_| false).await
    }
}

impl McpServer {
    /// A 2026-07-28 subscription to fleet resources: each accepted URI the caller may read is
    /// told of every change it may see, until the request ends or the gateway shuts down.
    async fn run_listen(&self, subscription: &SubscriptionContext) -> Result<(), ErrorData> {
        let caller = authenticated(subscription.request_context())?;
        let mut followed = Vec::new();
        for uri in subscription
            .accepted()
            .resource_subscriptions
            .iter()
            .flatten()
        {
            followed.push(self.followed(&caller, uri).await?);
        }
        let mut listener = self.state().fleet_feed.listen();
        let shutdown = &self.state().shutdown;
        loop {
            let heard = tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                () = shutdown.cancelled() => return Ok(()),
                heard = listener.next(&caller.principal, &followed) => heard,
            };
            let uri = match heard {
                fleet_feed::Heard::Updated(uri) | fleet_feed::Heard::Missed(uri) => uri,
                fleet_feed::Heard::Closed => return Ok(()),
            };
            if subscription
                .sink()
                .notify_resource_updated(uri)
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }
}

/// The caller the HTTP auth layer established; its absence is a wiring fault, not a client error.
fn authenticated(context: &RequestContext<RoleServer>) -> Result<CallContext, ErrorData> {
    CallContext::from_request(context).ok_or_else(|| {
        tracing::error!("MCP request without an authenticated principal; check the HTTP layers");
        ErrorData::internal_error("request not authenticated", None)
    })
}

/// For 2026-07-28 clients: results that depend on the caller and on tmux's changing state must
/// not be cached or shared (`ttlMs` 0, private). Older clients get no cache fields.
fn with_cache_hints<T>(
    context: &RequestContext<RoleServer>,
    mut result: T,
    set: impl FnOnce(&mut T, Option<u64>, Option<CacheScope>),
) -> T {
    let hints = context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if hints {
        set(&mut result, Some(0), Some(CacheScope::Private));
    }
    result
}

/// Whether the client declared the Skills extension (at `initialize`, or in this request's
/// `_meta`): then the skill reaches it through `skills/list`, and is not listed again as a plain
/// resource and a prompt.
fn negotiated_skills(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|capabilities| {
        capabilities
            .extensions
            .is_some_and(|extensions| extensions.contains_key(SKILLS_EXTENSION_ID))
    })
}

/// What muxgate declares at `initialize` and `server/discover`: tools, resources, prompts and
/// the Skills extension (which rides on resources).
pub fn server_config() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_skills()
            .build(),
    )
    .with_server_info(
        Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
            .with_title("muxgate")
            .with_description("MCP gateway to terminal multiplexers (tmux)"),
    )
    .with_instructions(INSTRUCTIONS)
}
