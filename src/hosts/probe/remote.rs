//! The gateway's end of a host's probe channel: the [`Host`] of a remote server's panes.
//!
//! One `muxgate host-probe` per host runs as a channel of the host's connection (the same
//! `ssh` client command as its tmux clients, so never a connection of its own), started by
//! the first question and asked one question at a time. Every answer comes within
//! [`ANSWER_TIMEOUT`] or is `None`; a channel that fails (the link dropped, the probe is
//! missing on the host, an answer was late, unreadable or abandoned half way) is closed, and
//! the next question starts another, but not before [`RETRY_AFTER`] has passed since the
//! failure: a host without muxgate costs one attempt per interval, not one per question.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;

use muxgate_mux::child_process;
use muxgate_mux::foreground::Foreground;
use muxgate_mux::host::{Host, HostAnswer};
use muxgate_mux::tty_modes::TermModes;
use muxgate_tmux::LinkStatus;
use muxgate_tmux::client::remote::shell_word;

use super::wire::{self, Question};
use crate::hosts::link::last_words;
use crate::hosts::ssh_args;

/// The longest a question may take, from asking to the answer, a channel's start included.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long after a failure the next channel may start.
const RETRY_AFTER: Duration = Duration::from_secs(10);
/// Most bytes of the probe's error output kept for the log.
const STDERR_BYTES: usize = 2048;

/// A host's processes and terminals, asked over its probe channel.
#[derive(Debug)]
pub(crate) struct RemoteProcesses {
    host: Arc<str>,
    program: PathBuf,
    /// The `ssh` client's arguments and the command line that runs the probe on the host.
    args: Vec<OsString>,
    link: Arc<dyn LinkStatus>,
    channel: tokio::sync::Mutex<Channel>,
}

#[derive(Debug)]
enum Channel {
    /// No probe runs; the next may start at `retry_at`.
    Closed {
        retry_at: Option<Instant>,
    },
    Open(Box<Probe>),
}

#[derive(Debug)]
struct Probe {
    /// Held so that dropping the channel kills the process.
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Every question asked so far was answered: the next answer read is the next question's.
    in_step: bool,
}

impl RemoteProcesses {
    /// The processes of host `host`, asked by running `muxgate` there with `program` and
    /// `client_args` (the link's client command).
    pub(crate) fn new(
        host: &str,
        program: PathBuf,
        client_args: Vec<OsString>,
        muxgate: &str,
        link: Arc<dyn LinkStatus>,
    ) -> Self {
        let mut args = client_args;
        args.push("--".into());
        args.push(format!("{} host-probe", shell_word(muxgate)).into());
        Self {
            host: host.into(),
            program,
            args,
            link,
            channel: tokio::sync::Mutex::new(Channel::Closed { retry_at: None }),
        }
    }

    /// The answer to `question`, or `None` when the host cannot tell or does not answer in time.
    async fn ask<T: serde::de::DeserializeOwned>(&self, question: Question) -> Option<T> {
        let line = question.line()?;
        self.link.check().ok()?;
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut channel = tokio::time::timeout_at(deadline, self.channel.lock())
            .await
            .ok()?;
        let probe = self.open(&mut channel)?;
        match tokio::time::timeout_at(deadline, probe.exchange(&line)).await {
            Ok(Ok(answer)) => wire::read_answer(&answer),
            Ok(Err(why)) => {
                self.fail(&mut channel, &why);
                None
            }
            Err(_) => {
                self.fail(&mut channel, "no answer in time");
                None
            }
        }
    }

    /// The open probe, started if there is none and it may start now.
    fn open<'c>(&self, channel: &'c mut Channel) -> Option<&'c mut Probe> {
        if let Channel::Open(probe) = channel
            && !probe.in_step
        {
            // A question before was abandoned half way: its answer would be read as the next.
            *channel = Channel::Closed { retry_at: None };
        }
        if let Channel::Closed { retry_at } = channel {
            if retry_at.is_some_and(|at| Instant::now() < at) {
                return None;
            }
            match self.start() {
                Ok(probe) => *channel = Channel::Open(Box::new(probe)),
                Err(why) => {
                    self.fail(channel, &why);
                    return None;
                }
            }
        }
        match channel {
            Channel::Open(probe) => Some(probe),
            Channel::Closed { .. } => None,
        }
    }

    fn start(&self) -> Result<Probe, String> {
        let mut child = ssh_args::process(&self.program, &self.args)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the probe has no pipes".into());
        };
        let host = self.host.clone();
        tokio::spawn(async move {
            let said = child_process::read_tail(stderr, STDERR_BYTES).await;
            if let Some(said) = last_words(&String::from_utf8_lossy(&said)) {
                tracing::warn!(%host, %said, "the host probe ended");
            }
        });
        Ok(Probe {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout),
            in_step: true,
        })
    }

    fn fail(&self, channel: &mut Channel, why: &str) {
        tracing::debug!(host = %self.host, %why, "the host probe failed; its panes' process state is unknown for now");
        *channel = Channel::Closed {
            retry_at: Some(Instant::now() + RETRY_AFTER),
        };
    }
}

impl Probe {
    /// Asks `line` and reads its answer line (without the newline).
    async fn exchange(&mut self, line: &str) -> Result<Vec<u8>, String> {
        self.in_step = false;
        let question = format!("{line}\n");
        self.stdin
            .write_all(question.as_bytes())
            .await
            .map_err(|e| format!("cannot ask: {e}"))?;
        self.stdin
            .flush()
            .await
            .map_err(|e| format!("cannot ask: {e}"))?;
        let mut answer = Vec::new();
        let limit = u64::try_from(wire::ANSWER_BYTES).unwrap_or(u64::MAX);
        (&mut self.stdout)
            .take(limit)
            .read_until(b'\n', &mut answer)
            .await
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        match answer.strip_suffix(b"\n") {
            Some(line) => {
                self.in_step = true;
                Ok(line.to_vec())
            }
            None if answer.is_empty() => Err("the probe ended".into()),
            None => Err("an answer longer than any the probe gives".into()),
        }
    }
}

impl Host for RemoteProcesses {
    fn foreground<'a>(
        &'a self,
        server_pid: u32,
        pane_pid: u32,
        tty: &'a str,
    ) -> HostAnswer<'a, Foreground> {
        Box::pin(self.ask(Question::Foreground {
            server_pid,
            pane_pid,
            tty: tty.to_owned(),
        }))
    }

    fn term_modes<'a>(&'a self, tty: &'a str) -> HostAnswer<'a, TermModes> {
        Box::pin(self.ask(Question::Modes {
            tty: tty.to_owned(),
        }))
    }
}
