"""The interop workflow driven by the official Python MCP SDK (2.x in `auto` or `legacy` mode,
or 1.x), against a running muxgate.

Usage: python python_client.py auto|legacy|v1 [limits|secrets|quirks]

With `limits`, runs the limit steps instead (LIMIT_STEPS in workflow.py), against a gateway
whose limits trip. With `secrets`, runs the secret entry steps (SECRET_STEPS): the link
reaches the client's elicitation handler and never the tool result. With `quirks`, the quirk
steps (QUIRK_STEPS): requests other clients send, made through this SDK's transport.

Environment (set by tests/interop/run): INTEROP_URL, INTEROP_TOKEN, INTEROP_EXPIRED_TOKEN,
INTEROP_METRICS_URL, INTEROP_CLIENT (a label, used in tmux session names); with `limits`, the
limit steps' tokens (INTEROP_LIMIT_TOKEN_*), INTEROP_SESSIONS_URL and INTEROP_MAX_SESSIONS.

Prints one `PASS <step>` or `FAIL <step>: <why>` line per step of the shared workflow
(see ../workflow.md; shared parts in workflow.py) and exits 0; the runner counts the lines.
"""

import hashlib
import json
import os
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from contextlib import asynccontextmanager

import anyio
import mcp
from workflow import (
    EXPIRED,
    FLOOD,
    FUTURE_VERSION,
    KNOWN_VERSIONS,
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

MODE = sys.argv[1] if len(sys.argv) > 1 else "auto"
V1 = MODE == "v1"

if V1:
    from mcp.shared.exceptions import McpError as JsonRpcError
    from mcp.types import ElicitResult
else:
    from mcp import MCPError as JsonRpcError
    from mcp_types import ElicitResult


@asynccontextmanager
async def connect(token, responses=None, url=URL, terminate=True, elicitation=None,
                  on_request=None, mode=MODE, before_initialize=None):
    """An initialized session, whichever SDK generation is installed. With `responses`, the
    HTTP status, headers and (for an error) body of every response the client receives are
    appended to it. With `terminate` false, the session is left open at the gateway (no
    DELETE) when the client closes. With `elicitation`, the client declares elicitation (form
    and URL) and hands requests to that callback. `on_request` sees (and may change) every HTTP
    request before it is sent; `mode` overrides the 2.x negotiation mode; `before_initialize`
    (1.x) is awaited with the raw session before its handshake."""
    headers = {"Authorization": f"Bearer {token}"}
    hooks = {}
    if responses is not None:

        async def record(response):
            body = ""
            if response.status_code >= 400:
                body = (await response.aread()).decode(errors="replace")
            responses.append((response.status_code, dict(response.headers), body))

        hooks["response"] = [record]
    if on_request is not None:
        hooks["request"] = [on_request]
    if V1:
        from mcp.client.streamable_http import streamablehttp_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        def client_with_hooks(**kwargs):
            client = create_mcp_http_client(**kwargs)
            client.event_hooks = hooks
            return client

        async with streamablehttp_client(
            url, headers=headers, httpx_client_factory=client_with_hooks,
            terminate_on_close=terminate,
        ) as (read, write, _):
            async with mcp.ClientSession(read, write, elicitation_callback=elicitation) as session:
                if before_initialize is not None:
                    await before_initialize(session)
                await session.initialize()
                yield Session(session)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=headers, timeout=60, event_hooks=hooks) as http:
            async with mcp.Client(
                streamable_http_client(url, http_client=http, terminate_on_close=terminate),
                mode=mode,
                elicitation_callback=elicitation,
            ) as client:
                yield Session(client)


class Session:
    """The calls the workflow needs, the same over both SDK generations."""

    def __init__(self, inner):
        self.inner = inner

    async def tool_names(self):
        return [t.name for t in (await self.inner.list_tools()).tools]

    async def call(self, name, args, progress=None):
        """(is_error, structured content or text)."""
        result = await self.inner.call_tool(name, args, progress_callback=progress)
        is_error = bool(result.isError if V1 else result.is_error)
        structured = result.structuredContent if V1 else result.structured_content
        if structured is None:
            structured = " ".join(getattr(c, "text", "") for c in result.content)
        return is_error, structured

    async def ok(self, name, args, progress=None):
        is_error, value = await self.call(name, args, progress)
        if is_error:
            raise AssertionError(f"{name} failed: {value}")
        return value


class Workflow:
    def __init__(self, session):
        self.s = session
        self.panes = []

    async def list_tools(self):
        names = await self.s.tool_names()
        wanted = {"run_command", "send_keys_batch", "wait_for_text", "capture_since"}
        missing = wanted - set(names)
        assert not missing, f"missing tools {missing} in {len(names)}"

    async def create_session(self):
        name = f"{LABEL}-{os.getpid()}"
        created = await self.s.ok("create_session", {"name": name, "width": 120, "height": 40})
        first = created["session"]["active_pane_id"]
        second = (await self.s.ok("split_window", {"target": first}))["id"]
        assert first.startswith("%") and second.startswith("%"), f"{first} {second}"
        self.session_name = name
        self.panes = [first, second]
        # Both shells are up before anyone types into them.
        for pane in self.panes:
            await self.s.ok("run_command", {"target": pane, "command": "true", "timeout": 20})

    async def run_command_exit_status(self):
        result = await self.s.ok(
            "run_command",
            {"target": self.panes[0], "command": "echo out-$((6*7)); sh -c 'exit 7'"},
        )
        assert result["exit_status"] == 7, result
        assert result["output"] == "out-42\n", result

    async def send_keys_batch_two_panes(self):
        ops = [
            {"target": self.panes[0], "keys": "sleep 0.3; echo left-$((1+1))", "literal": True},
            {"target": self.panes[1], "keys": "sleep 0.3; echo right-$((2+2))", "literal": True},
        ]
        found = {}

        async def wait(pane, text):
            found[text] = await self.s.ok(
                "wait_for_text", {"target": pane, "patterns": [f"^{text}$"], "regex": True}
            )

        async with anyio.create_task_group() as tg:
            for pane, text in zip(self.panes, ["left-2", "right-4"]):
                tg.start_soon(wait, pane, text)
            await anyio.sleep(0.3)
            result = await self.s.ok("send_keys_batch", {"operations": ops})
        assert result["succeeded"] == 2 and result["failed"] == 0, result
        for text, seen in found.items():
            assert seen["outcome"] == "matched", f"{text}: {seen}"

    async def wait_for_text_woken(self):
        pane = self.panes[1]
        results = {}

        async def wait():
            started = time.monotonic()
            results["found"] = await self.s.ok(
                "wait_for_text", {"target": pane, "patterns": ["woke-42"], "timeout": 20}
            )
            results["waited"] = time.monotonic() - started

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.sleep(0.3)
            await self.s.ok(
                "send_keys",
                {"target": pane, "keys": "sleep 0.5; echo woke-$((40+2))", "literal": True,
                 "enter": True},
            )
        found = results["found"]
        assert found["outcome"] == "matched" and found["matched_line"] == "woke-42", found
        assert results["waited"] >= 0.5, f"returned after {results['waited']:.2f} s: {found}"

    async def capture_since_new_lines(self):
        pane = self.panes[0]
        start = await self.s.ok("capture_since", {"target": pane})
        await self.s.ok(
            "send_keys",
            {"target": pane, "keys": "echo fresh-$((3*3))", "literal": True, "enter": True},
        )
        await self.s.ok("wait_for_text", {"target": pane, "patterns": ["^fresh-9$"], "regex": True})
        later = await self.s.ok("capture_since", {"cursor": start["cursor"]})
        lines = later["lines"]
        assert "fresh-9" in lines, later
        assert "out-42" not in lines and "left-2" not in lines, f"old lines came back: {later}"

    async def capped_capture_readable(self):
        # Answers capped at the gateway's output budget fit the SDK's message limit (1 MiB of
        # SSE event in the 2.x SDK) whole: the text is in the answer twice, escaped twice.
        pane = self.panes[1]
        ran = await self.s.ok("run_command", {"target": pane, "command": FLOOD, "timeout": 50})
        assert ran["exit_status"] == 0, {k: v for k, v in ran.items() if k != "output"}
        captured = await self.s.ok(
            "capture_pane", {"target": pane, "start": "-", "max_lines": 100000}
        )
        assert captured["truncated"] and captured["dropped_bytes"] > 0, captured["lines"]
        # The shell's prompt follows the last line of output.
        last_lines = captured["text"].rstrip("\n").split("\n")[-3:]
        assert LAST_LINE in last_lines, last_lines

    async def validation_error_is_error(self):
        is_error, value = await self.s.call("run_command", {"target": self.panes[0]})
        assert is_error, f"missing `command` was accepted: {value}"
        assert "command" in json.dumps(value), value

    async def unknown_tool_jsonrpc_error(self):
        try:
            result = await self.s.inner.call_tool("no_such_tool", {})
        except JsonRpcError as error:
            assert "no_such_tool" in str(error) or "not found" in str(error).lower(), error
            return
        raise AssertionError(f"an unknown tool returned a result: {result}")

    async def batch_progress(self):
        seen = []

        async def progress(value, total, message):
            seen.append((value, total))

        ops = [{"target": self.panes[1], "keys": f": p{i}", "literal": True} for i in range(6)]
        result = await self.s.ok("send_keys_batch", {"operations": ops}, progress=progress)
        assert result["succeeded"] == 6, result
        await anyio.sleep(0.2)
        assert len(seen) >= 6, f"progress notifications: {seen}"
        assert seen[-1] == (6, 6), seen

    async def cancelled_wait(self):
        assert waits_active() == 0, "a wait was already in flight"
        args = {"target": self.panes[1], "patterns": ["never-printed"], "timeout": 60}
        if V1:
            # SDK 1.x does not tell the server when a call is abandoned; a client cancels with
            # notifications/cancelled naming the request.
            request_id = self.s.inner._request_id
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.s.ok, "wait_for_text", args)
                await anyio.sleep(1.0)
                await self.s.inner.send_notification(
                    mcp.types.ClientNotification(
                        mcp.types.CancelledNotification(
                            params=mcp.types.CancelledNotificationParams(
                                requestId=request_id, reason="interop: cancelled"
                            )
                        )
                    )
                )
                tg.cancel_scope.cancel()
        else:
            with anyio.move_on_after(1.0) as scope:
                await self.s.ok("wait_for_text", args)
            assert scope.cancelled_caught, "the wait returned before it was cancelled"
        # The gateway stops waiting: its gauge drops back to zero.
        deadline = time.monotonic() + 5
        while waits_active() != 0:
            assert time.monotonic() < deadline, "the gateway kept waiting after the cancel"
            await anyio.sleep(0.05)

    async def cleanup(self):
        if self.panes:
            await self.s.ok("kill_session", {"target": self.session_name})


async def expired_token_401():
    # The SDKs report a refused request in their own ways (an HTTP error in an exception group, a
    # JSON-RPC error standing in for the status): the status itself is read off the wire.
    statuses = []
    try:
        with anyio.fail_after(30):
            async with connect(EXPIRED, statuses) as session:
                await session.tool_names()
    except BaseException as error:  # noqa: BLE001 - whatever the SDK raises for the refusal
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        assert statuses and statuses[0][0] == 401, (
            f"HTTP statuses {[r[0] for r in statuses]}; "
            + "".join(traceback.format_exception(error))[-1500:]
        )
        return
    raise AssertionError(f"an expired token was accepted (HTTP statuses {[r[0] for r in statuses]})")


# Secret entry. The pane's program reads a line with echo off and says whether it was SECRET,
# without the secret on its command line.
SECRET = "hunter2 s3cret"
READ_SECRET = (
    "read -rs X; [ \"$(printf %s \"$X\" | sha256sum | cut -d' ' -f1)\" = "
    + hashlib.sha256(SECRET.encode()).hexdigest()
    + ' ] && echo "MATCHED ${#X}" || echo "DIFFERENT ${#X}"'
)
BASE = URL.removesuffix("/mcp")


def post_secret(link):
    """Types SECRET at `link`'s form, as the human's browser would (the pane may still be
    settling: a refusal is tried again)."""
    token = link.split("?t=", 1)[1]
    body = urllib.parse.urlencode({"t": token, "secret": SECRET}).encode()
    request = urllib.request.Request(
        f"{BASE}/secret",
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": BASE},
    )
    status = None
    for _ in range(100):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return
        except urllib.error.HTTPError as error:
            status = error.code
            if error.code != 409:
                break
        time.sleep(0.05)
    raise AssertionError(f"the secret form answered {status}")


class User:
    """A user at the client: shown each URL elicitation, types the secret there, then says yes."""

    def __init__(self):
        self.shown = []

    async def __call__(self, context, params):
        url = getattr(params, "url", None)
        if url is None:
            return ElicitResult(action="decline")
        self.shown.append(url)
        await anyio.to_thread.run_sync(post_secret, url)
        return ElicitResult(action="accept")


async def secret_pane(session, tag):
    """A fresh session whose shell waits in `read -s`: (session name, pane)."""
    name = f"{LABEL}-{tag}-{os.getpid()}"
    created = await session.ok("create_session", {"name": name, "width": 120, "height": 20})
    pane = created["session"]["active_pane_id"]
    await session.ok("run_command", {"target": pane, "command": "true", "timeout": 20})
    await session.ok(
        "send_keys", {"target": pane, "keys": READ_SECRET, "literal": True, "enter": True}
    )
    return name, pane


async def request_secret(session, pane):
    """Asks for the secret once the pane's program reads it: the structured answer, and the
    whole result as the model would be given it (JSON)."""
    args = {"target": pane, "label": "interop password", "expires_in_seconds": 120}
    for _ in range(100):
        result = await session.inner.call_tool("request_secret_input", args)
        dumped = result.model_dump_json(by_alias=True)
        if not (result.isError if V1 else result.is_error):
            structured = result.structuredContent if V1 else result.structured_content
            return structured, dumped
        assert "conflict" in dumped, dumped[:500]
        await anyio.sleep(0.05)
    raise AssertionError("the pane never became ready for a secret")


def assert_no_link(dumped):
    assert "/secret?" not in dumped and "?t=" not in dumped, f"the result holds a link: {dumped}"


async def secret_link_to_handler():
    """The client's elicitation handler receives the link (2026-07-28: in the tool call's
    `inputRequests`; 2025-11-25: an `elicitation/create` request), the user types the secret
    there, and the tool result says it was typed, with no link in it."""
    user = User()
    async with connect(TOKEN, elicitation=user) as session:
        if not V1:
            expected = "2026-07-28" if MODE == "auto" else "2025-11-25"
            version = session.inner.protocol_version
            assert version == expected, f"negotiated {version}, expected {expected}"
        name, pane = await secret_pane(session, "secret")
        answer, dumped = await request_secret(session, pane)
        assert len(user.shown) == 1, f"the handler was shown {user.shown}"
        link = user.shown[0]
        assert link.startswith(f"{BASE}/secret?t="), link
        assert_no_link(dumped)
        assert link.split("?t=", 1)[1] not in dumped, dumped
        assert answer["status"] == "typed", answer
        seen = await session.ok(
            "wait_for_text",
            {"target": pane, "patterns": [f"MATCHED {len(SECRET)}"], "include_screen": True,
             "timeout": 20},
        )
        assert seen["outcome"] == "matched", seen
        await session.ok("kill_session", {"target": name})


async def secret_fallback_without_handler():
    """A client without an elicitation handler gets no link either: the result says the
    request waits for an approver at the gateway, with its id."""
    async with connect(TOKEN) as session:
        name, pane = await secret_pane(session, "fallback")
        answer, dumped = await request_secret(session, pane)
        assert_no_link(dumped)
        assert answer["status"] == "pending", answer
        assert answer["request_id"] in answer["next_step"], answer
        assert "muxgate approvals secrets" in answer["next_step"], answer
        await session.ok("kill_session", {"target": name})


SECRET_STEPS = [secret_link_to_handler, secret_fallback_without_handler]


async def main_secrets():
    for run in SECRET_STEPS:
        await step(run.__name__, run)


# Calls in the limit step: the agent loop that lost its session when a refusal lacked the
# 2026-07-28 `resultType`.
LIMIT_LOOP = 150


async def request_rate_refusal_read(session):
    """An agent loop of `list_sessions` calls, faster than the request rate allows: each refusal
    arrives as an `isError` result naming `retry_after_ms`, the session survives it, and the
    call after waiting that long succeeds."""
    refused = 0
    retried_ok = 0
    # The limit that refused the call before, when the loop waited as told.
    waited_for = None
    for n in range(LIMIT_LOOP):
        is_error, value = await session.call("list_sessions", {})
        text = value if isinstance(value, str) else json.dumps(value)
        if not is_error:
            retried_ok += waited_for is not None
            waited_for = None
            continue
        assert "error (busy)" in text and "retry_after_ms: " in text, f"call {n}: {text[:300]}"
        limit, retry_ms = refusal_of(text)
        # The request rate and the tool-call rate are separate limits: waiting for one says
        # nothing about the other, but the one waited for must admit the call.
        assert limit != waited_for, f"call {n}, after waiting as `{limit}` said, was refused by it again: {text}"
        refused += 1
        await anyio.sleep(retry_ms / 1000 + 0.02)
        waited_for = limit
    # A loop the limit never refused shows nothing.
    assert refused >= 3, f"only {refused} of {LIMIT_LOOP} calls were refused: the limit did not trip"
    assert retried_ok >= refused // 2, f"{refused} refused, {retried_ok} retried calls succeeded"


async def read_refusal(session, name, args, limit):
    """Calls `name` until the gateway refuses it, which must be an `error (busy)` result naming
    `limit`; returns the refusal's text. At most 40 calls."""
    for n in range(40):
        is_error, value = await session.call(name, args)
        text = value if isinstance(value, str) else json.dumps(value)
        if is_error:
            assert text.startswith("error (busy)"), f"call {n}: {text[:300]}"
            assert refusal_of(text)[0] == limit, f"call {n} was refused by another limit: {text[:300]}"
            return text
    raise AssertionError(f"40 calls of {name} in a row, none refused by `{limit}`")


async def tool_call_rate_refusal_read(_):
    """A client whose tool-call rate (2 a second) trips long before its request rate: a loop
    of calls reads each refusal naming `tool_calls_per_second` and its `retry_after_ms`, and
    the call after waiting that long succeeds, three times over, in one session."""
    async with connect(limit_token("tool_calls")) as session:
        for _ in range(3):
            text = await read_refusal(session, "list_sessions", {}, "tool_calls_per_second")
            retry_ms = refusal_of(text)[1]
            assert retry_ms is not None, f"no retry_after_ms: {text[:300]}"
            await anyio.sleep(retry_ms / 1000 + 0.02)
            await session.ok("list_sessions", {})


async def concurrent_waits_refusal_read(_):
    """With one wait allowed at a time: a second wait while one runs is refused `busy`, naming
    `max_concurrent_waits` and saying to let the running one finish; once the first wait ends
    (its text typed into the pane) the same second call succeeds."""
    async with connect(limit_token("waits")) as session:
        name = f"{LABEL}-waits-{os.getpid()}"
        created = await session.ok("create_session", {"name": name, "width": 120, "height": 40})
        pane = created["session"]["active_pane_id"]
        try:
            await session.ok("run_command", {"target": pane, "command": "true", "timeout": 20})
            second = {"target": pane, "patterns": ["^released-42$"], "regex": True,
                      "include_screen": True, "timeout": 10}
            results = {}

            async def first_wait():
                results["first"] = await session.ok(
                    "wait_for_text", {"target": pane, "patterns": ["released-42"], "timeout": 30}
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(first_wait)
                deadline = time.monotonic() + 20
                while waits_active() < 1:
                    assert time.monotonic() < deadline, "the first wait never started"
                    await anyio.sleep(0.05)
                is_error, value = await session.call("wait_for_text", second)
                text = value if isinstance(value, str) else json.dumps(value)
                assert is_error, f"a second wait ran beside the first: {text[:300]}"
                assert text.startswith("error (busy)"), text[:300]
                limit, retry_ms = refusal_of(text)
                assert limit == "max_concurrent_waits", text[:300]
                assert "finish" in text, f"no hint to let a wait finish: {text[:300]}"
                await session.ok(
                    "send_keys",
                    {"target": pane, "keys": "echo released-$((40+2))", "literal": True,
                     "enter": True},
                )
            assert results["first"]["outcome"] == "matched", results["first"]
            if retry_ms is not None:
                await anyio.sleep(retry_ms / 1000)
            found = await session.ok("wait_for_text", second)
            assert found["outcome"] == "matched", found
        finally:
            await session.ok("kill_session", {"target": name})


async def output_budget_refusal_read(_):
    """With a 16 KiB output budget: a whole-scrollback capture of a pane holding 300 KB is
    refused, the error naming the output budget and telling to ask for less; the capture of
    the last lines (a smaller range, few `max_lines`) then succeeds."""
    async with connect(limit_token("output")) as session:
        name = f"{LABEL}-output-{os.getpid()}"
        created = await session.ok("create_session", {"name": name, "width": 120, "height": 40})
        pane = created["session"]["active_pane_id"]
        try:
            await session.ok("run_command", {"target": pane, "command": "true", "timeout": 20})
            await session.ok(
                "send_keys", {"target": pane, "keys": SMALL_FLOOD, "literal": True, "enter": True}
            )
            await session.ok(
                "wait_for_text",
                {"target": pane, "patterns": [f"^{SMALL_FLOOD_DONE}$"], "regex": True,
                 "timeout": 30},
            )
            is_error, value = await session.call(
                "capture_pane", {"target": pane, "start": "-", "max_lines": 100000}
            )
            text = value if isinstance(value, str) else json.dumps(value)
            assert is_error, f"a 300 KB capture came back whole: {text[:300]}"
            assert "output budget" in text or "max_output_bytes" in text, text[:300]
            assert "ask for less" in text, f"no hint to ask for less: {text[:300]}"
            captured = await session.ok(
                "capture_pane", {"target": pane, "start": -30, "max_lines": 20}
            )
            assert SMALL_FLOOD_DONE in captured["text"].split("\n"), captured["text"][-500:]
        finally:
            await session.ok("kill_session", {"target": name})


async def sessions_per_client_cap(_):
    """An agent that opens MCP session after MCP session and never ends one (no DELETE):
    after max_sessions_per_client + 3 of them, a new session and a call on it succeed (a 429
    naming Retry-After is waited out once), and no refusal on the way crashes the client."""
    token = limit_token("sessions")
    sessions = []  # the Mcp-Session-Id of each session opened
    refusals = []  # (HTTP status, body) of each session the gateway would not open

    async def open_one(call):
        responses = []
        try:
            with anyio.fail_after(20):
                async with connect(token, responses, url=SESSIONS_URL, terminate=False) as s:
                    sessions.append(
                        next((r[1].get("mcp-session-id") for r in responses
                              if r[1].get("mcp-session-id")), None)
                    )
                    if call:
                        await s.ok("list_sessions", {})
                    else:
                        await s.tool_names()
                return True
        except Exception as error:  # noqa: BLE001 - how the SDK reports a refused initialize
            refused = [r for r in responses if r[0] >= 400]
            assert refused, f"opening a session failed without a refusal: {error!r}"[:500]
            refusals.append(refused[0])
            return None

    for _ in range(MAX_SESSIONS + 3):
        await open_one(call=False)
    if sessions and sessions[0] is None:
        # The 2026-07-28 protocol has no MCP sessions: nothing to cap.
        assert not refusals, refusals
        return "skipped: the 2026-07-28 protocol opens no MCP sessions"
    assert len(set(sessions)) == len(sessions), f"a session id came back twice: {sessions}"
    opened = await open_one(call=True)
    if opened is None:
        status, headers, body = refusals[-1]
        retry = headers.get("retry-after")
        assert status == 429 and retry is not None, (
            f"after {len(sessions)} sessions left open ({len(refusals) - 1} refused), a new one "
            f"was refused with HTTP {status} without Retry-After, though the sessions it counts "
            f"are idle: {body[:300]}"
        )
        await anyio.sleep(float(retry))
        opened = await open_one(call=True)
        assert opened is not None, f"refused again after Retry-After: {refusals[-1]}"


LIMIT_STEP_RUNS = [
    request_rate_refusal_read,
    tool_call_rate_refusal_read,
    concurrent_waits_refusal_read,
    output_budget_refusal_read,
    sessions_per_client_cap,
]
assert [run.__name__ for run in LIMIT_STEP_RUNS] == LIMIT_STEPS


async def main_limits():
    async with connect(TOKEN) as session:
        for run in LIMIT_STEP_RUNS:
            await step(run.__name__, lambda run=run: run(session))


# Quirks: requests clients in the wild send, made through this SDK's own transport (an HTTP
# request hook) or by pinning the version it proposes.


def json_body(request):
    """The JSON-RPC message an HTTP request carries, or {} (a GET, a DELETE)."""
    try:
        return json.loads(request.content or b"{}")
    except (ValueError, RuntimeError):
        return {}


def proposing(version):
    """Makes this SDK propose `version` in its handshake; returns how to undo it."""
    if V1:
        import mcp.types as module
        name = "LATEST_PROTOCOL_VERSION"
    elif MODE == "auto":
        import mcp.client._probe as module
        name = "LATEST_MODERN_VERSION"
    else:
        import mcp.client.session as module
        name = "LATEST_HANDSHAKE_VERSION"
    saved = getattr(module, name)
    setattr(module, name, version)
    return lambda: setattr(module, name, saved)


async def future_version_negotiated():
    """A client from the future: its handshake (`initialize`, or in 2026-07-28 its
    `server/discover`) proposes a version the gateway does not know. The gateway answers with
    one it speaks (or the list of them, which the SDK retries with); the client's calls then
    carry that version and are served."""
    sent = []  # (method, version in the header or the initialize params)

    async def note(request):
        body = json_body(request)
        version = request.headers.get("mcp-protocol-version")
        if body.get("method") == "initialize":
            version = body["params"]["protocolVersion"]
        sent.append((body.get("method"), version))

    undo = proposing(FUTURE_VERSION)
    try:
        async with connect(TOKEN, on_request=note) as session:
            servers = await session.ok("list_servers", {})
    finally:
        undo()
    handshake = [v for m, v in sent if m in ("initialize", "server/discover")]
    calls = [v for m, v in sent if m == "tools/call"]
    assert handshake and handshake[0] == FUTURE_VERSION, f"the handshake proposed {handshake}"
    assert calls and all(v in KNOWN_VERSIONS for v in calls), f"calls carried {calls}"
    assert "servers" in json.dumps(servers), servers


async def initialize_after_discover():
    """A client that sends `initialize` after a successful `server/discover` (Claude Code
    does): the discover is answered, the handshake opens a 2025-11-25 session, and a call on
    it is served."""
    responses = []
    discovered = {}
    if V1:
        from mcp import types

        async def stamp(request):
            if json_body(request).get("method") == "server/discover":
                request.headers["mcp-protocol-version"] = "2026-07-28"
                request.headers["mcp-method"] = "server/discover"

        async def discover(session):
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": LABEL, "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            request = types.Request[dict, str](method="server/discover", params={"_meta": meta})
            result = await session.send_request(request, types.Result)
            discovered.update(result.model_extra or {})

        async with connect(TOKEN, responses, on_request=stamp, before_initialize=discover) as s:
            listed = await s.ok("list_servers", {})
    else:
        async with connect(TOKEN, responses, mode="auto") as s:
            discovered.update(await s.inner.session.send_discover("2026-07-28"))
            result = await s.inner.session.initialize()
            assert result.protocol_version == "2025-11-25", result.protocol_version
            listed = await s.ok("list_servers", {})
    assert "2026-07-28" in json.dumps(discovered), f"discover answered {discovered}"[:300]
    assert any(r[1].get("mcp-session-id") for r in responses), "no session was opened"
    assert "servers" in json.dumps(listed), listed


async def missing_name_header_named():
    """A 2026-07-28 `tools/call` without its `Mcp-Name` header: refused (HTTP 400) with a
    JSON-RPC error that names the header and value to send; the client survives (SDK 2.3 sends
    the call again, whole, by itself) and its next call is served."""
    if MODE != "auto":
        return "skipped: 2025-11-25 has no Mcp-Name header"
    strip = {"armed": True}
    responses = []

    async def drop_name(request):
        if strip["armed"] and json_body(request).get("method") == "tools/call":
            strip["armed"] = False
            del request.headers["mcp-name"]

    async with connect(TOKEN, responses, on_request=drop_name) as session:
        try:
            await session.call("list_servers", {})
        except JsonRpcError as error:
            assert "`Mcp-Name: list_servers`" in str(error), str(error)[:300]
        assert not strip["armed"], "no tools/call was sent"
        refusals = [(status, body) for status, _, body in responses if status >= 400]
        assert len(refusals) == 1, f"refusals: {refusals}"[:500]
        status, body = refusals[0]
        assert status == 400 and "`Mcp-Name: list_servers`" in body, f"{status} {body[:300]}"
        await session.ok("list_servers", {})


QUIRK_STEP_RUNS = [
    future_version_negotiated,
    initialize_after_discover,
    missing_name_header_named,
]
assert [run.__name__ for run in QUIRK_STEP_RUNS] == QUIRK_STEPS


async def main_quirks():
    for run in QUIRK_STEP_RUNS:
        await step(run.__name__, run)


async def step(name, run):
    try:
        with anyio.fail_after(60):
            outcome = await run()
        if isinstance(outcome, str) and outcome.startswith("skipped: "):
            print(f"SKIP {name}: {outcome.removeprefix('skipped: ')}", flush=True)
        else:
            print(f"PASS {name}", flush=True)
        return True
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        # The SDKs' task groups wrap what failed inside them: report that.
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        detail = str(error) or type(error).__name__
        print(f"FAIL {name}: {detail[:500]}", flush=True)
        return False


async def main():
    async with connect(TOKEN) as session:
        flow = Workflow(session)
        for name in STEPS:
            if not await step(name, getattr(flow, name)) and name == "create_session":
                for rest in STEPS[STEPS.index(name) + 1:]:
                    print(f"FAIL {rest}: no session to work in", flush=True)
                break
        await step("cleanup", flow.cleanup)
    await step("expired_token_401", expired_token_401)


MAINS = {("limits",): main_limits, ("secrets",): main_secrets, ("quirks",): main_quirks}
anyio.run(MAINS.get(tuple(sys.argv[2:]), main))
