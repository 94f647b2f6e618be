#!/usr/bin/env python3
"""A stand-in for an agent CLI's screens, for tests of agent state: run it under the name of
the CLI it plays (claude, codex, gemini, aider, opencode; its file name says which).

Like the real CLIs it takes over the screen (the alternate screen) and redraws it whole:
- a start-up of --startup seconds that shows only a banner;
- its idle screen (the CLI's input box and hint line), waiting for a line;
- on a line: a busy screen whose spinner line (the CLI's own busy wording) is redrawn every
  100 ms for --busy seconds; then, mid-task, the CLI's permission dialog below that spinner
  line, waiting for a line; then busy again for --busy seconds, and idle;
- on the line `/exit`: it ends.
With --log FILE, every line it reads is appended to FILE (what it was given, in order); with
--events FILE, `<unix ms> <$MUXGATE_AGENT_ID> idle|dialog|read <line>` is appended when it
shows its idle screen or its dialog and when it reads a line (when each edge happened, for
measurements of many agents sharing one file). $STAND_IN_BUSY, when set, replaces --busy (a
different pace per agent of one configured kind).
"""

import argparse
import os
import select
import sys
import time

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

# Per CLI: its idle screen, its busy line ({s}: seconds, {c}: a spinner frame), its dialog.
SCREENS = {
    "claude": (
        "╭──────────────────────────────╮\n│ >                            │\n"
        "╰──────────────────────────────╯\n  ? for shortcuts",
        "{c} Thinking… ({s}s · esc to interrupt)",
        "╭──────────────────────────────╮\n│ Bash command                 │\n│   git push                   │\n"
        "│ Do you want to proceed?      │\n│ ❯ 1. Yes                     │\n"
        "│   2. No, and tell Claude what to do differently (esc) │\n╰──────────────────────────────╯",
    ),
    "codex": (
        "▌ Ask Codex to do anything\n ⏎ send   ⌃J newline   ⌃T transcript   ⌃C quit",
        "{c} Working ({s}s • esc to interrupt)",
        "Would you like to run the following command?\n  $ git push\n"
        "› 1. Yes, proceed\n  2. No, and tell Codex what to do differently",
    ),
    "gemini": (
        "╭──────────────────────────────────────╮\n│ >   Type your message or @path/to/file │\n"
        "╰──────────────────────────────────────╯",
        "{c} Thinking... (esc to cancel, {s}s)",
        "Allow execution of: 'git push'?\n● 1. Yes, allow once\n  2. Yes, allow always\n  3. No",
    ),
    "aider": (
        "Tokens: 1.2k sent, 210 received.\n\ndiff> ",
        "{c} Waiting for claude-sonnet-4 {s}s",
        "git push\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ",
    ),
    "opencode": (
        "┃ \n┃  enter send   ctrl+p commands",
        "{c} Generating... esc interrupt",
        "△ Permission required\n  $ git push\n  enter accept   a accept always   esc reject",
    ),
}


def show(text):
    os.write(1, ("\x1b[2J\x1b[H" + text.replace("\n", "\r\n")).encode())


LOG = None
EVENTS = None


def mark(what):
    """Notes when the screen showed `what` (--events)."""
    if EVENTS:
        with open(EVENTS, "a") as events:
            agent = os.environ.get("MUXGATE_AGENT_ID", "-")
            events.write(f"{int(time.time() * 1000)} {agent} {what}\n")


def read_line(timeout):
    """A line typed within `timeout` seconds (None: none)."""
    ready, _, _ = select.select([0], [], [], timeout)
    if not ready:
        return None
    line = sys.stdin.readline().strip()
    if LOG:
        with open(LOG, "a") as log:
            log.write(line + "\n")
    mark("read " + line)
    return line


def busy(line, seconds, below=""):
    start = time.monotonic()
    frame = 0
    while time.monotonic() - start < seconds:
        spin = line.format(c=SPINNER[frame % len(SPINNER)], s=int(time.monotonic() - start))
        show("● working on the task\n\n" + spin + ("\n\n" + below if below else ""))
        frame += 1
        time.sleep(0.1)
    return line.format(c=SPINNER[0], s=int(seconds))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--startup", type=float, default=1.0)
    parser.add_argument("--busy", type=float, default=1.5)
    parser.add_argument("--log")
    parser.add_argument("--events")
    # What a CLI is resumed with (spawn_agent resume): taken, and shown by its command line.
    parser.add_argument("--continue", action="store_true")
    parser.add_argument("--resume", metavar="SESSION")
    args = parser.parse_args()
    global LOG, EVENTS
    LOG = args.log
    EVENTS = args.events
    if os.environ.get("STAND_IN_BUSY"):
        args.busy = float(os.environ["STAND_IN_BUSY"])
    name = os.path.basename(sys.argv[0])
    idle, working, dialog = SCREENS[name]
    os.write(1, b"\x1b[?1049h")
    show(f"{name} starting up")
    time.sleep(args.startup)
    while True:
        show(idle)
        mark("idle")
        line = read_line(None)
        if line == "/exit" or line is None:
            break
        last = busy(working, args.busy)
        # The dialog opens mid-task, below the spinner's last frame.
        show("● working on the task\n\n" + last + "\n\n" + dialog)
        mark("dialog")
        read_line(None)
        busy(working, args.busy)
    os.write(1, b"\x1b[?1049l")


if __name__ == "__main__":
    main()
