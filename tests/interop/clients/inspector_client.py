"""The interop workflow driven by the MCP Inspector CLI (one CLI process per request), against a
running muxgate. Standard library only.

Usage: python3 inspector_client.py PATH_TO_MCP_INSPECTOR

Environment (set by tests/interop/run): INTEROP_URL, INTEROP_TOKEN, INTEROP_EXPIRED_TOKEN,
INTEROP_METRICS_URL, INTEROP_CLIENT.

Prints `PASS <step>`, `FAIL <step>: <why>` or, for what the CLI cannot express,
`SKIP <step>: <why>` lines (see ../workflow.md; shared parts in workflow.py); the runner counts them.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from workflow import EXPIRED, FLOOD, LABEL, LAST_LINE, STEPS, TOKEN, URL, waits_active

INSPECTOR = sys.argv[1]
# The CLI keeps a catalog of servers and client settings; keep them out of the user's home.
HOME = tempfile.mkdtemp(prefix="muxgate-inspector-")
ENV = dict(os.environ, MCP_CATALOG_PATH=os.path.join(HOME, "mcp.json"),
           MCP_CLIENT_CONFIG_PATH=os.path.join(HOME, "client.json"))


def command(method, token=TOKEN, tool=None, args=None):
    argv = [
        INSPECTOR, "--cli", URL, "--transport", "http",
        "--header", f"Authorization: Bearer {token}", "--stored-auth-only",
        "--format", "json", "-q", "--method", method,
    ]
    if tool is not None:
        argv += ["--tool-name", tool, "--tool-args-json", json.dumps(args or {})]
    return argv


def run(method, token=TOKEN, tool=None, args=None, timeout=60):
    """(exit code, stdout, stderr) of one CLI request."""
    done = subprocess.run(
        command(method, token, tool, args), capture_output=True, text=True, timeout=timeout,
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



def step(name, action):
    try:
        if action() != "skipped":
            print(f"PASS {name}", flush=True)
        return True
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        print(f"FAIL {name}: {str(error)[:500] or type(error).__name__}", flush=True)
        return False


flow = Workflow()
for index, name in enumerate(STEPS):
    if not step(name, getattr(flow, name)) and name == "create_session":
        for rest in STEPS[index + 1:]:
            print(f"FAIL {rest}: no session to work in", flush=True)
        break
step("cleanup", flow.cleanup)
step("expired_token_401", expired_token_401)
