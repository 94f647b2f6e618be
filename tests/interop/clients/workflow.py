"""What the Python-driven interop clients share: the workflow's steps (see ../workflow.md), the
environment the runner sets, and the gateway's own count of waits in flight. Standard library
only (the Inspector client runs on the system Python)."""

import os
import re
import urllib.request

URL = os.environ["INTEROP_URL"]
TOKEN = os.environ["INTEROP_TOKEN"]
EXPIRED = os.environ["INTEROP_EXPIRED_TOKEN"]
METRICS = os.environ["INTEROP_METRICS_URL"]
LABEL = os.environ["INTEROP_CLIENT"]

# In order; `cleanup` and `expired_token_401` follow.
STEPS = [
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
]


# Prints 12 000 lines of 101 bytes (1.2 MB, more than the gateway's default 1 MiB output budget)
# into a pane; the runner's tmux server keeps 30 000 lines of history.
FLOOD = "seq -f '%0100g' 1 12000"
LAST_LINE = "%0100d" % 12000


# The limit steps (see ../workflow.md, "Limits"), in order, run against the limits gateway with
# `limits` as the client's last argument. Each but the first uses its own token, whose `sub`
# the gateway's config gives that one small limit (and request rates no loop reaches).
LIMIT_STEPS = [
    "request_rate_refusal_read",
    "tool_call_rate_refusal_read",
    "concurrent_waits_refusal_read",
    "output_budget_refusal_read",
    "sessions_per_client_cap",
]


def limit_token(kind):
    """The token for the limit step `kind` (tool_calls, waits, output, sessions)."""
    return os.environ[f"INTEROP_LIMIT_TOKEN_{kind.upper()}"]


# The sessions step's own gateway, and its `http.max_sessions_per_client`.
SESSIONS_URL = os.environ.get("INTEROP_SESSIONS_URL", "")
MAX_SESSIONS = int(os.environ.get("INTEROP_MAX_SESSIONS", "0"))

# More than the output step's 16 KiB budget, and than the 64 KiB tmux reply it may receive: 3000
# lines of 101 bytes, then a line the step waits for.
SMALL_FLOOD = "seq -f '%0100g' 1 3000; echo flood-$((6*7))-done"
SMALL_FLOOD_DONE = "flood-42-done"


def refusal_of(text):
    """(limit, retry_after_ms) of a refusal's text: the limit is the first name in backticks
    (None when there is none), retry_after_ms None when the refusal gives no time."""
    limit = text.split("`")[1] if text.count("`") >= 2 else None
    retry = re.search(r"retry_after_ms: (\d+)", text)
    return limit, int(retry.group(1)) if retry else None


def waits_active():
    """muxgate's own gauge of waits in flight, read from /metrics."""
    with urllib.request.urlopen(METRICS, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("muxgate_waits_active"):
                return float(line.split()[-1])
    raise AssertionError("muxgate_waits_active missing from /metrics")


# The quirk steps (see ../workflow.md, "Quirks"), in order, with `quirks` as the client's last
# argument: what clients in the wild send that no SDK sends by default, made with the client's
# own transport.
QUIRK_STEPS = [
    "future_version_negotiated",
    "initialize_after_discover",
    "missing_name_header_named",
]

# A protocol version no gateway knows yet, and the ones muxgate speaks.
FUTURE_VERSION = "2099-01-01"
KNOWN_VERSIONS = ("2025-11-25", "2026-07-28")
