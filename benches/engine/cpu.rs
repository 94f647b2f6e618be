//! CPU time on both sides of the wire.
//!
//! - The tmux server: `utime + stime` from `/proc/<pid>/stat` (clock ticks, usually 10 ms, so
//!   a case's figure is its total over all rounds divided by its total operations).
//! - The caller side: this process (`RUSAGE_SELF`: the engine, or the spawning of
//!   subprocesses), the `tmux` subprocesses it waited for (`RUSAGE_CHILDREN`), and the engine's
//!   long-lived `tmux -C` control clients (from `/proc`, as they are never waited for while the
//!   benchmark runs).

use std::ops::Sub;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

/// CPU time used so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuTimes {
    pub server: Duration,
    pub caller: Duration,
}

impl Sub for CpuTimes {
    type Output = CpuTimes;

    fn sub(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            server: self.server.saturating_sub(earlier.server),
            caller: self.caller.saturating_sub(earlier.caller),
        }
    }
}

/// Reads [`CpuTimes`] for one tmux server and this process's control clients.
pub(crate) struct CpuMeter {
    server_pid: u32,
    control_clients: Vec<u32>,
    tick: Duration,
}

impl CpuMeter {
    pub(crate) fn new(server_pid: u32, control_clients: Vec<u32>) -> Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ensure!(ticks_per_second > 0, "sysconf(_SC_CLK_TCK) failed");
        let meter = Self {
            server_pid,
            control_clients,
            tick: Duration::from_secs(1) / u32::try_from(ticks_per_second)?,
        };
        meter.read()?;
        Ok(meter)
    }

    pub(crate) fn read(&self) -> Result<CpuTimes> {
        let mut caller = rusage(libc::RUSAGE_SELF)? + rusage(libc::RUSAGE_CHILDREN)?;
        for &pid in &self.control_clients {
            caller += process_cpu(pid, self.tick)?;
        }
        Ok(CpuTimes {
            server: process_cpu(self.server_pid, self.tick)?,
            caller,
        })
    }
}

/// `utime + stime` of a process.
fn process_cpu(pid: u32, tick: Duration) -> Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    // The command name (field 2) may contain spaces; fields after it are space-separated,
    // starting with field 3 (state). utime and stime are fields 14 and 15.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("unexpected {path}: {stat}"))?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| -> Result<u32> {
        fields
            .get(n - 3)
            .with_context(|| format!("{path} has no field {n}"))?
            .parse()
            .with_context(|| format!("{path} field {n} is not a number"))
    };
    Ok(tick * (field(14)? + field(15)?))
}

fn rusage(who: libc::c_int) -> Result<Duration> {
    // SAFETY: an all-zero rusage is a valid value, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    ensure!(rc == 0, "getrusage: {}", std::io::Error::last_os_error());
    Ok(timeval(usage.ru_utime) + timeval(usage.ru_stime))
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}
