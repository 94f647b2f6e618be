// The interop workflow driven by the official TypeScript MCP SDK, against a running muxgate.
//
// Usage: node ts_client.mjs [limits|secrets|quirks]   (a copy inside the npm prefix, next to the SDK)
// Environment (set by tests/interop/run): INTEROP_URL, INTEROP_TOKEN, INTEROP_EXPIRED_TOKEN,
// INTEROP_METRICS_URL, INTEROP_CLIENT; with `limits`, the limit steps' tokens
// (INTEROP_LIMIT_TOKEN_*), INTEROP_SESSIONS_URL and INTEROP_MAX_SESSIONS.
//
// Prints one `PASS <step>` or `FAIL <step>: <why>` line per step of the shared workflow, with
// `limits` of its limit steps, with `secrets` of the secret entry steps (the link reaches the
// client's elicitation handler and never the tool result; see workflow.md); the runner counts
// the lines.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { createHash } from "node:crypto";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const URL_ = env("INTEROP_URL");
const TOKEN = env("INTEROP_TOKEN");
const EXPIRED = env("INTEROP_EXPIRED_TOKEN");
const METRICS = env("INTEROP_METRICS_URL");
const LABEL = env("INTEROP_CLIENT");

// As workflow.py: 1.2 MB into a pane whose server keeps 30 000 lines of history.
const FLOOD = "seq -f '%0100g' 1 12000";
const LAST_LINE = "12000".padStart(100, "0");
// As workflow.py: more than the output step's budget and the tmux reply it may receive.
const SMALL_FLOOD = "seq -f '%0100g' 1 3000; echo flood-$((6*7))-done";
const SMALL_FLOOD_DONE = "flood-42-done";
const SESSIONS_URL = process.env.INTEROP_SESSIONS_URL;
const MAX_SESSIONS = Number(process.env.INTEROP_MAX_SESSIONS ?? 0);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

// With `responses`, the status and headers of every HTTP response the transport receives are
// pushed to it. With `elicitation`, the client declares elicitation (form and URL mode) and
// hands `elicitation/create` requests' params to that callback. `send` is the transport's
// fetch (the quirk steps change requests on their way out).
async function connect(token, { url = URL_, responses, elicitation, send = fetch } = {}) {
  const client = new Client(
    { name: "muxgate-interop", version: "1.0.0" },
    elicitation ? { capabilities: { elicitation: { form: {}, url: {} } } } : undefined,
  );
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, (request) => elicitation(request.params));
  }
  const options = { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: send };
  if (responses) {
    options.fetch = async (...args) => {
      const response = await send(...args);
      responses.push({ status: response.status, headers: response.headers });
      return response;
    };
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), options);
  await client.connect(transport);
  return client;
}

async function call(client, name, args, options = {}) {
  const result = await client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
    ...options,
  });
  const value =
    result.structuredContent ?? result.content.map((c) => c.text ?? "").join(" ");
  return { isError: result.isError === true, value };
}

async function ok(client, name, args, options) {
  const { isError, value } = await call(client, name, args, options);
  if (isError) throw new Error(`${name} failed: ${JSON.stringify(value)}`);
  return value;
}

async function waitsActive() {
  const text = await (await fetch(METRICS)).text();
  const line = text.split("\n").find((l) => l.startsWith("muxgate_waits_active"));
  assert(line, "muxgate_waits_active missing from /metrics");
  return Number(line.trim().split(/\s+/).pop());
}

class Workflow {
  constructor(client) {
    this.c = client;
    this.panes = [];
  }

  async list_tools() {
    const { tools } = await this.c.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const wanted of ["run_command", "send_keys_batch", "wait_for_text", "capture_since"]) {
      assert(names.has(wanted), `missing tool ${wanted} among ${names.size}`);
    }
  }

  async create_session() {
    this.sessionName = `${LABEL}-${process.pid}`;
    const created = await ok(this.c, "create_session", {
      name: this.sessionName,
      width: 120,
      height: 40,
    });
    const first = created.session.active_pane_id;
    const second = (await ok(this.c, "split_window", { target: first })).id;
    assert(first.startsWith("%") && second.startsWith("%"), `${first} ${second}`);
    this.panes = [first, second];
    for (const pane of this.panes) {
      await ok(this.c, "run_command", { target: pane, command: "true", timeout: 20 });
    }
  }

  async run_command_exit_status() {
    const result = await ok(this.c, "run_command", {
      target: this.panes[0],
      command: "echo out-$((6*7)); sh -c 'exit 7'",
    });
    assert(result.exit_status === 7, JSON.stringify(result));
    assert(result.output === "out-42\n", JSON.stringify(result));
  }

  async send_keys_batch_two_panes() {
    const texts = ["left-2", "right-4"];
    const waits = this.panes.map((pane, i) =>
      ok(this.c, "wait_for_text", { target: pane, patterns: [`^${texts[i]}$`], regex: true }),
    );
    await sleep(300);
    const result = await ok(this.c, "send_keys_batch", {
      operations: [
        { target: this.panes[0], keys: "sleep 0.3; echo left-$((1+1))", literal: true },
        { target: this.panes[1], keys: "sleep 0.3; echo right-$((2+2))", literal: true },
      ],
    });
    assert(result.succeeded === 2 && result.failed === 0, JSON.stringify(result));
    for (const seen of await Promise.all(waits)) {
      assert(seen.outcome === "matched", JSON.stringify(seen));
    }
  }

  async wait_for_text_woken() {
    const pane = this.panes[1];
    const started = Date.now();
    const waiting = ok(this.c, "wait_for_text", { target: pane, patterns: ["woke-42"], timeout: 20 });
    await sleep(300);
    await ok(this.c, "send_keys", {
      target: pane,
      keys: "sleep 0.5; echo woke-$((40+2))",
      literal: true,
      enter: true,
    });
    const found = await waiting;
    const waited = (Date.now() - started) / 1000;
    assert(found.outcome === "matched" && found.matched_line === "woke-42", JSON.stringify(found));
    assert(waited >= 0.5, `returned after ${waited} s`);
  }

  async capture_since_new_lines() {
    const pane = this.panes[0];
    const start = await ok(this.c, "capture_since", { target: pane });
    await ok(this.c, "send_keys", { target: pane, keys: "echo fresh-$((3*3))", literal: true, enter: true });
    await ok(this.c, "wait_for_text", { target: pane, patterns: ["^fresh-9$"], regex: true });
    const later = await ok(this.c, "capture_since", { cursor: start.cursor });
    assert(later.lines.includes("fresh-9"), JSON.stringify(later));
    assert(!later.lines.includes("out-42") && !later.lines.includes("left-2"), `old lines came back: ${later.lines}`);
  }

  async capped_capture_readable() {
    const pane = this.panes[1];
    const ran = await ok(this.c, "run_command", { target: pane, command: FLOOD, timeout: 50 });
    assert(ran.exit_status === 0, `exit status ${ran.exit_status}`);
    const captured = await ok(this.c, "capture_pane", { target: pane, start: "-", max_lines: 100000 });
    assert(captured.truncated && captured.dropped_bytes > 0, `not capped: ${captured.lines} lines`);
    // The shell's prompt follows the last line of output.
    const lastLines = captured.text.trimEnd().split("\n").slice(-3);
    assert(lastLines.includes(LAST_LINE), JSON.stringify(lastLines));
  }

  async validation_error_is_error() {
    const { isError, value } = await call(this.c, "run_command", { target: this.panes[0] });
    assert(isError, `missing \`command\` was accepted: ${JSON.stringify(value)}`);
    assert(JSON.stringify(value).includes("command"), JSON.stringify(value));
  }

  async unknown_tool_jsonrpc_error() {
    try {
      const result = await this.c.callTool({ name: "no_such_tool", arguments: {} });
      throw new Error(`an unknown tool returned a result: ${JSON.stringify(result)}`);
    } catch (error) {
      assert(error instanceof McpError, `not a JSON-RPC error: ${error}`);
    }
  }

  async batch_progress() {
    const seen = [];
    const operations = [...Array(6).keys()].map((i) => ({ target: this.panes[1], keys: `: p${i}`, literal: true }));
    const result = await ok(this.c, "send_keys_batch", { operations }, {
      onprogress: (p) => seen.push([p.progress, p.total]),
    });
    assert(result.succeeded === 6, JSON.stringify(result));
    await sleep(200);
    assert(seen.length >= 6, `progress notifications: ${JSON.stringify(seen)}`);
    const last = seen[seen.length - 1];
    assert(last[0] === 6 && last[1] === 6, JSON.stringify(seen));
  }

  async cancelled_wait() {
    assert((await waitsActive()) === 0, "a wait was already in flight");
    const abort = new AbortController();
    const waiting = ok(this.c, "wait_for_text", {
      target: this.panes[1], patterns: ["never-printed"], timeout: 60,
    }, { signal: abort.signal });
    await sleep(1000);
    abort.abort("interop: cancelled");
    let returned = false;
    try {
      await waiting;
      returned = true;
    } catch {
      // aborted, as asked
    }
    assert(!returned, "the wait returned before it was cancelled");
    const deadline = Date.now() + 5000;
    while ((await waitsActive()) !== 0) {
      assert(Date.now() < deadline, "the gateway kept waiting after the cancel");
      await sleep(50);
    }
  }

  async cleanup() {
    if (this.sessionName) await ok(this.c, "kill_session", { target: this.sessionName });
  }
}

async function expired_token_401() {
  let client;
  try {
    client = await connect(EXPIRED);
  } catch (error) {
    // The transport's error carries the response's HTTP status.
    assert(error instanceof StreamableHTTPError, `not an HTTP error: ${error}`);
    assert(error.code === 401, `HTTP status ${error.code}: ${error}`);
    return;
  }
  await client.close();
  throw new Error("an expired token was accepted");
}

const STEPS = [
  "list_tools",
  "create_session",
  "run_command_exit_status",
  "send_keys_batch_two_panes",
  "wait_for_text_woken",
  "capture_since_new_lines",
  "capped_capture_readable",
  "validation_error_is_error",
  "unknown_tool_jsonrpc_error",
  "batch_progress",
  "cancelled_wait",
];

async function step(name, run) {
  let timer;
  try {
    const outcome = await Promise.race([
      run(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("step took over 60 s")), 60_000);
      }),
    ]);
    if (typeof outcome === "string" && outcome.startsWith("skipped: ")) {
      console.log(`SKIP ${name}: ${outcome.slice("skipped: ".length)}`);
    } else {
      console.log(`PASS ${name}`);
    }
    return true;
  } catch (error) {
    console.log(`FAIL ${name}: ${String(error?.message ?? error).slice(0, 500)}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

// The limit steps (workflow.md, "Limits"), against the limits gateway.
const LIMIT_LOOP = 150;
const text = (value) => (typeof value === "string" ? value : JSON.stringify(value));
const limitToken = (kind) => env(`INTEROP_LIMIT_TOKEN_${kind.toUpperCase()}`);

// [limit, retry_after_ms] of a refusal's text; either is null when absent.
function refusalOf(t) {
  const parts = t.split("`");
  const retry = /retry_after_ms: (\d+)/.exec(t);
  return [parts.length >= 3 ? parts[1] : null, retry ? Number(retry[1]) : null];
}

// Calls `name` until the gateway refuses it, with an `error (busy)` result naming `limit`.
async function readRefusal(client, name, args, limit) {
  for (let n = 0; n < 40; n++) {
    const { isError, value } = await call(client, name, args);
    if (!isError) continue;
    const t = text(value);
    assert(t.startsWith("error (busy)"), `call ${n}: ${t.slice(0, 300)}`);
    assert(refusalOf(t)[0] === limit, `call ${n} was refused by another limit: ${t.slice(0, 300)}`);
    return t;
  }
  throw new Error(`40 calls of ${name} in a row, none refused by \`${limit}\``);
}

// A tmux session of the client's own for a step; `work(pane)`, then the session is killed.
async function withPane(client, kind, work) {
  const name = `${LABEL}-${kind}-${process.pid}`;
  const created = await ok(client, "create_session", { name, width: 120, height: 40 });
  const pane = created.session.active_pane_id;
  try {
    await ok(client, "run_command", { target: pane, command: "true", timeout: 20 });
    await work(pane);
  } finally {
    await ok(client, "kill_session", { target: name });
  }
}

const LimitSteps = {
  // An agent loop faster than the request rate: every refusal is an isError result naming
  // retry_after_ms, and the call after waiting that long is admitted by the limit waited for.
  async request_rate_refusal_read(client) {
    let refused = 0;
    let retriedOk = 0;
    let waitedFor = null;
    for (let n = 0; n < LIMIT_LOOP; n++) {
      const { isError, value } = await call(client, "list_sessions", {});
      const t = text(value);
      if (!isError) {
        if (waitedFor !== null) retriedOk++;
        waitedFor = null;
        continue;
      }
      assert(t.includes("error (busy)") && t.includes("retry_after_ms: "), `call ${n}: ${t.slice(0, 300)}`);
      const [limit, retryMs] = refusalOf(t);
      assert(limit !== waitedFor, `call ${n}, after waiting as \`${limit}\` said, was refused by it again: ${t}`);
      refused++;
      await sleep(retryMs + 20);
      waitedFor = limit;
    }
    assert(refused >= 3, `only ${refused} of ${LIMIT_LOOP} calls were refused: the limit did not trip`);
    assert(retriedOk >= Math.floor(refused / 2), `${refused} refused, ${retriedOk} retried calls succeeded`);
  },

  // Tool calls at 2 a second, requests unlimited: each refusal names tool_calls_per_second
  // and retry_after_ms, and the call after that wait succeeds, three times in one session.
  async tool_call_rate_refusal_read() {
    const client = await connect(limitToken("tool_calls"));
    try {
      for (let i = 0; i < 3; i++) {
        const t = await readRefusal(client, "list_sessions", {}, "tool_calls_per_second");
        const retryMs = refusalOf(t)[1];
        assert(retryMs !== null, `no retry_after_ms: ${t.slice(0, 300)}`);
        await sleep(retryMs + 20);
        await ok(client, "list_sessions", {});
      }
    } finally {
      await client.close();
    }
  },

  // One wait at a time: a second wait beside a running one is refused busy, naming
  // max_concurrent_waits; once the first ends (its text typed), the same call succeeds.
  async concurrent_waits_refusal_read() {
    const client = await connect(limitToken("waits"));
    try {
      await withPane(client, "waits", async (pane) => {
        const second = {
          target: pane, patterns: ["^released-42$"], regex: true, include_screen: true, timeout: 10,
        };
        const first = ok(client, "wait_for_text", { target: pane, patterns: ["released-42"], timeout: 30 });
        const deadline = Date.now() + 20_000;
        while ((await waitsActive()) < 1) {
          assert(Date.now() < deadline, "the first wait never started");
          await sleep(50);
        }
        const { isError, value } = await call(client, "wait_for_text", second);
        const t = text(value);
        assert(isError, `a second wait ran beside the first: ${t.slice(0, 300)}`);
        assert(t.startsWith("error (busy)"), t.slice(0, 300));
        const [limit, retryMs] = refusalOf(t);
        assert(limit === "max_concurrent_waits", t.slice(0, 300));
        assert(t.includes("finish"), `no hint to let a wait finish: ${t.slice(0, 300)}`);
        await ok(client, "send_keys", {
          target: pane, keys: "echo released-$((40+2))", literal: true, enter: true,
        });
        const done = await first;
        assert(done.outcome === "matched", JSON.stringify(done));
        if (retryMs !== null) await sleep(retryMs);
        const found = await ok(client, "wait_for_text", second);
        assert(found.outcome === "matched", JSON.stringify(found));
      });
    } finally {
      await client.close();
    }
  },

  // A 16 KiB output budget: a whole-scrollback capture of 300 KB is refused, naming the budget
  // and telling to ask for less; the capture of the last lines then succeeds.
  async output_budget_refusal_read() {
    const client = await connect(limitToken("output"));
    try {
      await withPane(client, "output", async (pane) => {
        await ok(client, "send_keys", { target: pane, keys: SMALL_FLOOD, literal: true, enter: true });
        await ok(client, "wait_for_text", {
          target: pane, patterns: [`^${SMALL_FLOOD_DONE}$`], regex: true, timeout: 30,
        });
        const { isError, value } = await call(client, "capture_pane", {
          target: pane, start: "-", max_lines: 100000,
        });
        const t = text(value);
        assert(isError, `a 300 KB capture came back whole: ${t.slice(0, 300)}`);
        assert(t.includes("output budget") || t.includes("max_output_bytes"), t.slice(0, 300));
        assert(t.includes("ask for less"), `no hint to ask for less: ${t.slice(0, 300)}`);
        const captured = await ok(client, "capture_pane", { target: pane, start: -30, max_lines: 20 });
        assert(captured.text.split("\n").includes(SMALL_FLOOD_DONE), captured.text.slice(-500));
      });
    } finally {
      await client.close();
    }
  },

  // Session after session left open (the SDK's close() sends no DELETE): after
  // max_sessions_per_client + 3 of them, a new session and a call on it succeed (a 429 with
  // Retry-After is waited out once), and no refusal on the way throws past the step.
  async sessions_per_client_cap() {
    const token = limitToken("sessions");
    const sessions = [];
    const refusals = [];
    const openOne = async (withCall) => {
      const responses = [];
      let client;
      try {
        client = await connect(token, { url: SESSIONS_URL, responses });
        sessions.push(client.transport.sessionId ?? null);
        if (withCall) await ok(client, "list_sessions", {});
        else await client.listTools();
        return true;
      } catch (error) {
        const refused = responses.find((r) => r.status >= 400);
        assert(refused, `opening a session failed without a refusal: ${error}`);
        refusals.push({ ...refused, message: String(error?.message ?? error) });
        return false;
      } finally {
        await client?.close();
      }
    };
    for (let i = 0; i < MAX_SESSIONS + 3; i++) await openOne(false);
    assert(new Set(sessions).size === sessions.length, `a session id came back twice: ${sessions}`);
    assert(sessions.every((id) => id), `a session without an id: ${sessions}`);
    if (!(await openOne(true))) {
      const { status, headers, message } = refusals[refusals.length - 1];
      const retry = headers.get("retry-after");
      assert(status === 429 && retry !== null,
        `after ${sessions.length} sessions left open (${refusals.length - 1} refused), a new one was ` +
        `refused with HTTP ${status} without Retry-After, though the sessions it counts are idle: ` +
        `${message.slice(0, 300)}`);
      await sleep(Number(retry) * 1000);
      assert(await openOne(true), `refused again after Retry-After: ${refusals[refusals.length - 1].message}`);
    }
  },
};

const LIMIT_STEPS = [
  "request_rate_refusal_read",
  "tool_call_rate_refusal_read",
  "concurrent_waits_refusal_read",
  "output_budget_refusal_read",
  "sessions_per_client_cap",
];

// Secret entry (workflow.md, after the workflow), as python_client.py's `secrets` steps. The
// pane's program reads a line with echo off and says whether it was SECRET, without the secret
// on its command line.
const SECRET = "hunter2 s3cret";
const READ_SECRET =
  "read -rs X; [ \"$(printf %s \"$X\" | sha256sum | cut -d' ' -f1)\" = " +
  createHash("sha256").update(SECRET).digest("hex") +
  ' ] && echo "MATCHED ${#X}" || echo "DIFFERENT ${#X}"';
const BASE = URL_.replace(/\/mcp$/, "");

// Types SECRET at `link`'s form, as the human's browser would (the pane may still be settling:
// a refusal is tried again).
async function postSecret(link) {
  const token = link.split("?t=").slice(1).join("?t=");
  const body = new URLSearchParams({ t: token, secret: SECRET }).toString();
  let status = null;
  for (let n = 0; n < 100; n++) {
    const response = await fetch(`${BASE}/secret`, {
      method: "POST",
      body,
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: BASE },
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer();
    if (response.ok) return;
    status = response.status;
    if (status !== 409) break;
    await sleep(50);
  }
  throw new Error(`the secret form answered ${status}`);
}

// A user at the client: shown each URL elicitation, types the secret there, then says yes.
class User {
  constructor() {
    this.shown = [];
  }

  handler() {
    return async (params) => {
      if (params.mode !== "url" || !params.url) return { action: "decline" };
      this.shown.push(params.url);
      await postSecret(params.url);
      return { action: "accept" };
    };
  }
}

// A fresh session whose shell waits in `read -s`: [session name, pane].
async function secretPane(client, tag) {
  const name = `${LABEL}-${tag}-${process.pid}`;
  const created = await ok(client, "create_session", { name, width: 120, height: 20 });
  const pane = created.session.active_pane_id;
  await ok(client, "run_command", { target: pane, command: "true", timeout: 20 });
  await ok(client, "send_keys", { target: pane, keys: READ_SECRET, literal: true, enter: true });
  return [name, pane];
}

// Asks for the secret once the pane's program reads it: the structured answer, and the whole
// result as the model would be given it (JSON).
async function requestSecret(client, pane) {
  const args = { target: pane, label: "interop password", expires_in_seconds: 120 };
  for (let n = 0; n < 100; n++) {
    const result = await client.callTool({ name: "request_secret_input", arguments: args }, undefined, {
      timeout: 60_000,
    });
    const dumped = JSON.stringify(result);
    if (result.isError !== true) return [result.structuredContent, dumped];
    assert(dumped.includes("conflict"), dumped.slice(0, 500));
    await sleep(50);
  }
  throw new Error("the pane never became ready for a secret");
}

function assertNoLink(dumped) {
  assert(!dumped.includes("/secret?") && !dumped.includes("?t="), `the result holds a link: ${dumped}`);
}

const SecretSteps = {
  // The client's elicitation handler receives the link (2025-11-25: an `elicitation/create`
  // request), the user types the secret there, and the tool result says it was typed, with no
  // link in it.
  async secret_link_to_handler() {
    const user = new User();
    const client = await connect(TOKEN, { elicitation: user.handler() });
    try {
      const version = client.transport.protocolVersion;
      assert(version === "2025-11-25", `negotiated ${version}, expected 2025-11-25`);
      const [name, pane] = await secretPane(client, "secret");
      const [answer, dumped] = await requestSecret(client, pane);
      assert(user.shown.length === 1, `the handler was shown ${JSON.stringify(user.shown)}`);
      const link = user.shown[0];
      assert(link.startsWith(`${BASE}/secret?t=`), link);
      assertNoLink(dumped);
      assert(!dumped.includes(link.split("?t=").slice(1).join("?t=")), dumped);
      assert(answer?.status === "typed", JSON.stringify(answer));
      const seen = await ok(client, "wait_for_text", {
        target: pane, patterns: [`MATCHED ${SECRET.length}`], include_screen: true, timeout: 20,
      });
      assert(seen.outcome === "matched", JSON.stringify(seen));
      await ok(client, "kill_session", { target: name });
    } finally {
      await client.close();
    }
  },

  // A client without an elicitation handler gets no link either: the result says the request
  // waits for an approver at the gateway, with its id.
  async secret_fallback_without_handler() {
    const client = await connect(TOKEN);
    try {
      const [name, pane] = await secretPane(client, "fallback");
      const [answer, dumped] = await requestSecret(client, pane);
      assertNoLink(dumped);
      assert(answer?.status === "pending", JSON.stringify(answer));
      assert(answer.next_step.includes(answer.request_id), JSON.stringify(answer));
      assert(answer.next_step.includes("muxgate approvals secrets"), JSON.stringify(answer));
      await ok(client, "kill_session", { target: name });
    } finally {
      await client.close();
    }
  },
};

// The quirk steps (workflow.md, "Quirks"): requests other clients send, made by the fetch this
// SDK's transport sends through. This SDK speaks 2025-11-25 and proposes it in `initialize`.
const FUTURE_VERSION = "2099-01-01";
const KNOWN_VERSIONS = ["2025-11-25", "2026-07-28"];
const bodyOf = (init) => {
  try {
    return JSON.parse(init?.body ?? "{}");
  } catch {
    return {};
  }
};

const QuirkSteps = {
  // Its `initialize` proposes a version from the future: the gateway answers with one it
  // speaks, the SDK accepts it, and calls carrying it are served.
  async future_version_negotiated() {
    const sent = [];
    const send = (url, init) => {
      const body = bodyOf(init);
      if (body.method === "initialize") {
        body.params.protocolVersion = FUTURE_VERSION;
        init = { ...init, body: JSON.stringify(body) };
        sent.push(["initialize", FUTURE_VERSION]);
      } else if (body.method === "tools/call") {
        sent.push(["tools/call", new Headers(init.headers).get("mcp-protocol-version")]);
      }
      return fetch(url, init);
    };
    const client = await connect(TOKEN, { send });
    try {
      const servers = await ok(client, "list_servers", {});
      assert(text(servers).includes("servers"), text(servers));
    } finally {
      await client.close();
    }
    const calls = sent.filter(([m]) => m === "tools/call").map(([, v]) => v);
    assert(sent[0]?.[1] === FUTURE_VERSION, `the handshake sent ${JSON.stringify(sent)}`);
    assert(calls.length && calls.every((v) => KNOWN_VERSIONS.includes(v)), `calls carried ${calls}`);
  },

  // A `server/discover` first, on the same fetch and headers, then the SDK's own
  // `initialize` (Claude Code does this): the discover is answered, the session opens and
  // serves a call.
  async initialize_after_discover() {
    let discovered = null;
    const send = async (url, init) => {
      if (discovered === null && bodyOf(init).method === "initialize") {
        const headers = new Headers(init.headers);
        headers.set("mcp-protocol-version", "2026-07-28");
        headers.set("mcp-method", "server/discover");
        const meta = {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: LABEL, version: "1" },
          "io.modelcontextprotocol/clientCapabilities": {},
        };
        const answer = await fetch(url, {
          method: "POST",
          headers,
          body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "server/discover", params: { _meta: meta } }),
        });
        discovered = `${answer.status} ${await answer.text()}`;
      }
      return fetch(url, init);
    };
    const responses = [];
    const client = await connect(TOKEN, { send, responses });
    try {
      await ok(client, "list_servers", {});
    } finally {
      await client.close();
    }
    assert(discovered?.startsWith("200") && discovered.includes("2026-07-28"), `discover: ${discovered}`);
    assert(responses.some((r) => r.headers.get("mcp-session-id")), "no session was opened");
  },

  async missing_name_header_named() {
    return "skipped: 2025-11-25 has no Mcp-Name header";
  },
};
const QUIRK_STEPS = Object.keys(QuirkSteps);

const SECRET_STEPS = ["secret_link_to_handler", "secret_fallback_without_handler"];

if (process.argv[2] === "limits") {
  const client = await connect(TOKEN);
  for (const name of LIMIT_STEPS) await step(name, () => LimitSteps[name](client));
  await client.close();
  process.exit(0);
}

if (process.argv[2] === "quirks") {
  for (const name of QUIRK_STEPS) await step(name, () => QuirkSteps[name]());
  process.exit(0);
}

if (process.argv[2] === "secrets") {
  for (const name of SECRET_STEPS) await step(name, () => SecretSteps[name]());
  process.exit(0);
}

const client = await connect(TOKEN);
const flow = new Workflow(client);
for (const [i, name] of STEPS.entries()) {
  if (!(await step(name, () => flow[name]())) && name === "create_session") {
    for (const rest of STEPS.slice(i + 1)) console.log(`FAIL ${rest}: no session to work in`);
    break;
  }
}
await step("cleanup", () => flow.cleanup());
await client.close();
await step("expired_token_401", expired_token_401);
