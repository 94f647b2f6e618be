//! What recording a pane costs per MB of its output (`--recording`).
//!
//! Two measurements, each a median over rounds:
//! - the writer alone: the same output fed in 4 KiB chunks straight to a `CastWriter` (UTF-8
//!   decoding, JSON escaping, the file write), CPU time of the measuring thread;
//! - end to end: a pane `cat`s a file of terminal output while a subscriber (like a
//!   `wait_for_text`) reads its stream to the end marker, once with the pane recorded and once
//!   not, alternating; wall time and this process's CPU time (the engine, the recorder task,
//!   the blocking pool writing files). The difference is what a recording adds.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use muxgate::recordings::store::Store;
use muxgate::recordings::writer::{CastWriter, Subject};
use muxgate::recordings::{Recorder, RecordingPolicy, RecordingsSettings, Stopped};
use muxgate_tmux::output::OutputChunk;
use muxgate_tmux::{Caller, EngineSettings, PaneId, TmuxServer, TmuxSocket};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::cases::median;
use crate::fixture::BenchTmux;

const MB: f64 = 1024.0 * 1024.0;

/// How the recording measurement runs.
pub(crate) struct RecordingOptions {
    pub rounds: usize,
    pub megabytes: usize,
}

struct Round {
    writer_cpu: Duration,
    plain_wall: Duration,
    plain_cpu: Duration,
    recorded_wall: Duration,
    recorded_cpu: Duration,
    recorded_bytes: u64,
}

/// Runs the measurement and returns its Markdown section.
pub(crate) fn run(
    tmux: &BenchTmux,
    runtime: &Runtime,
    options: &RecordingOptions,
) -> Result<String> {
    let output = terminal_output(options.megabytes);
    let mut file = tempfile::NamedTempFile::new().context("a temporary file")?;
    file.write_all(&output)?;
    file.flush()?;
    let path = file
        .path()
        .to_str()
        .context("a UTF-8 temporary path")?
        .to_owned();
    let pane: PaneId = tmux
        .run_ok(&[
            "new-session",
            "-d",
            "-s",
            "flood",
            "-x",
            "120",
            "-y",
            "40",
            "-P",
            "-F",
            "#{pane_id}",
            "sh",
        ])?
        .trim()
        .parse()
        .context("a pane id for the flood session")?;
    let dir = tempfile::tempdir().context("a recordings directory")?;
    let shutdown = CancellationToken::new();
    // The engine's tasks start on the runtime.
    let _entered = runtime.enter();
    let server = TmuxServer::start(
        "bench-recording",
        TmuxSocket::Name(tmux.socket().to_owned()),
        Arc::new(EngineSettings::default()),
        shutdown.clone(),
    );
    let recorder = Recorder::new(
        RecordingsSettings {
            dir: dir.path().to_path_buf(),
            max_file_bytes: 1 << 30,
            max_total_bytes: u64::MAX,
            max_panes: 4,
            policy: RecordingPolicy::default(),
        },
        shutdown.clone(),
    );
    let mut rounds = Vec::new();
    // One warm-up round, not kept.
    for round in 0..=options.rounds {
        let writer_cpu = writer_alone(&output, dir.path())?;
        let (plain_wall, plain_cpu) =
            runtime.block_on(flood(&server, pane, &path, round * 2, None))?;
        let before = std::fs::read_dir(dir.path())?.count();
        let (recorded_wall, recorded_cpu) =
            runtime.block_on(flood(&server, pane, &path, round * 2 + 1, Some(&recorder)))?;
        let recorded_bytes =
            runtime.block_on(finish_recording(&recorder, pane, dir.path(), before))?;
        if round > 0 {
            rounds.push(Round {
                writer_cpu,
                plain_wall,
                plain_cpu,
                recorded_wall,
                recorded_cpu,
                recorded_bytes,
            });
            eprintln!("recording round {round}/{} done", options.rounds);
        }
        for entry in std::fs::read_dir(dir.path())? {
            std::fs::remove_file(entry?.path())?;
        }
    }
    shutdown.cancel();
    Ok(report(&rounds, output.len()))
}

/// About `megabytes` MB of what terminals show: numbered lines with colours and non-ASCII text.
fn terminal_output(megabytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(megabytes << 20);
    let mut n = 0u64;
    while out.len() < megabytes << 20 {
        n += 1;
        let line = format!(
            "{n:08} \x1b[32mok\x1b[0m compiling crate-{n} (größe {}) … done in {} ms\r\n",
            n % 977,
            n % 131
        );
        out.extend_from_slice(line.as_bytes());
    }
    out
}

/// CPU time of this thread.
fn thread_cpu() -> Result<Duration> {
    // SAFETY: an all-zero rusage is a valid value, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    ensure!(rc == 0, "getrusage: {}", std::io::Error::last_os_error());
    Ok(cpu_of(&usage))
}

fn process_cpu() -> Result<Duration> {
    // SAFETY: as in `thread_cpu`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    ensure!(rc == 0, "getrusage: {}", std::io::Error::last_os_error());
    Ok(cpu_of(&usage))
}

fn cpu_of(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The writer's CPU time for `output` fed in 4 KiB chunks.
fn writer_alone(output: &[u8], dir: &std::path::Path) -> Result<Duration> {
    let store = Store::new(dir.to_path_buf(), u64::MAX);
    let subject = Subject {
        server: "bench-writer".into(),
        pane: PaneId(0),
        width: 120,
        height: 40,
        title: "benchmark".into(),
        max_file_bytes: 1 << 30,
    };
    let before = thread_cpu()?;
    let mut writer = CastWriter::open(store, subject)?;
    let at = std::time::Instant::now();
    for piece in output.chunks(4096) {
        let chunk = OutputChunk {
            data: piece.to_vec(),
            ..OutputChunk::default()
        };
        writer.chunk(at, &chunk)?;
        writer.flush()?;
    }
    writer.finish(at, "end")?;
    Ok(thread_cpu()? - before)
}

/// Types `cat FILE; echo MARK` into the pane and reads its stream to the mark: wall time and
/// process CPU time. With `recorder`, the pane is recorded from before the first byte.
async fn flood(
    server: &TmuxServer,
    pane: PaneId,
    path: &str,
    run: usize,
    recorder: Option<&Recorder>,
) -> Result<(Duration, Duration)> {
    let caller = Caller::new("bench-reader");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut subscription = server.subscribe(&caller, pane, deadline).await?;
    if let Some(recorder) = recorder {
        recorder
            .start(server, "bench", pane, "benchmark".into(), None)
            .await?;
    }
    // Computed by the shell, so the typed command's echo does not contain it.
    let mark = format!("FLOOD-END-{}", run + 1000);
    let command = format!("clear; cat '{path}'; echo FLOOD-END-$(({run}+1000))");
    let keys = muxgate_tmux::TmuxCommand::for_test("send-keys")
        .opt("-t", pane.to_string())
        .flag("-l")
        .arg(&command)
        .build()?;
    let enter = muxgate_tmux::TmuxCommand::for_test("send-keys")
        .opt("-t", pane.to_string())
        .arg("Enter")
        .build()?;
    let cpu_before = process_cpu()?;
    let started = Instant::now();
    server.run(&caller, keys).await?;
    server.run(&caller, enter).await?;
    let mut tail: Vec<u8> = Vec::new();
    let give_up = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let chunk = tokio::time::timeout_at(give_up, subscription.next())
            .await
            .context("the flood did not end within 120 s")??;
        tail.extend_from_slice(&chunk.data);
        if memchr::memmem::find(&tail, mark.as_bytes()).is_some() {
            break;
        }
        let keep = tail.len().saturating_sub(64);
        tail.drain(..keep);
    }
    let wall = started.elapsed();
    let cpu = process_cpu()? - cpu_before;
    Ok((wall, cpu))
}

/// Stops the recording, waits until its file has its end marker, and returns its size.
async fn finish_recording(
    recorder: &Recorder,
    pane: PaneId,
    dir: &std::path::Path,
    before: usize,
) -> Result<u64> {
    let Stopped::Was(at) = recorder.stop("bench", pane) else {
        bail!("the pane was not being recorded");
    };
    let path = dir.join(&at.file);
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("end: the recording was stopped") {
            ensure!(
                text.contains("FLOOD-END-"),
                "the recording lacks the end of the flood"
            );
            ensure!(
                !text.contains("gap:"),
                "the recorder fell behind: a gap in the recording"
            );
            ensure!(
                std::fs::read_dir(dir)?.count() == before + 1,
                "one file per recording"
            );
            return Ok(text.len() as u64);
        }
        ensure!(Instant::now() < give_up, "the recording did not end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn report(rounds: &[Round], output_bytes: usize) -> String {
    let mb = output_bytes as f64 / MB;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per_mb = |values: Vec<f64>| median(&values) / mb;
    let writer = per_mb(rounds.iter().map(|r| ms(r.writer_cpu)).collect());
    let plain_wall = per_mb(rounds.iter().map(|r| ms(r.plain_wall)).collect());
    let recorded_wall = per_mb(rounds.iter().map(|r| ms(r.recorded_wall)).collect());
    let plain_cpu = per_mb(rounds.iter().map(|r| ms(r.plain_cpu)).collect());
    let recorded_cpu = per_mb(rounds.iter().map(|r| ms(r.recorded_cpu)).collect());
    let added_cpu = per_mb(
        rounds
            .iter()
            .map(|r| ms(r.recorded_cpu) - ms(r.plain_cpu))
            .collect(),
    );
    let added_wall = per_mb(
        rounds
            .iter()
            .map(|r| ms(r.recorded_wall) - ms(r.plain_wall))
            .collect(),
    );
    let cast_mb = median(
        &rounds
            .iter()
            .map(|r| r.recorded_bytes as f64)
            .collect::<Vec<_>>(),
    ) / MB;
    format!(
        "## Recording overhead per MB of output\n\n\
         {} rounds, {mb:.1} MB of output per run ({cast_mb:.1} MB of cast); medians, per MB of \
         pane output.\n\n\
         | measurement | not recorded | recorded | added by recording |\n\
         |---|---|---|---|\n\
         | writer alone, CPU ms | | {writer:.1} | {writer:.1} |\n\
         | end to end, gateway CPU ms | {plain_cpu:.1} | {recorded_cpu:.1} | {added_cpu:.1} |\n\
         | end to end, wall ms | {plain_wall:.1} | {recorded_wall:.1} | {added_wall:.1} |\n",
        rounds.len()
    )
}
