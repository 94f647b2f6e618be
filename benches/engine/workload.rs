//! The three measured commands, in both forms: an argv for a `tmux` subprocess and a
//! [`TmuxCommand`] for the engine, plus a check that each reply is what the command should print
//! (so a benchmark of failing commands cannot pass unnoticed).

use anyhow::{Result, ensure};
use muxgate_tmux::TmuxCommand;

use crate::fixture::{BenchTmux, SCREEN_ROWS};

/// Which command is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `display-message -p '#{pane_id}'`: the cheapest query.
    DisplayMessage,
    /// `send-keys -t <pane> -l -- x` into a pane that consumes its input.
    SendKeys,
    /// `capture-pane -p -t <pane>` of a full 120x40 screen.
    CapturePane,
}

impl Op {
    pub(crate) const ALL: [Op; 3] = [Op::DisplayMessage, Op::SendKeys, Op::CapturePane];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Op::DisplayMessage => "display-message",
            Op::SendKeys => "send-keys",
            Op::CapturePane => "capture-pane",
        }
    }
}

/// One command ready to run many times.
#[derive(Clone)]
pub(crate) struct Workload {
    pub op: Op,
    /// Arguments after `tmux -L <socket>`.
    pub argv: Vec<String>,
    pub command: TmuxCommand,
}

impl Workload {
    pub(crate) fn new(op: Op, tmux: &BenchTmux) -> Result<Self> {
        let typing = tmux.typing_pane();
        let screen = tmux.screen_pane();
        let (argv, command) = match op {
            Op::DisplayMessage => (
                argv(&["display-message", "-p", "#{pane_id}"]),
                TmuxCommand::for_test("display-message")
                    .flag("-p")
                    .trusted_format("#{pane_id}")
                    .build()?,
            ),
            Op::SendKeys => (
                argv(&["send-keys", "-t", &typing.to_string(), "-l", "--", "x"]),
                TmuxCommand::for_test("send-keys")
                    .target(typing)
                    .flag("-l")
                    .end_of_options()
                    .arg("x")
                    .build()?,
            ),
            Op::CapturePane => (
                argv(&["capture-pane", "-p", "-t", &screen.to_string()]),
                TmuxCommand::for_test("capture-pane")
                    .flag("-p")
                    .target(screen)
                    .build()?,
            ),
        };
        Ok(Self { op, argv, command })
    }

    /// Checks one reply, given as its output lines.
    pub(crate) fn check<L: AsRef<[u8]>>(&self, lines: &[L]) -> Result<()> {
        match self.op {
            Op::DisplayMessage => ensure!(
                lines.len() == 1 && lines[0].as_ref().starts_with(b"%"),
                "display-message printed {} lines instead of one pane id",
                lines.len()
            ),
            Op::SendKeys => ensure!(
                lines.is_empty(),
                "send-keys printed {} lines instead of nothing",
                lines.len()
            ),
            Op::CapturePane => ensure!(
                lines.len() == SCREEN_ROWS,
                "capture-pane printed {} lines instead of {SCREEN_ROWS}",
                lines.len()
            ),
        }
        Ok(())
    }
}

/// The lines of a subprocess's stdout (none when it printed nothing).
pub(crate) fn stdout_lines(stdout: &[u8]) -> Vec<&[u8]> {
    if stdout.is_empty() {
        return Vec::new();
    }
    let body = stdout.strip_suffix(b"\n").unwrap_or(stdout);
    body.split(|&b| b == b'\n').collect()
}

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|&arg| arg.to_owned()).collect()
}
