// The interop workflow driven by the official TypeScript MCP SDK, against a running muxgate.
//
// Usage: node ts_client.mjs   (with NODE_PATH at the SDK's node_modules)
// Environment (set by tests/interop/run): INTEROP_URL, INTEROP_TOKEN, INTEROP_EXPIRED_TOKEN,
// INTEROP_METRICS_URL, INTEROP_CLIENT.
//
// Prints one `PASS <step>` or `FAIL <step>: <why>` line per step of the shared workflow
// (see workflow.md); the runner counts the lines.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function connect(token) {
  const client = new Client({ name: "muxgate-interop", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(URL_), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
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
    await Promise.race([
      run(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("step took over 60 s")), 60_000);
      }),
    ]);
    console.log(`PASS ${name}`);
    return true;
  } catch (error) {
    console.log(`FAIL ${name}: ${String(error?.message ?? error).slice(0, 500)}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
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
