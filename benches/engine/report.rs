//! The Markdown tables the benchmark prints: per-case costs, subprocess ÷ engine ratios against
//! the goals, and the effect of `pipeline_depth`.

use std::fmt::Write;

use crate::cases::{BATCH_SIZE, CALLERS, Case, DEPTHS, Driver, Measured, paired_ratio};
use crate::workload::Op;

/// Goal: sequential per-op latency at least this many times lower than subprocess-per-command.
const SEQUENTIAL_GOAL: f64 = 25.0;
/// Goal: the same, pipelined.
const PIPELINED_GOAL: f64 = 80.0;

/// What the run was.
pub(crate) struct RunInfo {
    pub tmux_version: String,
    pub cores: usize,
    pub rounds: usize,
    pub subprocess_ops: usize,
    pub engine_ops: usize,
    pub processes: usize,
    pub default_depth: usize,
}

pub(crate) struct Report<'a> {
    pub info: RunInfo,
    pub measured: &'a [Measured],
}

impl Report<'_> {
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        self.write_header(&mut out);
        self.write_costs(&mut out);
        self.write_ratios(&mut out);
        self.write_depths(&mut out);
        out
    }

    fn find(&self, op: Op, driver: Driver) -> &Measured {
        let case = Case { op, driver };
        self.measured
            .iter()
            .find(|m| m.case == case)
            // Invariant: the report is built from the measurements of `all_cases`.
            .expect("every case was measured")
    }

    fn default_concurrent(&self) -> Driver {
        Driver::EngineConcurrent {
            depth: self.info.default_depth,
        }
    }

    fn label(&self, driver: Driver) -> String {
        match driver {
            Driver::SubprocessSequential => "subprocess, one at a time".into(),
            Driver::SubprocessConcurrent => {
                format!("subprocess, {} at a time", self.info.processes)
            }
            Driver::RawSequential => "bare tmux -C, one at a time".into(),
            Driver::RawPipelined => "bare tmux -C, all at once".into(),
            Driver::EngineSequential => "engine, one at a time".into(),
            Driver::EngineBatch => format!("engine, batches of {BATCH_SIZE}"),
            Driver::EngineConcurrent { depth } => {
                format!("engine, {CALLERS} callers (depth {depth})")
            }
            Driver::EngineBacklog { depth } => {
                format!("engine, one caller with {CALLERS} in flight (depth {depth})")
            }
        }
    }

    fn write_header(&self, out: &mut String) {
        let i = &self.info;
        let _ = writeln!(
            out,
            "{}, {} cores; {} rounds; per case and round: {} subprocesses or {} engine commands.\n",
            i.tmux_version, i.cores, i.rounds, i.subprocess_ops, i.engine_ops
        );
    }

    fn write_costs(&self, out: &mut String) {
        out.push_str("### Cost per command\n\n");
        out.push_str(
            "| command | how | µs/op (median) | µs/op (range) | ops/s | tmux server CPU µs/op | caller-side CPU µs/op |\n",
        );
        out.push_str("|---|---|--:|--:|--:|--:|--:|\n");
        let drivers = [
            Driver::SubprocessSequential,
            Driver::SubprocessConcurrent,
            Driver::RawSequential,
            Driver::RawPipelined,
            Driver::EngineSequential,
            Driver::EngineBatch,
            self.default_concurrent(),
        ];
        for op in Op::ALL {
            for driver in drivers {
                let m = self.find(op, driver);
                let (min, max) = m.range_us();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {}–{} | {} | {} | {} |",
                    op.label(),
                    self.label(driver),
                    us(m.median_us()),
                    us(min),
                    us(max),
                    rate(m.ops_per_sec()),
                    us(m.server_cpu_us()),
                    us(m.caller_cpu_us()),
                );
            }
        }
        out.push('\n');
    }

    fn write_ratios(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Subprocess ÷ engine (median of per-round ratios)\n\n\
             Sequential: one subprocess at a time vs one engine call at a time (goal ≥ {SEQUENTIAL_GOAL}×). \
             Pipelined: {} subprocesses at a time vs the engine pipelined (goal ≥ {PIPELINED_GOAL}×). \
             Ceiling: the same ratios for a bare `tmux -C` client instead of the engine.\n",
            self.info.processes
        );
        out.push_str(
            "| command | sequential | pipelined, batches | pipelined, concurrent callers | ceiling, sequential / pipelined | server CPU, sequential / batches |\n",
        );
        out.push_str("|---|--:|--:|--:|--:|--:|\n");
        for op in Op::ALL {
            let sub_seq = self.find(op, Driver::SubprocessSequential);
            let sub_par = self.find(op, Driver::SubprocessConcurrent);
            let raw_seq = self.find(op, Driver::RawSequential);
            let raw_par = self.find(op, Driver::RawPipelined);
            let eng_seq = self.find(op, Driver::EngineSequential);
            let eng_batch = self.find(op, Driver::EngineBatch);
            let eng_conc = self.find(op, self.default_concurrent());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.1}× / {:.1}× | {:.1}× / {:.1}× |",
                op.label(),
                goal(paired_ratio(sub_seq, eng_seq), SEQUENTIAL_GOAL),
                goal(paired_ratio(sub_par, eng_batch), PIPELINED_GOAL),
                goal(paired_ratio(sub_par, eng_conc), PIPELINED_GOAL),
                paired_ratio(sub_seq, raw_seq),
                paired_ratio(sub_par, raw_par),
                sub_seq.server_cpu_us() / eng_seq.server_cpu_us(),
                sub_par.server_cpu_us() / eng_batch.server_cpu_us(),
            );
        }
        out.push('\n');
    }

    fn write_depths(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### pipeline_depth (default {})\n\n\
             Throughput: {CALLERS} callers, one command each in flight. \
             Each cell: µs/op (median), ops/s, tmux server CPU µs/op.\n",
            self.info.default_depth
        );
        self.write_depth_header(out);
        for op in Op::ALL {
            let _ = write!(out, "| {} |", op.label());
            for depth in DEPTHS {
                let m = self.find(op, Driver::EngineConcurrent { depth });
                let _ = write!(
                    out,
                    " {} ({}/s; server {}) |",
                    us(m.median_us()),
                    rate(m.ops_per_sec()),
                    us(m.server_cpu_us())
                );
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "\nFairness: one caller keeps {CALLERS} commands in flight (the row's command) while \
             another runs `display-message` one at a time. Each cell: the lone caller's latency, \
             median / 90th percentile in µs, over all its calls.\n"
        );
        self.write_depth_header(out);
        for op in Op::ALL {
            let _ = write!(out, "| {} |", op.label());
            for depth in DEPTHS {
                let m = self.find(op, Driver::EngineBacklog { depth });
                let _ = write!(
                    out,
                    " {} / {} |",
                    us(m.probe_quantile_us(0.5)),
                    us(m.probe_quantile_us(0.9))
                );
            }
            out.push('\n');
        }
    }

    fn write_depth_header(&self, out: &mut String) {
        out.push_str("| command |");
        for depth in DEPTHS {
            let _ = write!(out, " depth {depth} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"--:|".repeat(DEPTHS.len()));
        out.push('\n');
    }
}

fn us(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn rate(ops_per_sec: f64) -> String {
    if ops_per_sec >= 10_000.0 {
        format!("{:.1} k", ops_per_sec / 1000.0)
    } else {
        format!("{ops_per_sec:.0}")
    }
}

fn goal(ratio: f64, goal: f64) -> String {
    let verdict = if ratio >= goal { "met" } else { "missed" };
    format!("{ratio:.1}× ({verdict})")
}
