//! The measured loops: `ops` runs of one command, through one `tmux` subprocess per command or
//! through the engine, one at a time or many in flight. Each returns the wall time of the
//! whole loop and fails on the first reply that is not what the command should print.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use muxgate_tmux::{BatchMode, Caller, CommandOutcome, TmuxServer};
use tokio::task::JoinSet;

use crate::fixture::tmux_command;
use crate::workload::{Workload, stdout_lines};

/// One subprocess, as a script or libtmux does it: spawn `tmux -L <socket> <argv>`, collect
/// its output, wait for it to exit.
fn run_subprocess(socket: &str, workload: &Workload) -> Result<()> {
    let output = tmux_command(socket)
        .args(&workload.argv)
        .output()
        .context("spawn tmux")?;
    ensure!(
        output.status.success(),
        "tmux {:?} failed: {}",
        workload.argv,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    workload.check(&stdout_lines(&output.stdout))
}

/// `ops` subprocesses, each started after the previous one exited.
pub(crate) fn subprocess_sequential(
    socket: &str,
    workload: &Workload,
    ops: usize,
) -> Result<Duration> {
    let start = Instant::now();
    for _ in 0..ops {
        run_subprocess(socket, workload)?;
    }
    Ok(start.elapsed())
}

/// `ops` subprocesses, `processes` of them running at any time (each of `processes` threads
/// runs its share one after the other).
pub(crate) fn subprocess_concurrent(
    socket: &str,
    workload: &Workload,
    ops: usize,
    processes: usize,
) -> Result<Duration> {
    ensure!(
        ops.is_multiple_of(processes),
        "{ops} ops do not split over {processes} processes"
    );
    let start = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..processes)
            .map(|_| scope.spawn(|| subprocess_sequential(socket, workload, ops / processes)))
            .collect();
        threads
            .into_iter()
            .try_for_each(|thread| match thread.join() {
                Ok(result) => result.map(drop),
                Err(_) => bail!("a subprocess thread panicked"),
            })
    })?;
    Ok(start.elapsed())
}

/// `ops` engine calls, each awaited before the next is made.
pub(crate) async fn engine_sequential(
    server: &TmuxServer,
    workload: &Workload,
    ops: usize,
) -> Result<Duration> {
    let caller = Caller::new("bench-sequential");
    let start = Instant::now();
    for _ in 0..ops {
        let lines = server.run(&caller, workload.command.clone()).await?;
        workload.check(&lines)?;
    }
    Ok(start.elapsed())
}

/// `ops` commands as [`BatchMode::Independent`] batches of `size`, one batch at a time: every
/// batch is written in one write and its replies are read back to back.
pub(crate) async fn engine_batches(
    server: &TmuxServer,
    workload: &Workload,
    ops: usize,
    size: usize,
) -> Result<Duration> {
    ensure!(
        ops.is_multiple_of(size),
        "{ops} ops do not split into batches of {size}"
    );
    let caller = Caller::new("bench-batches");
    let start = Instant::now();
    for _ in 0..ops / size {
        let batch = vec![workload.command.clone(); size];
        let outcomes = server
            .run_batch(&caller, batch, BatchMode::Independent, None)
            .await?;
        for outcome in outcomes {
            match outcome {
                CommandOutcome::Ok(lines) => workload.check(&lines)?,
                CommandOutcome::Failed(message) => bail!("tmux refused a command: {message}"),
                CommandOutcome::NotRun => bail!("tmux did not run a command of the batch"),
            }
        }
    }
    Ok(start.elapsed())
}

/// `ops` engine calls from one task per entry of `callers`, each awaiting its own calls one at
/// a time: up to `callers.len()` commands in flight. Distinct callers are many agents sharing
/// one server; one caller repeated is one agent with a backlog. How many of those commands tmux
/// sees at once is the engine's `pipeline_depth`.
pub(crate) async fn engine_concurrent(
    server: &TmuxServer,
    workload: &Workload,
    ops: usize,
    callers: Vec<Caller>,
) -> Result<Duration> {
    let tasks = callers.len();
    ensure!(
        tasks > 0 && ops.is_multiple_of(tasks),
        "{ops} ops do not split over {tasks} callers"
    );
    let start = Instant::now();
    let mut set = JoinSet::new();
    for caller in callers {
        let server = server.clone();
        let workload = workload.clone();
        set.spawn(async move {
            for _ in 0..ops / tasks {
                let lines = server.run(&caller, workload.command.clone()).await?;
                workload.check(&lines)?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(joined) = set.join_next().await {
        joined.context("a caller task panicked")??;
    }
    Ok(start.elapsed())
}

/// Fairness: while `hog` runs `ops` commands from many tasks at once (a backlog), another
/// caller runs `probe` one at a time. Returns the hog's wall time and each probe's latency.
pub(crate) async fn engine_probe_under_load(
    server: &TmuxServer,
    workload: &Workload,
    ops: usize,
    hog: Vec<Caller>,
    probe: &Workload,
) -> Result<(Duration, Vec<Duration>)> {
    let flood = {
        let server = server.clone();
        let workload = workload.clone();
        tokio::spawn(async move { engine_concurrent(&server, &workload, ops, hog).await })
    };
    let caller = Caller::new("bench-probe");
    let mut latencies = Vec::new();
    while !flood.is_finished() {
        let start = Instant::now();
        let lines = server.run(&caller, probe.command.clone()).await?;
        latencies.push(start.elapsed());
        probe.check(&lines)?;
    }
    let elapsed = flood.await.context("the flood task panicked")??;
    Ok((elapsed, latencies))
}

/// A bare `tmux -C` client driven by hand, without the engine: what any control-mode client
/// could do at best, so the engine's own overhead is the difference.
struct RawControlClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl RawControlClient {
    /// Attaches and waits until the client answers a first command.
    fn attach(socket: &str) -> Result<Self> {
        let mut child = tmux_command(socket)
            .args(["-C", "attach-session", "-f", "no-output"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawn tmux -C")?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("tmux -C has no pipes");
        };
        let mut client = Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            line: Vec::new(),
        };
        client.write(b"display-message -p ready\n")?;
        client.read_replies(1)?;
        Ok(client)
    }

    fn write(&mut self, lines: &[u8]) -> Result<()> {
        self.stdin.write_all(lines).context("write to tmux -C")
    }

    /// Reads until `count` replies to our commands (blocks with flags 1) have ended.
    fn read_replies(&mut self, count: usize) -> Result<()> {
        read_replies(&mut self.stdout, &mut self.line, count)
    }
}

impl Drop for RawControlClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_replies(stdout: &mut impl BufRead, line: &mut Vec<u8>, count: usize) -> Result<()> {
    let mut ended = 0;
    while ended < count {
        line.clear();
        if stdout
            .read_until(b'\n', line)
            .context("read from tmux -C")?
            == 0
        {
            bail!("tmux -C exited after {ended} of {count} replies");
        }
        let ours = line.ends_with(b" 1\n");
        if ours && line.starts_with(b"%end ") {
            ended += 1;
        } else if ours && line.starts_with(b"%error ") {
            bail!("tmux refused a command");
        }
    }
    Ok(())
}

/// `ops` commands through a bare control client, each written after the previous reply.
pub(crate) fn raw_sequential(socket: &str, workload: &Workload, ops: usize) -> Result<Duration> {
    let mut client = RawControlClient::attach(socket)?;
    let mut line = workload.command.as_bytes().to_vec();
    line.push(b'\n');
    let start = Instant::now();
    for _ in 0..ops {
        client.write(&line)?;
        client.read_replies(1)?;
    }
    Ok(start.elapsed())
}

/// `ops` commands through a bare control client, all written at once by one thread while
/// another reads the replies.
pub(crate) fn raw_pipelined(socket: &str, workload: &Workload, ops: usize) -> Result<Duration> {
    let mut client = RawControlClient::attach(socket)?;
    let RawControlClient {
        stdin,
        stdout,
        line,
        ..
    } = &mut client;
    let mut lines = Vec::with_capacity(ops * (workload.command.as_bytes().len() + 1));
    for _ in 0..ops {
        lines.extend_from_slice(workload.command.as_bytes());
        lines.push(b'\n');
    }
    let start = Instant::now();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(&lines));
        read_replies(stdout, line, ops)?;
        match writer.join() {
            Ok(written) => written.context("write to tmux -C"),
            Err(_) => bail!("the writer thread panicked"),
        }
    })?;
    Ok(start.elapsed())
}
