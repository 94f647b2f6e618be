"""What the Python-driven interop clients share: the workflow's steps (see ../workflow.md), the
environment the runner sets, and the gateway's own count of waits in flight. Standard library
only (the Inspector client runs on the system Python)."""

import os
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


def waits_active():
    """muxgate's own gauge of waits in flight, read from /metrics."""
    with urllib.request.urlopen(METRICS, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("muxgate_waits_active"):
                return float(line.split()[-1])
    raise AssertionError("muxgate_waits_active missing from /metrics")
