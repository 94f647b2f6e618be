#!/usr/bin/env python3
"""A small interactive program that behaves like an agent CLI, for tests of prompt delivery.

It has what makes real agent CLIs hard to drive from outside:
- a slow start-up with a spinner, after which it enters raw mode and discards whatever was
  typed meanwhile (as entering raw mode with TCSAFLUSH does);
- a bordered input box, redrawn on every key, with the cursor at the end of the input;
- bracketed paste; an Enter that arrives within 50 ms of a paste's end is taken as part of
  the paste (a newline in the box), as programs that detect pastes by timing do;
- a busy spinner while "thinking" after each prompt, during which it reads nothing and after
  which it discards what was typed meanwhile;
- a yes/no permission question after a prompt containing "permission" (other keys ignored).

Each submitted prompt is appended to the log file as one JSON line {"prompt": ...}; an empty
input box ignores Enter. Ctrl-C ends it. With --drop-first-enter, the first Enter after each
paste is ignored, as a program still settling a paste may do.

Usage: agent_cli.py --log FILE [--startup SECS] [--busy MIN MAX] [--seed N] [--drop-first-enter]
"""

import argparse
import json
import os
import random
import select
import sys
import termios
import time
import tty

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
ENTER_AFTER_PASTE = 0.05


def out(text):
    os.write(1, text.encode())


class Agent:
    def __init__(self, log, busy, rng, drop_first_enter=False):
        self.log = log
        self.drop_first_enter = drop_first_enter
        self.enter_dropped = True
        self.busy = busy
        self.rng = rng
        self.transcript = ["agent-cli ready"]
        self.buffer = ""
        self.question = None
        self.in_paste = False
        self.paste_ended = 0.0
        self.pending = b""

    def record(self, entry):
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def draw(self, status=""):
        cols, rows = os.get_terminal_size(1)
        inner = max(cols - 4, 10)
        if self.question:
            lines = [self.question]
        else:
            lines = []
            for i, line in enumerate(self.buffer.split("\n")):
                line = ("> " if i == 0 else "  ") + line
                lines.extend(line[j : j + inner] for j in range(0, max(len(line), 1), inner))
                if len(line) > 0 and len(line) % inner == 0:
                    lines.append("")
        box = ["╭" + "─" * (cols - 2) + "╮"]
        box += ["│ " + line.ljust(inner) + " │" for line in lines]
        box.append("╰" + "─" * (cols - 2) + "╯")
        above = rows - len(box) - 1
        shown = self.transcript[-above:] if above > 0 else []
        screen = [""] * (above - len(shown)) + shown + [status] + box
        out("\x1b[H\x1b[2J" + "\r\n".join(s[:cols] for s in screen[-rows:]))
        # The cursor at the end of the input: the last box row's text end.
        last = lines[-1]
        row = len(screen[-rows:]) - 1
        out(f"\x1b[{row};{3 + len(last)}H")

    def submit(self):
        text = self.buffer.strip()
        self.buffer = ""
        if not text:
            self.draw()
            return
        self.record({"prompt": text})
        self.transcript += ["> " + line for line in text.split("\n")]
        self.think()
        self.transcript.append("● done: " + text.split("\n")[0][:20])
        if "permission" in text:
            self.question = "Allow `rm -rf build`? [y/n]"
        self.draw()

    def think(self):
        until = time.monotonic() + self.rng.uniform(*self.busy)
        frame = 0
        while time.monotonic() < until:
            self.draw(SPINNER[frame % len(SPINNER)] + " thinking")
            frame += 1
            time.sleep(0.08)
        termios.tcflush(0, termios.TCIFLUSH)
        self.pending = b""
        self.in_paste = False

    def answer(self, data):
        """Only a single key press answers; pastes and other keys are ignored."""
        if data in (b"y", b"n"):
            self.record({"permission": data.decode()})
            self.transcript.append("allowed" if data == b"y" else "denied")
            self.question = None
            self.draw()

    def feed(self, data):
        data = self.pending + data
        self.pending = b""
        now = time.monotonic()
        i = 0
        while i < len(data):
            if self.in_paste:
                end = data.find(PASTE_END, i)
                if end < 0:
                    keep = len(data)
                    # A marker cut in two: keep its start for the next read.
                    for cut in range(1, len(PASTE_END)):
                        if data.endswith(PASTE_END[:cut]):
                            keep = len(data) - cut
                            self.pending = data[keep:]
                            break
                    self.insert(data[i:keep].decode(errors="replace"))
                    return
                self.insert(data[i:end].decode(errors="replace"))
                self.in_paste = False
                self.paste_ended = now
                self.enter_dropped = not self.drop_first_enter
                i = end + len(PASTE_END)
                continue
            if data.startswith(PASTE_START, i):
                self.in_paste = True
                i += len(PASTE_START)
                continue
            if data[i : i + 1] == b"\x1b":
                if len(data) - i < len(PASTE_START) and PASTE_START.startswith(data[i:]):
                    self.pending = data[i:]
                    return
                # Another escape sequence: skip it whole.
                j = i + 1
                if data[j : j + 1] == b"[":
                    j += 1
                    while j < len(data) and not 0x40 <= data[j] <= 0x7E:
                        j += 1
                i = j + 1
                continue
            ch = data[i : i + 1]
            i += 1
            if ch == b"\x03":
                raise KeyboardInterrupt
            if ch == b"\r":
                if now - self.paste_ended < ENTER_AFTER_PASTE:
                    self.insert("\n")
                elif not self.enter_dropped:
                    self.enter_dropped = True
                else:
                    self.submit()
                    # What was typed while thinking was discarded.
                    return
            elif ch == b"\n":
                self.insert("\n")
            elif ch == b"\x7f":
                self.buffer = self.buffer[:-1]
            elif ch >= b" ":
                rest = data[i - 1 :]
                run = len(rest)
                for k, b in enumerate(rest):
                    if b < 0x20 or b == 0x7F:
                        run = k
                        break
                self.insert(rest[:run].decode(errors="replace"))
                i += run - 1
        self.draw()

    def insert(self, text):
        self.buffer += text.replace("\r\n", "\n").replace("\r", "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--startup", type=float, default=1.0)
    parser.add_argument("--busy", type=float, nargs=2, default=[0.3, 1.2])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--drop-first-enter", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    out("agent-cli starting\r\n")
    until = time.monotonic() + args.startup
    frame = 0
    while time.monotonic() < until:
        out("\r" + SPINNER[frame % len(SPINNER)] + " loading")
        frame += 1
        time.sleep(0.08)
    saved = termios.tcgetattr(0)
    tty.setraw(0)  # TCSAFLUSH: what was typed during start-up is gone
    out("\x1b[?2004h")
    agent = Agent(args.log, args.busy, rng, args.drop_first_enter)
    agent.draw()
    try:
        while True:
            select.select([0], [], [])
            data = os.read(0, 4096)
            if not data:
                break
            if agent.question:
                agent.answer(data)
            else:
                agent.feed(data)
    except KeyboardInterrupt:
        pass
    finally:
        out("\x1b[?2004l\x1b[H\x1b[2J")
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)


if __name__ == "__main__":
    sys.exit(main())
