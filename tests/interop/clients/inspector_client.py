"""The interop workflow driven by the MCP Inspector CLI (one CLI process per request), against a
running muxgate. Standard library only.

Usage: python3 inspector_client.py PATH_TO_MCP_INSPECTOR [limits|quirks]

Environment (set by tests/interop/run): INTEROP_URL, INTEROP_TOKEN, INTEROP_EXPIRED_TOKEN,
INTEROP_METRICS_URL, INTEROP_CLIENT; with `limits`, the limit steps' tokens
(INTEROP_LIMIT_TOKEN_*), INTEROP_SESSIONS_URL and INTEROP_MAX_SESSIONS.

Prints `PASS <step>`, `FAIL <step>: <why>` or, for what the CLI cannot express,
`SKIP <step>: <why>` lines (see ../workflow.md; shared parts in workflow.py); the runner counts them.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

from workflow import (
    EXPIRED,
    FLOOD,
    LABEL,
    LAST_LINE,
    LIMIT_STEPS,
    MAX_SESSIONS,
    QUIRK_STEPS,
    SESSIONS_URL,
    SMALL_FLOOD,
    SMALL_FLOOD_DONE,
    STEPS,
    TOKEN,
    URL,
    limit_token,
    refusal_of,
    waits_active,
)

INSPECTOR = sys.argv[1]
# The CLI keeps a catalog of servers and client settings; keep them out of the user's home.
HOME = tempfile.mkdtemp(prefix="muxgate-inspector-")
ENV = dict(os.environ, MCP_CATALOG_PATH=os.path.join(HOME, "mcp.json"),
           MCP_CLIENT_CONFIG_PATH=os.path.join(HOME, "client.json"))


def command(method, token=TOKEN, tool=None, args=None, url=URL):
    argv = [
        INSPECTOR, "--cli", url, "--transport", "http",
        "--header", f"Authorization: Bearer {token}", "--stored-auth-only",
        "--format", "json", "-q", "--method", method,
    ]
    if tool is not None:
        argv += ["--tool-name", tool, "--tool-args-json", json.dumps(args or {})]
    return argv


def run(method, token=TOKEN, tool=None, args=None, timeout=60, url=URL):
    """(exit code, stdout, stderr) of one CLI request."""
    done = subprocess.run(
        command(method, token, tool, args, url), capture_output=True, text=True, timeout=timeout,
        env=ENV,
    )
    return done.returncode, done.stdout, done.stderr


def start(tool, args):
    """A tools/call running in the background."""
    return subprocess.Popen(
        command("tools/call", tool=tool, args=args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )


def finish(process, timeout=60):
    out, err = process.communicate(timeout=timeout)
    return result_of(process.returncode, out, err)


def result_of(code, out, err):
    assert code == 0, f"exit {code}: {err.strip()[-500:]}"
    return json.loads(out)["result"]


def call(tool, args):
    """The CallToolResult as JSON."""
    return result_of(*run("tools/call", tool=tool, args=args))


def ok(tool, args):
    result = call(tool, args)
    assert not result.get("isError"), f"{tool} failed: {result}"
    return result["structuredContent"]


class Workflow:
    def __init__(self):
        self.panes = []

    def list_tools(self):
        names = {t["name"] for t in result_of(*run("tools/list"))["tools"]}
        missing = {"run_command", "send_keys_batch", "wait_for_text", "capture_since"} - names
        assert not missing, f"missing tools {missing}"

    def create_session(self):
        self.session_name = f"{LABEL}-{os.getpid()}"
        created = ok("create_session", {"name": self.session_name, "width": 120, "height": 40})
        first = created["session"]["active_pane_id"]
        second = ok("split_window", {"target": first})["id"]
        self.panes = [first, second]
        for pane in self.panes:
            ok("run_command", {"target": pane, "command": "true", "timeout": 20})

    def run_command_exit_status(self):
        result = ok("run_command", {"target": self.panes[0],
                                    "command": "echo out-$((6*7)); sh -c 'exit 7'"})
        assert result["exit_status"] == 7 and result["output"] == "out-42\n", result

    def send_keys_batch_two_panes(self):
        texts = ["left-2", "right-4"]
        waits = [
            start("wait_for_text", {"target": p, "patterns": [f"^{t}$"], "regex": True,
                                    "timeout": 30})
            for p, t in zip(self.panes, texts)
        ]
        self.until_waits(2)
        result = ok("send_keys_batch", {"operations": [
            {"target": self.panes[0], "keys": "echo left-$((1+1))", "literal": True},
            {"target": self.panes[1], "keys": "echo right-$((2+2))", "literal": True},
        ]})
        assert result["succeeded"] == 2 and result["failed"] == 0, result
        for process in waits:
            seen = finish(process)["structuredContent"]
            assert seen["outcome"] == "matched", seen

    def wait_for_text_woken(self):
        pane = self.panes[1]
        started = time.monotonic()
        waiting = start("wait_for_text", {"target": pane, "patterns": ["woke-42"], "timeout": 30})
        self.until_waits(1)
        ok("send_keys", {"target": pane, "keys": "sleep 0.5; echo woke-$((40+2))",
                         "literal": True, "enter": True})
        found = finish(waiting)["structuredContent"]
        assert found["outcome"] == "matched" and found["matched_line"] == "woke-42", found
        assert time.monotonic() - started >= 0.5

    def capture_since_new_lines(self):
        pane = self.panes[0]
        first = ok("capture_since", {"target": pane})
        ok("send_keys", {"target": pane, "keys": "echo fresh-$((3*3))", "literal": True,
                         "enter": True})
        ok("run_command", {"target": pane, "command": "true"})
        later = ok("capture_since", {"cursor": first["cursor"]})
        assert "fresh-9" in later["lines"], later
        assert "out-42" not in later["lines"] and "left-2" not in later["lines"], later

    def capped_capture_readable(self):
        pane = self.panes[1]
        ran = ok("run_command", {"target": pane, "command": FLOOD, "timeout": 50})
        assert ran["exit_status"] == 0, ran["exit_status"]
        captured = ok("capture_pane", {"target": pane, "start": "-", "max_lines": 100000})
        assert captured["truncated"] and captured["dropped_bytes"] > 0, captured["lines"]
        # The shell's prompt follows the last line of output.
        last_lines = captured["text"].rstrip("\n").split("\n")[-3:]
        assert LAST_LINE in last_lines, last_lines

    def validation_error_is_error(self):
        # The CLI exits 5 on an isError result; --output still gets the result.
        output = os.path.join(HOME, "error.json")
        argv = command("tools/call", tool="run_command", args={"target": self.panes[0]})
        done = subprocess.run(argv + ["--output", output], capture_output=True, text=True,
                              timeout=60, env=ENV)
        assert done.returncode == 5 and "tool_is_error" in done.stderr, done.stderr[-500:]
        with open(output) as f:
            result = json.load(f)
        assert result.get("isError") is True, result
        assert "missing field `command`" in json.dumps(result["content"]), result

    def unknown_tool_jsonrpc_error(self):
        code, out, err = run("tools/call", tool="no_such_tool", args={})
        assert code != 0, f"an unknown tool returned a result: {out}"
        assert "no_such_tool" in err or "-32602" in err or "not found" in err.lower(), err

    def batch_progress(self):
        print("SKIP batch_progress: the Inspector CLI prints only a call's final result, "
              "never its progress notifications", flush=True)
        return "skipped"

    def cancelled_wait(self):
        assert waits_active() == 0, "a wait was already in flight"
        waiting = start("wait_for_text", {"target": self.panes[1], "patterns": ["never"],
                                          "timeout": 60})
        self.until_waits(1)
        # What a CLI user does to cancel: Ctrl-C.
        waiting.send_signal(signal.SIGINT)
        waiting.communicate(timeout=10)
        deadline = time.monotonic() + 5
        while waits_active() != 0:
            assert time.monotonic() < deadline, "the gateway kept waiting after the cancel"
            time.sleep(0.05)

    def cleanup(self):
        if self.panes:
            ok("kill_session", {"target": self.session_name})

    @staticmethod
    def until_waits(count):
        """Until `count` waits are in flight at the gateway (each CLI process starts slowly)."""
        deadline = time.monotonic() + 30
        while waits_active() < count:
            assert time.monotonic() < deadline, f"{count} waits never started"
            time.sleep(0.05)


def expired_token_401():
    code, out, err = run("tools/list", token=EXPIRED)
    assert code != 0, f"an expired token was accepted: {out}"
    # The CLI ends with a JSON envelope; it exits 3 with `auth_required` for a 401 or a 403 only,
    # and names the status when the error carries it. The message is muxgate's body.
    envelope = json.loads(err.strip().splitlines()[-1])["error"]
    assert code == 3 and envelope["code"] == "auth_required", f"exit {code}: {envelope}"
    assert envelope.get("status", 401) == 401, envelope
    assert "expired" in envelope["message"], envelope



# The limit steps (../workflow.md, "Limits"): each CLI invocation is a new process, connection
# and MCP session; a refusal is read from what the CLI prints, and a new invocation after the
# wait it names must succeed.


class Invocation:
    """One CLI request running in the background; its CallToolResult, when it printed one,
    goes to a file of its own (the CLI exits 5 on an isError result; --output still has it)."""

    count = 0

    def __init__(self, method, token, tool=None, args=None, url=URL):
        Invocation.count += 1
        self.output = os.path.join(HOME, f"call-{Invocation.count}.json")
        self.process = subprocess.Popen(
            command(method, token, tool, args, url) + ["--output", self.output],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        )

    def finish(self, timeout=60):
        """(exit code, the CallToolResult or None, stderr)."""
        _, err = self.process.communicate(timeout=timeout)
        result = None
        if os.path.exists(self.output) and os.path.getsize(self.output):
            with open(self.output) as f:
                result = json.load(f)
            result = result.get("result", result)
        return self.process.returncode, result, err


def invoke(tool, args, token, url=URL):
    return Invocation("tools/call", token, tool, args, url).finish()


def result_text(result):
    return " ".join(c.get("text", "") for c in result.get("content", []))


def succeeded(outcome, what):
    code, result, err = outcome
    assert code == 0 and result is not None and not result.get("isError"), (
        f"{what}: exit {code}: {(result_text(result) if result else err.strip())[-500:]}"
    )
    return result["structuredContent"]


def refusal_in(outcome):
    """The refusal an invocation printed, as (limit, wait in ms, text); None if it succeeded.
    A refused tools/call is an isError result (exit 5); a refused request before it (the
    handshake) a 429 the CLI reports with the server's Retry-After."""
    code, result, err = outcome
    if code == 0:
        return None
    if result is not None and result.get("isError"):
        text = result_text(result)
        assert code == 5 and text.startswith("error (busy)"), f"exit {code}: {text[:300]}"
        limit, retry_ms = refusal_of(text)
        return limit, retry_ms, text
    envelope = json.loads(err.strip().splitlines()[-1])["error"]
    if envelope.get("code") == "tool_not_found":
        # Before a call the CLI lists the tools; when the request rate refused a request of
        # its own before that (its tools/list, or the part of the handshake it does not wait
        # on), it finds no tools and reports the called one missing: nothing to read.
        return UNREAD, None, envelope["message"]
    assert envelope.get("status") == 429 or "(HTTP 429)" in envelope["message"], (
        f"exit {code}: {envelope}"
    )
    wait_ms = retry_after_ms(envelope)
    assert wait_ms is not None, f"a 429 without the server's Retry-After: {envelope}"
    # muxgate's body, which the CLI passes on, names the limit.
    limit = re.search(r'"limit":"(\w+)"', envelope["message"])
    return limit.group(1) if limit else None, wait_ms, envelope["message"]


def retry_after_ms(envelope):
    """The wait a refused handshake's 429 asked for, in ms: the CLI names the Retry-After of a
    refused request ("retry after 1s"); for a refused notification it passes on muxgate's body,
    which carries the same number as `retry_after_seconds`."""
    message = envelope["message"]
    said = re.search(r"retry after (\d+)(ms|s)\b", message)
    if said:
        return int(said.group(1)) * (1 if said.group(2) == "ms" else 1000)
    body = re.search(r'"retry_after_seconds":(\d+)', message)
    return int(body.group(1)) * 1000 if body else None


# A refusal the CLI reported as something else (see refusal_in).
UNREAD = "unread"


def refused_then_retried(tool, args, token, limit, parallel):
    """Runs `parallel` invocations at once until one is refused in a way the CLI prints (at
    most 10 rounds), checks every refusal names `limit` (a refused call in its result, a
    refused handshake in its 429), waits as the longest refusal says, and returns a new
    invocation's result. Only the request rate can refuse the requests the CLI makes before
    the call, whose refusal it may not print: such an invocation counts for nothing, and the
    round is waited out."""
    for _ in range(10):
        outcomes = [Invocation("tools/call", token, tool, args) for _ in range(parallel)]
        refusals = [r for r in (refusal_in(o.finish()) for o in outcomes) if r is not None]
        unread = [r for r in refusals if r[0] == UNREAD]
        assert not unread or limit == "requests_per_second", unread[0][2][:300]
        refusals = [r for r in refusals if r[0] != UNREAD]
        if not refusals:
            time.sleep(1 if unread else 0)
            continue
        for name, wait_ms, text in refusals:
            assert name == limit, f"refused by another limit: {text[:300]}"
            assert wait_ms is not None, f"no retry_after_ms: {text[:300]}"
        time.sleep(max(wait_ms for _, wait_ms, _ in refusals) / 1000 + 0.02)
        return succeeded(invoke(tool, args, token), "the invocation after the wait")
    raise AssertionError(f"10 rounds of {parallel} invocations at once, none refused")


class Limits:
    def request_rate_refusal_read(self):
        # An invocation is three requests or more (initialize, initialized, the call): five at
        # once outrun 10 a second with bursts of 5.
        refused_then_retried("list_sessions", {}, TOKEN, "requests_per_second", parallel=5)

    def tool_call_rate_refusal_read(self):
        refused_then_retried("list_sessions", {}, limit_token("tool_calls"),
                             "tool_calls_per_second", parallel=4)

    def concurrent_waits_refusal_read(self):
        token = limit_token("waits")
        with tmux_session(token, "waits") as pane:
            second = {"target": pane, "patterns": ["^released-42$"], "regex": True,
                      "include_screen": True, "timeout": 10}
            first = Invocation("tools/call", token, "wait_for_text",
                               {"target": pane, "patterns": ["released-42"], "timeout": 30})
            Workflow.until_waits(1)
            refusal = refusal_in(invoke("wait_for_text", second, token))
            assert refusal is not None, "a second wait ran beside the first"
            limit, retry_ms, text = refusal
            assert limit == "max_concurrent_waits", text[:300]
            assert "finish" in text, f"no hint to let a wait finish: {text[:300]}"
            succeeded(invoke("send_keys", {"target": pane, "keys": "echo released-$((40+2))",
                                           "literal": True, "enter": True}, token), "send_keys")
            found = succeeded(first.finish(), "the first wait")
            assert found["outcome"] == "matched", found
            if retry_ms is not None:
                time.sleep(retry_ms / 1000)
            found = succeeded(invoke("wait_for_text", second, token), "the retried wait")
            assert found["outcome"] == "matched", found

    def output_budget_refusal_read(self):
        token = limit_token("output")
        with tmux_session(token, "output") as pane:
            succeeded(invoke("send_keys", {"target": pane, "keys": SMALL_FLOOD, "literal": True,
                                           "enter": True}, token), "send_keys")
            succeeded(invoke("wait_for_text", {"target": pane, "regex": True, "timeout": 30,
                                               "patterns": [f"^{SMALL_FLOOD_DONE}$"]}, token),
                      "wait_for_text")
            code, result, err = invoke(
                "capture_pane", {"target": pane, "start": "-", "max_lines": 100000}, token
            )
            assert code == 5 and result is not None and result.get("isError"), (
                f"a 300 KB capture: exit {code}: {err.strip()[-300:]}"
            )
            text = result_text(result)
            assert "output budget" in text or "max_output_bytes" in text, text[:300]
            assert "ask for less" in text, f"no hint to ask for less: {text[:300]}"
            captured = succeeded(
                invoke("capture_pane", {"target": pane, "start": -30, "max_lines": 20}, token),
                "the smaller capture",
            )
            assert SMALL_FLOOD_DONE in captured["text"].split("\n"), captured["text"][-500:]

    def sessions_per_client_cap(self):
        # Every invocation opens an MCP session; whether the CLI ends it (DELETE) as it exits
        # or leaves it open, after max_sessions_per_client + 3 invocations the next succeeds.
        token = limit_token("sessions")
        refused = []
        for _ in range(MAX_SESSIONS + 3):
            code, out, err = run("tools/list", token=token, url=SESSIONS_URL)
            if code != 0:
                envelope = json.loads(err.strip().splitlines()[-1])["error"]
                assert envelope.get("status") == 429, envelope
                refused.append(envelope["message"])
        code, result, err = invoke("list_sessions", {}, token, url=SESSIONS_URL)
        if code != 0:
            envelope = json.loads(err.strip().splitlines()[-1])["error"]
            wait_ms = retry_after_ms(envelope)
            assert wait_ms is not None, (
                f"after {MAX_SESSIONS + 3} invocations ({len(refused)} refused), a new one was "
                f"refused with HTTP {envelope.get('status')} without Retry-After, though the "
                f"sessions it counts are idle: {envelope['message'][:300]}"
            )
            time.sleep(wait_ms / 1000)
            code, result, err = invoke("list_sessions", {}, token, url=SESSIONS_URL)
        succeeded((code, result, err), "the invocation after the others")


@contextmanager
def tmux_session(token, kind):
    """A tmux session of the step's own; yields its pane, then kills it."""
    name = f"{LABEL}-{kind}-{os.getpid()}"
    created = succeeded(invoke("create_session", {"name": name, "width": 120, "height": 40},
                               token), "create_session")
    pane = created["session"]["active_pane_id"]
    try:
        succeeded(invoke("run_command", {"target": pane, "command": "true", "timeout": 20},
                         token), "run_command")
        yield pane
    finally:
        succeeded(invoke("kill_session", {"target": name}, token), "kill_session")


def step(name, action):
    try:
        if action() != "skipped":
            print(f"PASS {name}", flush=True)
        return True
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        print(f"FAIL {name}: {str(error)[:500] or type(error).__name__}", flush=True)
        return False


if sys.argv[2:] == ["quirks"]:
    # Each quirk is a request the CLI cannot be made to send: it proposes its own protocol
    # version, always opens with `initialize`, and speaks 2025-11-25 only.
    for name in QUIRK_STEPS:
        print(f"SKIP {name}: the CLI sends only its own handshake at its own version", flush=True)
    sys.exit(0)

if sys.argv[2:] == ["limits"]:
    limits = Limits()
    for name in LIMIT_STEPS:
        step(name, getattr(limits, name))
    sys.exit(0)

flow = Workflow()
for index, name in enumerate(STEPS):
    if not step(name, getattr(flow, name)) and name == "create_session":
        for rest in STEPS[index + 1:]:
            print(f"FAIL {rest}: no session to work in", flush=True)
        break
step("cleanup", flow.cleanup)
step("expired_token_401", expired_token_401)
