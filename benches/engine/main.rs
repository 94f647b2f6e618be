//! Benchmark: the tmux control-mode engine against one `tmux` subprocess per command.
//!
//! One run, one private tmux server (see [`fixture`]), three commands (see [`workload`]), each
//! driven these ways (see [`cases`] and [`drivers`]):
//! - one `tmux` subprocess per command, one at a time and 2 × cores at a time;
//! - a bare `tmux -C` client driven by hand, one at a time and all at once: the floor any
//!   control-mode client could reach, so that the engine's own overhead shows;
//! - the engine: one call at a time, batches, and many concurrent callers at several
//!   `pipeline_depth` settings, plus a fairness probe next to one caller's backlog;
//! - with `--recording`, instead: what recording a pane's output costs per MB (see
//!   [`recording`]).
//!
//! Rounds interleave all cases so that every case sees the same background load; the report
//! quotes medians over rounds and per-round ratios, and the tmux server's CPU time per command.
//!
//! ```text
//! cargo bench --bench engine                 # full run, prints Markdown tables
//! cargo bench --bench engine -- --rounds 3   # fewer rounds
//! cargo bench --bench engine -- --quick      # smoke run: 2 rounds, few subprocesses
//! cargo bench --bench engine -- --recording  # only what recording a pane costs per MB
//! cargo test --bench engine                  # the same smoke run, both measurements
//! ```
//!
//! This measures speed only; what the engine does is tested in `tests/`.

mod cases;
mod cpu;
mod drivers;
mod fixture;
mod recording;
mod report;
mod workload;
// The date, commit and load of a run, printed by both benchmarks.
#[path = "../shared/provenance.rs"]
mod provenance;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use muxgate_tmux::{Caller, EngineSettings, TmuxServer, TmuxSocket};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use cases::{
    BATCH_SIZE, CALLERS, Case, DEPTHS, Driver, ENGINE_OPS, Measured, SUBPROCESS_OPS, Sample,
};
use cpu::CpuMeter;
use fixture::BenchTmux;
use workload::{Op, Workload};

/// Command-line options (`cargo bench --bench engine -- <options>`).
struct Options {
    rounds: usize,
    subprocess_ops: usize,
    /// Measure only what recording a pane costs ([`recording`]).
    recording: bool,
    /// MB of output per run of the recording measurement.
    megabytes: usize,
    /// A smoke run (`cargo test --bench engine`): both measurements, briefly.
    smoke: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self> {
        let mut options = Options {
            rounds: 11,
            subprocess_ops: SUBPROCESS_OPS,
            recording: false,
            megabytes: 16,
            smoke: false,
        };
        let mut benchmarking = false;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                // `cargo bench` passes `--bench`; `cargo test --benches` does not, and then a
                // smoke run shows that the benchmark still works without taking minutes.
                "--bench" => benchmarking = true,
                "--quick" => options.quick(),
                "--rounds" => {
                    options.rounds = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .context("--rounds needs a positive number")?;
                }
                "--recording" => options.recording = true,
                "--megabytes" => {
                    options.megabytes = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .context("--megabytes needs a positive number")?;
                }
                other => bail!(
                    "unknown option {other:?} (known: --rounds N, --quick, --recording, \
                     --megabytes N)"
                ),
            }
        }
        if !benchmarking {
            options.quick();
            options.smoke = true;
            options.megabytes = 1;
        }
        Ok(options)
    }

    fn quick(&mut self) {
        self.rounds = 2;
        self.subprocess_ops = SUBPROCESS_OPS / 5;
    }
}

fn main() -> Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    println!(
        "{}; load average at start: {}\n",
        provenance::provenance(),
        provenance::load_average()
    );
    if options.recording || options.smoke {
        let tmux = BenchTmux::start()?;
        let runtime = Runtime::new().context("start the tokio runtime")?;
        let section = recording::run(
            &tmux,
            &runtime,
            &recording::RecordingOptions {
                rounds: options.rounds,
                megabytes: options.megabytes,
            },
        );
        runtime.shutdown_timeout(Duration::from_secs(5));
        println!("{}", section?);
        if options.recording {
            return Ok(());
        }
    }
    let tmux = BenchTmux::start()?;
    let runtime = Runtime::new().context("start the tokio runtime")?;
    let shutdown = CancellationToken::new();
    let outcome = Bench::new(&tmux, &runtime, &shutdown, &options).and_then(|bench| {
        let measured = bench.run(options.rounds)?;
        Ok((bench.run_info(&options)?, measured))
    });
    shutdown.cancel();
    runtime.shutdown_timeout(Duration::from_secs(5));
    drop(tmux);
    let (info, measured) = outcome?;
    let report = report::Report {
        info,
        measured: &measured,
    };
    println!("{}", report.markdown());
    Ok(())
}

/// Everything a round needs.
struct Bench<'a> {
    tmux: &'a BenchTmux,
    runtime: &'a Runtime,
    /// One engine per `pipeline_depth`, all on the same tmux server.
    engines: BTreeMap<usize, TmuxServer>,
    default_depth: usize,
    workloads: Vec<Workload>,
    meter: CpuMeter,
    cores: usize,
    /// Subprocesses running at once in [`Driver::SubprocessConcurrent`].
    processes: usize,
    subprocess_ops: usize,
}

impl<'a> Bench<'a> {
    fn new(
        tmux: &'a BenchTmux,
        runtime: &'a Runtime,
        shutdown: &CancellationToken,
        options: &Options,
    ) -> Result<Self> {
        let default_depth = EngineSettings::default().pipeline_depth;
        let mut depths = DEPTHS.to_vec();
        depths.push(default_depth);
        let engines = runtime.block_on(start_engines(tmux, &depths, shutdown))?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let workloads = Op::ALL
            .into_iter()
            .map(|op| Workload::new(op, tmux))
            .collect::<Result<_>>()?;
        Ok(Self {
            meter: CpuMeter::new(tmux.server_pid(), tmux.control_client_pids()?)?,
            tmux,
            runtime,
            engines,
            default_depth,
            workloads,
            cores,
            processes: 2 * cores,
            subprocess_ops: options.subprocess_ops.div_ceil(2 * cores) * 2 * cores,
        })
    }

    fn run_info(&self, options: &Options) -> Result<report::RunInfo> {
        Ok(report::RunInfo {
            tmux_version: self.tmux_version()?,
            cores: self.cores,
            rounds: options.rounds,
            subprocess_ops: self.subprocess_ops,
            engine_ops: ENGINE_OPS,
            processes: self.processes,
            default_depth: self.default_depth,
        })
    }

    fn tmux_version(&self) -> Result<String> {
        let output = fixture::tmux_command(self.tmux.socket())
            .arg("-V")
            .output()
            .context("run tmux -V")?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// A warm-up round (not recorded), then `rounds` recorded rounds.
    fn run(&self, rounds: usize) -> Result<Vec<Measured>> {
        let cases = cases::all_cases();
        let mut measured: Vec<Measured> = cases.iter().copied().map(Measured::new).collect();
        let mut warm_up: Vec<Measured> = measured.clone();
        self.round(&mut warm_up, self.processes)?;
        let started = Instant::now();
        for round in 1..=rounds {
            self.round(&mut measured, self.subprocess_ops)?;
            eprintln!(
                "round {round}/{rounds} done after {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(measured)
    }

    fn round(&self, measured: &mut [Measured], subprocess_ops: usize) -> Result<()> {
        for m in measured {
            let ops = if m.case.driver.is_subprocess() {
                subprocess_ops
            } else {
                ENGINE_OPS
            };
            let before = self.meter.read()?;
            let sample = self
                .run_case(m.case, ops)
                .with_context(|| format!("{:?}", m.case))?;
            let cpu = self.meter.read()? - before;
            m.record(ops, &sample, cpu);
        }
        Ok(())
    }

    fn workload(&self, op: Op) -> Result<Workload> {
        self.workloads
            .iter()
            .find(|w| w.op == op)
            .cloned()
            .context("no workload for the command")
    }

    fn engine(&self, depth: usize) -> Result<TmuxServer> {
        self.engines
            .get(&depth)
            .cloned()
            .with_context(|| format!("no engine with depth {depth}"))
    }

    fn run_case(&self, case: Case, ops: usize) -> Result<Sample> {
        let workload = self.workload(case.op)?;
        let socket = self.tmux.socket();
        let elapsed = match case.driver {
            Driver::SubprocessSequential => drivers::subprocess_sequential(socket, &workload, ops)?,
            Driver::SubprocessConcurrent => {
                drivers::subprocess_concurrent(socket, &workload, ops, self.processes)?
            }
            Driver::RawSequential => drivers::raw_sequential(socket, &workload, ops)?,
            Driver::RawPipelined => drivers::raw_pipelined(socket, &workload, ops)?,
            Driver::EngineSequential => {
                let server = self.engine(self.default_depth)?;
                self.on_runtime(async move {
                    drivers::engine_sequential(&server, &workload, ops).await
                })?
            }
            Driver::EngineBatch => {
                let server = self.engine(self.default_depth)?;
                self.on_runtime(async move {
                    drivers::engine_batches(&server, &workload, ops, BATCH_SIZE).await
                })?
            }
            Driver::EngineConcurrent { depth } => {
                let server = self.engine(depth)?;
                let callers = (0..CALLERS)
                    .map(|i| Caller::new(format!("bench-agent-{i}")))
                    .collect();
                self.on_runtime(async move {
                    drivers::engine_concurrent(&server, &workload, ops, callers).await
                })?
            }
            Driver::EngineBacklog { depth } => {
                let server = self.engine(depth)?;
                let probe = self.workload(Op::DisplayMessage)?;
                let hog = vec![Caller::new("bench-backlog"); CALLERS];
                let (elapsed, probe_latencies) = self.on_runtime(async move {
                    drivers::engine_probe_under_load(&server, &workload, ops, hog, &probe).await
                })?;
                return Ok(Sample {
                    elapsed,
                    probe_latencies,
                });
            }
        };
        Ok(elapsed.into())
    }

    /// Runs a measured loop as a task on a runtime worker thread, as a request handler would.
    fn on_runtime<T: Send + 'static>(
        &self,
        measure: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        self.runtime
            .block_on(self.runtime.spawn(measure))
            .context("the measuring task panicked")?
    }
}

/// Starts one engine per depth (each its own worker and control client) and connects it.
async fn start_engines(
    tmux: &BenchTmux,
    depths: &[usize],
    shutdown: &CancellationToken,
) -> Result<BTreeMap<usize, TmuxServer>> {
    let mut engines = BTreeMap::new();
    for &depth in depths {
        if engines.contains_key(&depth) {
            continue;
        }
        let settings = EngineSettings {
            pipeline_depth: depth,
            ..EngineSettings::default()
        };
        let server = TmuxServer::start(
            &format!("bench-depth-{depth}"),
            TmuxSocket::Name(tmux.socket().to_owned()),
            Arc::new(settings),
            shutdown.clone(),
        );
        let probe = Workload::new(Op::DisplayMessage, tmux)?;
        let lines = server
            .run(&Caller::new("bench-setup"), probe.command.clone())
            .await
            .with_context(|| format!("connect the engine with depth {depth}"))?;
        probe.check(&lines)?;
        engines.insert(depth, server);
    }
    Ok(engines)
}
