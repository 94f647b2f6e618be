//! The batch tools: `send_keys_batch` (keystrokes for several panes, in order, in one tmux
//! round trip) and `pane_batch` (send → wait → capture in one call).
//!
//! Every operation is checked first (its fields, key names, target); then the input of all the
//! operations that may run goes to tmux as ONE pipelined batch. With `on_error: stop` the batch
//! stops at the first operation that fails (in validation or in tmux) and the rest are reported
//! as not run; with `continue` each operation stands alone. The optional `timeout` bounds the
//! whole call, the write to tmux included. Per-operation progress notifications (one per
//! operation, sent as the results are known: the single write settles them together) go to
//! clients that sent a progress token, for batches of more than three operations.
//!
//! `pane_batch` runs heterogeneous operations one after the other (a wait must see the output
//! of the keys sent before it), each exactly as its own tool would, under the same `on_error`
//! and whole-batch `timeout` rules. No nesting: only the five pane tools it names.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;

use crate::mcp::json_answer::Json;
use rmcp::model::{ProgressNotificationParam, RequestMetaObject};
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::input::{Keystrokes, PasteTextInput, SendKeysInput, TextEncoding, keys_input};
use super::pane::CapturePaneInput;
use super::since::CaptureSinceInput;
use super::wait::WaitForTextInput;
use crate::limits::Limits;
use crate::mcp::McpServer;
use crate::mcp::backend::Backend;
use crate::mcp::call::CallContext;
use crate::mcp::error::{ToolError, ToolErrorKind};
use crate::mcp::input_batch::{BatchInput, DeliveredBatch, batch_timed_out};
use crate::mcp::pane_access::PaneAccess;
use crate::mcp::position::ZellijPosition;
use crate::mcp::shared_tool::{MuxTool, Reply};
use muxgate_mux::multiplexer::BatchOutcome;
use muxgate_tmux::OutputSubscription;
use muxgate_zellij::unsupported;

/// Batches of at most this many operations send no progress notifications.
const QUIET_BATCH: usize = 3;
/// Longest `timeout` a client may give, in seconds.
const MAX_TIMEOUT_SECS: f64 = 300.0;

/// One operation of a batch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeysOp {
    /// Pane `%N`; a window or session: its active pane.
    pub target: String,
    #[serde(flatten)]
    pub keystrokes: Keystrokes,
}

/// What to do after an operation fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnError {
    #[default]
    Stop,
    Continue,
}

/// The operations of a `send_keys_batch`.
#[derive(Debug, Clone)]
pub(crate) struct KeysOps(pub Vec<KeysOp>);

impl<'de> Deserialize<'de> for KeysOps {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        each_indexed(deserializer).map(KeysOps)
    }
}

/// A batch's operations, each deserialized on its own so that an error names its index
/// (`operations[2]: unknown field …`) instead of the whole array.
fn each_indexed<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: de::DeserializeOwned,
{
    let values = Vec::<serde_json::Value>::deserialize(deserializer)?;
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            serde_json::from_value(value)
                .map_err(|e| de::Error::custom(format!("operations[{index}]: {e}")))
        })
        .collect()
}

impl JsonSchema for KeysOps {
    // Inline, so that `maxItems` can be set on the array itself (see the catalog's `advertise_max_batch_ops`).
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KeysOps".into()
    }

    // The fields mean what send_keys' arguments mean, and send_keys' listing says so once:
    // here they are named and typed only.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = crate::mcp::catalog::compact::terse_schema_for::<Vec<KeysOp>>();
        schema.insert("minItems".into(), 1.into());
        schema
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendKeysBatchInput {
    #[serde(default)]
    pub server: Option<String>,
    /// send_keys arguments (without `server`) per operation, run in order.
    pub operations: KeysOps,
    /// "stop": the first failure ends the batch; "continue": run the others anyway.
    #[serde(default)]
    pub on_error: OnError,
    /// Seconds for the whole batch (default: the gateway's command timeout).
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// The result of one operation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct OpResult {
    pub index: usize,
    /// The pane the input went to (empty when the target was not valid).
    pub pane_id: String,
    pub success: bool,
    /// Why it failed, or "not run" after an earlier failure with `on_error: stop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Time from the start of the batch until this operation was settled.
    pub elapsed_ms: u64,
}

/// A batch's answer: each operation's result, in order, and how many succeeded and failed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct BatchResults<R> {
    pub results: Vec<R>,
    pub succeeded: usize,
    pub failed: usize,
    /// Index of the operation that stopped the batch (`on_error: stop`), if one did.
    pub stopped_at: Option<usize>,
}

impl<R> BatchResults<R> {
    /// Counts `results` by whether `success` holds for each.
    fn tally(results: Vec<R>, stopped_at: Option<usize>, success: impl Fn(&R) -> bool) -> Self {
        let succeeded = results.iter().filter(|r| success(r)).count();
        Self {
            failed: results.len() - succeeded,
            succeeded,
            stopped_at,
            results,
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SendKeysBatchOutput {
    #[serde(flatten)]
    pub batch: BatchResults<OpResult>,
    /// Per pane typed into: its `output_position` before the batch's input (wait_for_text
    /// `since`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub output_positions: BTreeMap<String, String>,
}

impl SendKeysBatchOutput {
    /// The answer from each operation's result (`None`: not run, after an earlier failure
    /// under `on_error: stop`).
    fn of(
        results: Vec<Option<OpResult>>,
        stopped_at: Option<usize>,
        output_positions: BTreeMap<String, String>,
        started: Instant,
    ) -> Self {
        let results: Vec<OpResult> = results
            .into_iter()
            .enumerate()
            .map(|(index, result)| result.unwrap_or_else(|| not_run(index, String::new(), started)))
            .collect();
        Self {
            batch: BatchResults::tally(results, stopped_at, |r| r.success),
            output_positions,
        }
    }
}

/// `send_keys_batch`'s call: its operations (as many as the caller may send) and when the
/// batch must end.
struct KeysBatch<'a> {
    server: Option<&'a str>,
    ops: &'a [KeysOp],
    on_error: OnError,
    deadline: Instant,
}

impl MuxTool for KeysBatch<'_> {
    type Answer = SendKeysBatchOutput;

    fn server(&self) -> Option<&str> {
        self.server
    }

    /// Every operation is checked first, in order (under `stop`, nothing after the first
    /// invalid one is sent); then the backend delivers the rest ([`PaneAccess::deliver_batch`]).
    async fn act<A: PaneAccess>(self, _: &McpServer, access: A) -> Reply<Self> {
        let started = Instant::now();
        let stop = self.on_error == OnError::Stop;
        let mut results: Vec<Option<OpResult>> = vec![None; self.ops.len()];
        let mut stopped_at = None;
        let mut ready = Vec::new();
        for (index, op) in self.ops.iter().enumerate() {
            match checked_input(&access, op).await {
                Ok(input) => ready.push((index, input)),
                Err(error) => {
                    results[index] = Some(failure(index, String::new(), &error, started));
                    if stop {
                        stopped_at = Some(index);
                        break;
                    }
                }
            }
        }
        let (indices, inputs): (Vec<usize>, Vec<BatchInput<A::Mux>>) = ready.into_iter().unzip();
        let panes: Vec<String> = inputs.iter().map(|op| op.pane.pane.to_string()).collect();
        let batch = if inputs.is_empty() {
            DeliveredBatch::default()
        } else {
            access.deliver_batch(inputs, stop, self.deadline).await?
        };
        for ((&index, pane), outcome) in indices.iter().zip(panes).zip(batch.outcomes) {
            results[index] = Some(match outcome {
                BatchOutcome::Delivered => delivered(index, pane, started),
                BatchOutcome::Failed(error) => failure(index, pane, &error, started),
                BatchOutcome::NotRun => not_run(index, pane, started),
                BatchOutcome::TimedOut => failure(index, pane, &batch_timed_out(), started),
            });
        }
        if let Some(&at) = batch.stopped_at.and_then(|op| indices.get(op)) {
            stopped_at = Some(stopped_at.map_or(at, |before: usize| before.min(at)));
        }
        Ok(SendKeysBatchOutput::of(
            results,
            stopped_at,
            batch.positions,
            started,
        ))
    }
}

/// One operation checked: its keystrokes parsed, its target a pane the caller may type into,
/// its input one the backend can type.
async fn checked_input<A: PaneAccess>(
    access: &A,
    op: &KeysOp,
) -> Result<BatchInput<A::Mux>, ToolError> {
    let (input, typed) = keys_input(&op.keystrokes)?;
    let pane = access.pane(&op.target).await?;
    access.check_input(&pane, &input)?;
    Ok(BatchInput { pane, input, typed })
}

fn delivered(index: usize, pane_id: String, started: Instant) -> OpResult {
    OpResult {
        index,
        pane_id,
        success: true,
        error: None,
        suggestion: None,
        elapsed_ms: elapsed_ms(started),
    }
}

fn failure(index: usize, pane_id: String, error: &ToolError, started: Instant) -> OpResult {
    OpResult {
        index,
        pane_id,
        success: false,
        error: Some(error.message.clone()),
        suggestion: Some(error.suggestion.clone()),
        elapsed_ms: elapsed_ms(started),
    }
}

fn not_run(index: usize, pane_id: String, started: Instant) -> OpResult {
    OpResult {
        index,
        pane_id,
        success: false,
        error: Some("not run: an earlier operation failed (on_error: stop)".to_owned()),
        suggestion: Some("fix the failed operation and send the rest again".to_owned()),
        elapsed_ms: elapsed_ms(started),
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One operation of a `pane_batch`: the tool to run and its arguments (as for the tool itself,
/// without `server`, which the batch gives).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum PaneOp {
    SendKeys(SendKeysInput),
    PasteText(PasteTextInput),
    WaitForText(WaitForTextInput),
    CapturePane(CapturePaneInput),
    CaptureSince(CaptureSinceInput),
}

impl PaneOp {
    /// Every operation's name, as `op` spells it.
    const NAMES: [&str; 5] = [
        "send_keys",
        "paste_text",
        "wait_for_text",
        "capture_pane",
        "capture_since",
    ];

    fn name(&self) -> &'static str {
        match self {
            PaneOp::SendKeys(_) => "send_keys",
            PaneOp::PasteText(_) => "paste_text",
            PaneOp::WaitForText(_) => "wait_for_text",
            PaneOp::CapturePane(_) => "capture_pane",
            PaneOp::CaptureSince(_) => "capture_since",
        }
    }

    /// The text an input operation types (key names left out), as the pane would echo it.
    fn typed_text(&self) -> Option<String> {
        match self {
            PaneOp::SendKeys(input) => super::input::typed_text(&input.keystrokes),
            PaneOp::PasteText(input) => {
                (input.encoding == TextEncoding::Utf8).then(|| input.text.clone())
            }
            _ => None,
        }
    }

    /// The operation's own `server`, which must be absent or the batch's.
    fn server(&self) -> Option<&str> {
        match self {
            PaneOp::SendKeys(i) => i.server.as_deref(),
            PaneOp::PasteText(i) => i.server.as_deref(),
            PaneOp::WaitForText(i) => i.server.as_deref(),
            PaneOp::CapturePane(i) => i.server.as_deref(),
            PaneOp::CaptureSince(i) => i.server.as_deref(),
        }
    }

    fn server_mut(&mut self) -> &mut Option<String> {
        match self {
            PaneOp::SendKeys(i) => &mut i.server,
            PaneOp::PasteText(i) => &mut i.server,
            PaneOp::WaitForText(i) => &mut i.server,
            PaneOp::CapturePane(i) => &mut i.server,
            PaneOp::CaptureSince(i) => &mut i.server,
        }
    }
}

/// The operations of a `pane_batch`.
#[derive(Debug)]
pub(crate) struct PaneOps(pub Vec<PaneOp>);

impl<'de> Deserialize<'de> for PaneOps {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        each_indexed(deserializer).map(PaneOps)
    }
}

impl JsonSchema for PaneOps {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PaneOps".into()
    }

    // Each operation takes its tool's own arguments, which that tool's listing describes; a
    // second copy of five schemas here would be most of the tool list's size. The arguments are
    // checked when the batch is parsed, with errors that name the operation's index.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["op"],
                "properties": {"op": {"enum": PaneOp::NAMES}},
            },
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaneBatchInput {
    /// Server name (list_servers) for every operation; omit if only one.
    #[serde(default)]
    pub server: Option<String>,
    /// In order, each `{"op": "<tool>", …that tool's arguments}`.
    pub operations: PaneOps,
    /// "stop": the first failure ends the batch; "continue": run the others anyway.
    #[serde(default)]
    pub on_error: OnError,
    /// Seconds for the whole batch (default 60); waits get what is left.
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// The result of one `pane_batch` operation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct PaneOpResult {
    pub index: usize,
    pub op: String,
    pub success: bool,
    /// The operation's structured result, as its own tool returns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Time from the start of the batch until this operation ended.
    pub elapsed_ms: u64,
}

pub(crate) type PaneBatchOutput = BatchResults<PaneOpResult>;

/// `pane_batch`'s timeout when the client gives none.
const DEFAULT_PANE_BATCH_TIMEOUT: Duration = Duration::from_secs(60);

fn to_value<T: Serialize>(value: T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|e| ToolError::new(ToolErrorKind::Internal, e.to_string(), "report this"))
}

impl McpServer {
    /// Runs one `pane_batch` operation as its own tool would.
    async fn run_pane_op(
        &self,
        call: &CallContext,
        op: PaneOp,
        remaining: Duration,
        cancel: &CancellationToken,
        subscription: Option<OutputSubscription>,
        typed: &[Typed],
    ) -> Result<serde_json::Value, ToolError> {
        let ext = || Extension(call.clone());
        let zellij = self.backend_of(call, op.server()) == Backend::Zellij;
        match op {
            PaneOp::SendKeys(input) => to_value(self.send_keys(ext(), Parameters(input)).await?.0),
            PaneOp::PasteText(input) => {
                to_value(self.paste_text(ext(), Parameters(input)).await?.0)
            }
            PaneOp::WaitForText(mut input) => {
                let left = remaining.as_secs_f64();
                input.timeout = Some(input.timeout.map_or(left, |t| t.min(left)));
                if zellij {
                    if input.since.is_none() {
                        input.since = zellij_batch_since(typed, &input.target)?;
                    }
                    let z = self.zellij_access(call, input.server.as_deref()).await?;
                    let waited = self.wait_for_text_on(&z, cancel, &input, Vec::new(), None);
                    return to_value(waited.await?);
                }
                // The echo of what the batch typed into this pane before the wait is not output.
                let pane = subscription.as_ref().map(|s| s.pane().to_string());
                let echo = typed
                    .iter()
                    .filter(|t| Some(&t.pane) == pane.as_ref() || t.pane == input.target)
                    .map(|t| t.text.clone())
                    .collect();
                let tmux = self.tmux_access(call, input.server.as_deref()).await?;
                to_value(
                    self.wait_for_text_on(&tmux, cancel, &input, echo, subscription)
                        .await?,
                )
            }
            PaneOp::CapturePane(input) => {
                to_value(self.capture_pane(ext(), Parameters(input)).await?.0)
            }
            PaneOp::CaptureSince(_) if zellij => Err(ToolError::unsupported(
                unsupported::CAPTURE_SINCE,
                "on a Zellij server use capture_pane, or wait_for_text",
            )),
            PaneOp::CaptureSince(input) => {
                to_value(self.capture_since(ext(), Parameters(input)).await?.0)
            }
        }
    }
}

impl McpServer {
    /// A subscription to a wait's pane, taken before the batch runs; `None` when the target
    /// does not resolve (the wait then reports why when its turn comes).
    async fn subscribe_early(
        &self,
        call: &CallContext,
        wait: &WaitForTextInput,
        deadline: Instant,
    ) -> Option<OutputSubscription> {
        let tmux = self.tmux_access(call, wait.server.as_deref()).await.ok()?;
        let pane = tmux.pane_named(&wait.target).await.ok()?;
        super::watch::subscribe(&tmux, pane, deadline).await.ok()
    }
}

#[tool_router(router = batch_tools, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "send_keys_batch",
        description = "Send keystrokes to several panes in order, in one tmux round trip; \
            per-operation results.\n\n\
            All operations are validated first, then sent together. `on_error` \"stop\" reports the rest as not \
            run (`stopped_at`). Then wait_for_text `since` a pane's `output_positions` entry.",
        annotations(
            title = "Send keys to several panes",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send_keys_batch(
        &self,
        Extension(call): Extension<CallContext>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(input): Parameters<SendKeysBatchInput>,
    ) -> Result<Json<SendKeysBatchOutput>, ToolError> {
        let ops = input.operations.0;
        check_batch_size(&self.state().limits, &call, ops.len())?;
        let timeout = batch_timeout(input.timeout, self.state().config.engine.command_timeout())?;
        let deadline = Instant::now() + timeout;
        let batch = KeysBatch {
            server: input.server.as_deref(),
            ops: &ops,
            on_error: input.on_error,
            deadline,
        };
        let output = self.serve(&call, batch).await?;
        if let Some(token) = meta.get_progress_token()
            && ops.len() > QUIET_BATCH
        {
            let total = ops.len() as f64;
            for result in &output.batch.results {
                let outcome = if result.success { "done" } else { "failed" };
                let param =
                    ProgressNotificationParam::new(token.clone(), (result.index + 1) as f64)
                        .with_total(total)
                        .with_message(format!("operation {}: {outcome}", result.index));
                // A client that went away just misses its progress.
                let _ = peer.notify_progress(param).await;
            }
        }
        Ok(Json(output))
    }

    #[tool(
        name = "pane_batch",
        description = "Run pane operations in order in one call: send_keys, paste_text, \
            wait_for_text, capture_pane, capture_since.\n\n\
            Each operation is `{\"op\": \"<tool>\", …}` with that tool's arguments (no `server`), \
            run as the tool would; results carry each tool's result.",
        annotations(
            title = "Batch of pane operations",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn pane_batch(
        &self,
        Extension(call): Extension<CallContext>,
        cancel: CancellationToken,
        Parameters(input): Parameters<PaneBatchInput>,
    ) -> Result<Json<PaneBatchOutput>, ToolError> {
        let ops = input.operations.0;
        check_batch_size(&self.state().limits, &call, ops.len())?;
        // Checked before anything runs: the server, and that the caller may use it.
        let zellij = self.backend_of(&call, input.server.as_deref()) == Backend::Zellij;
        if zellij {
            self.zellij_access(&call, input.server.as_deref()).await?;
        } else {
            self.tmux_access(&call, input.server.as_deref()).await?;
        }
        let timeout = batch_timeout(input.timeout, DEFAULT_PANE_BATCH_TIMEOUT)?;
        let started = Instant::now();
        let deadline = started + timeout;
        // tmux waits watch their pane from the start of the batch, so that they see the output
        // of the operations before them (Zellij waits: see `zellij_batch_since`).
        let mut subscriptions = Vec::with_capacity(ops.len());
        for op in &ops {
            subscriptions.push(match op {
                PaneOp::WaitForText(wait) if !zellij => {
                    self.subscribe_early(&call, wait, deadline).await
                }
                _ => None,
            });
        }
        let names: Vec<&'static str> = ops.iter().map(PaneOp::name).collect();
        let mut results = Vec::with_capacity(ops.len());
        let mut stopped_at = None;
        // Every input operation that ran, for the waits after it.
        let mut typed: Vec<Typed> = Vec::new();
        for ((index, op), subscription) in ops.into_iter().enumerate().zip(subscriptions) {
            let name = op.name();
            let run = BatchStep {
                index,
                batch_server: &input.server,
                deadline,
                cancel: &cancel,
                subscription,
            };
            let outcome = self.run_batch_step(&call, op, run, &mut typed).await;
            if matches!(&outcome, Err(e) if e.kind == ToolErrorKind::Cancelled) {
                return Err(super::watch::cancelled());
            }
            let failed = outcome.is_err();
            results.push(PaneOpResult::ended(index, name, outcome, started));
            if failed && input.on_error == OnError::Stop {
                stopped_at = Some(index);
                break;
            }
        }
        let ran = results.len();
        for (index, name) in names.iter().enumerate().skip(ran) {
            results.push(PaneOpResult::not_run(index, name, started));
        }
        Ok(Json(BatchResults::tally(results, stopped_at, |r| {
            r.success
        })))
    }
}

/// Where one operation of a `pane_batch` runs.
struct BatchStep<'a> {
    index: usize,
    batch_server: &'a Option<String>,
    deadline: Instant,
    cancel: &'a CancellationToken,
    subscription: Option<OutputSubscription>,
}

impl McpServer {
    /// Runs one operation of a `pane_batch` on the batch's server, within what is left of the
    /// batch's time; notes the text an input operation typed for the waits after it.
    async fn run_batch_step(
        &self,
        call: &CallContext,
        mut op: PaneOp,
        step: BatchStep<'_>,
        typed: &mut Vec<Typed>,
    ) -> Result<serde_json::Value, ToolError> {
        let server = op.server_mut();
        if server
            .as_ref()
            .is_some_and(|s| Some(s) != step.batch_server.as_ref())
        {
            return Err(ToolError::invalid_arguments(
                format!(
                    "operations[{}]: server is set on the batch, not on an operation",
                    step.index
                ),
                "move `server` to the batch",
            ));
        }
        server.clone_from(step.batch_server);
        let remaining = step.deadline.saturating_duration_since(Instant::now());
        let text = op.typed_text();
        let run = self.run_pane_op(call, op, remaining, step.cancel, step.subscription, typed);
        let Ok(outcome) = tokio::time::timeout(remaining, run).await else {
            return Err(ToolError::new(
                ToolErrorKind::Timeout,
                "the batch timed out during this operation",
                "give the batch a longer timeout, or split it",
            ));
        };
        if let (Ok(result), Some(text)) = (&outcome, text)
            && let Some(pane) = result["pane_id"].as_str()
        {
            typed.push(Typed {
                pane: pane.to_owned(),
                session: result["session"].as_str().map(str::to_owned),
                text,
                position: result["output_position"].as_str().map(str::to_owned),
            });
        }
        outcome
    }
}

/// Input a `pane_batch` operation delivered, for the waits after it.
struct Typed {
    /// The pane it went to, as its answer names it (`%N`, `terminal_N`), and (Zellij) its
    /// session.
    pane: String,
    session: Option<String>,
    text: String,
    /// Its `output_position`: where the pane stood just before the input.
    position: Option<String>,
}

impl Typed {
    /// Whether this input went to the pane a later operation names as `target`.
    fn went_to(&self, target: &str) -> bool {
        self.pane == target
            || self.session.as_ref().is_some_and(|s| {
                target.strip_prefix(s.as_str()) == Some(&format!(":{}", self.pane))
            })
    }
}

/// The `since` of a Zellij wait in a batch that gives none: where its pane stood before the
/// batch's first input into it, with everything the batch typed there as the echo not to
/// count. A tmux wait gets the same from a subscription taken at the start of the batch;
/// Zellij streams screens, so a mark of the screen stands in for it. `None` when the batch
/// typed nothing into the pane: the wait then counts output from its own start.
fn zellij_batch_since(typed: &[Typed], target: &str) -> Result<Option<String>, ToolError> {
    let into: Vec<&Typed> = typed.iter().filter(|t| t.went_to(target)).collect();
    let Some(first) = into.iter().find_map(|t| t.position.as_deref()) else {
        return Ok(None);
    };
    let position = ZellijPosition::decode(first).map_err(|e| {
        ToolError::new(
            ToolErrorKind::Internal,
            format!("an input's output_position did not decode: {e}"),
            "report this to the operator",
        )
    })?;
    let echo: Vec<&str> = into.iter().map(|t| t.text.as_str()).collect();
    Ok(Some(position.with_typed(&echo.join("\n")).encode()))
}

/// A batch must hold at least one operation and at most the caller's `max_batch_ops`.
fn check_batch_size(limits: &Limits, call: &CallContext, ops: usize) -> Result<(), ToolError> {
    if ops == 0 {
        return Err(ToolError::invalid_arguments(
            "operations is empty",
            "pass at least one operation",
        ));
    }
    limits.check_batch_size(call.sub(), ops).map_err(|e| {
        ToolError::invalid_arguments(e.to_string(), "split the operations over several calls")
    })
}

/// A batch's `timeout` in seconds: `default` when none is given; more than 0 and at most
/// [`MAX_TIMEOUT_SECS`].
fn batch_timeout(timeout: Option<f64>, default: Duration) -> Result<Duration, ToolError> {
    match timeout {
        None => Ok(default),
        Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => Ok(Duration::from_secs_f64(secs)),
        Some(secs) => Err(ToolError::invalid_arguments(
            format!("timeout must be more than 0 and at most {MAX_TIMEOUT_SECS} s, got {secs}"),
            "pass a timeout in seconds, or omit it",
        )),
    }
}

impl PaneOpResult {
    /// The result of an operation that ran.
    fn ended(
        index: usize,
        op: &str,
        outcome: Result<serde_json::Value, ToolError>,
        started: Instant,
    ) -> Self {
        let (result, error, suggestion) = match outcome {
            Ok(result) => (Some(result), None, None),
            Err(error) => (None, Some(error.message), Some(error.suggestion)),
        };
        Self {
            index,
            op: op.to_owned(),
            success: result.is_some(),
            result,
            error,
            suggestion,
            elapsed_ms: elapsed_ms(started),
        }
    }

    /// An operation left out after an earlier one failed (`on_error: stop`).
    fn not_run(index: usize, op: &str, started: Instant) -> Self {
        Self {
            index,
            op: op.to_owned(),
            success: false,
            result: None,
            error: Some("not run: an earlier operation failed (on_error: stop)".to_owned()),
            suggestion: Some("fix the failed operation and send the rest again".to_owned()),
            elapsed_ms: elapsed_ms(started),
        }
    }
}
