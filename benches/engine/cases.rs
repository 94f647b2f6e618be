//! What one round measures: every command through every driver, and what each measurement
//! accumulates over the rounds.

use std::time::Duration;

use crate::cpu::CpuTimes;
use crate::workload::Op;

/// `pipeline_depth` values compared with concurrent callers.
pub(crate) const DEPTHS: [usize; 5] = [1, 4, 8, 16, 64];
/// Commands per `run_batch` call.
pub(crate) const BATCH_SIZE: usize = 50;
/// Concurrent engine callers (each its own [`muxgate_tmux::Caller`]).
pub(crate) const CALLERS: usize = 64;
/// Engine commands per case and round: a multiple of [`BATCH_SIZE`] and [`CALLERS`].
pub(crate) const ENGINE_OPS: usize = 3200;
/// Subprocesses per case and round (a subprocess costs milliseconds).
pub(crate) const SUBPROCESS_OPS: usize = 200;

/// How the commands reach tmux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    /// One subprocess at a time.
    SubprocessSequential,
    /// Several subprocesses at a time (2 × cores).
    SubprocessConcurrent,
    /// A bare `tmux -C` client, no engine, one command at a time.
    RawSequential,
    /// A bare `tmux -C` client, no engine, all commands written at once.
    RawPipelined,
    /// One engine call at a time.
    EngineSequential,
    /// Engine batches of [`BATCH_SIZE`], one batch at a time.
    EngineBatch,
    /// [`CALLERS`] concurrent engine callers, on an engine with this `pipeline_depth`.
    EngineConcurrent { depth: usize },
    /// One caller with [`CALLERS`] commands in flight (a backlog) while another caller runs
    /// `display-message` one at a time, on an engine with this `pipeline_depth`.
    EngineBacklog { depth: usize },
}

impl Driver {
    pub(crate) fn is_subprocess(self) -> bool {
        matches!(
            self,
            Driver::SubprocessSequential | Driver::SubprocessConcurrent
        )
    }
}

/// One command through one driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Case {
    pub op: Op,
    pub driver: Driver,
}

/// Every case, in the order a round runs them: subprocess and engine cases of one command
/// side by side, so that both see the same background load.
pub(crate) fn all_cases() -> Vec<Case> {
    let mut drivers = vec![
        Driver::SubprocessSequential,
        Driver::RawSequential,
        Driver::EngineSequential,
        Driver::SubprocessConcurrent,
        Driver::RawPipelined,
        Driver::EngineBatch,
    ];
    drivers.extend(DEPTHS.map(|depth| Driver::EngineConcurrent { depth }));
    drivers.extend(DEPTHS.map(|depth| Driver::EngineBacklog { depth }));
    Op::ALL
        .into_iter()
        .flat_map(|op| drivers.iter().map(move |&driver| Case { op, driver }))
        .collect()
}

/// What one case measured in one round.
pub(crate) struct Sample {
    /// Wall time of all the case's operations.
    pub elapsed: Duration,
    /// Latencies of the probing caller, if the case has one.
    pub probe_latencies: Vec<Duration>,
}

impl From<Duration> for Sample {
    fn from(elapsed: Duration) -> Self {
        Self {
            elapsed,
            probe_latencies: Vec::new(),
        }
    }
}

/// A case's samples over all rounds.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub case: Case,
    /// Wall time per operation in each round, in µs, in round order.
    pub per_op_us: Vec<f64>,
    /// CPU used during the case, summed over rounds.
    pub cpu: CpuTimes,
    /// Operations run, summed over rounds.
    pub ops: usize,
    /// Latencies of the probing caller ([`Driver::EngineBacklog`]), in µs, over all rounds.
    pub probe_us: Vec<f64>,
}

impl Measured {
    pub(crate) fn new(case: Case) -> Self {
        Self {
            case,
            per_op_us: Vec::new(),
            cpu: CpuTimes::default(),
            ops: 0,
            probe_us: Vec::new(),
        }
    }

    pub(crate) fn record(&mut self, ops: usize, sample: &Sample, cpu: CpuTimes) {
        self.per_op_us
            .push(sample.elapsed.as_secs_f64() * 1e6 / ops as f64);
        self.probe_us.extend(
            sample
                .probe_latencies
                .iter()
                .map(|latency| latency.as_secs_f64() * 1e6),
        );
        self.cpu.server += cpu.server;
        self.cpu.caller += cpu.caller;
        self.ops += ops;
    }

    pub(crate) fn median_us(&self) -> f64 {
        median(&self.per_op_us)
    }

    pub(crate) fn ops_per_sec(&self) -> f64 {
        1e6 / self.median_us()
    }

    pub(crate) fn server_cpu_us(&self) -> f64 {
        self.cpu.server.as_secs_f64() * 1e6 / self.ops as f64
    }

    pub(crate) fn caller_cpu_us(&self) -> f64 {
        self.cpu.caller.as_secs_f64() * 1e6 / self.ops as f64
    }

    /// The probe latency below which `fraction` of the probes fell.
    pub(crate) fn probe_quantile_us(&self, fraction: f64) -> f64 {
        quantile(&self.probe_us, fraction)
    }

    pub(crate) fn range_us(&self) -> (f64, f64) {
        let min = self.per_op_us.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.per_op_us.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

/// How many times slower `slow` is than `fast`: the median of the per-round ratios, so that
/// each ratio compares two measurements taken seconds apart under the same load.
pub(crate) fn paired_ratio(slow: &Measured, fast: &Measured) -> f64 {
    let ratios: Vec<f64> = slow
        .per_op_us
        .iter()
        .zip(&fast.per_op_us)
        .map(|(s, f)| s / f)
        .collect();
    median(&ratios)
}

pub(crate) fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// The `fraction` quantile, interpolating between the two nearest values.
pub(crate) fn quantile(values: &[f64], fraction: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = fraction.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let weight = position - below as f64;
    sorted[below] * (1.0 - weight) + sorted[above] * weight
}
