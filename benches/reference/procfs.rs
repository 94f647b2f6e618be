//! What the operating system says about the processes under test, read from `/proc`: CPU time,
//! resident memory and child processes. And a counter of `tmux` processes started, kept by a
//! `tmux` wrapper that the servers under test find first on `PATH`, so the count does not
//! depend on anything either server reports about itself.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use tempfile::TempDir;

/// The length of a clock tick (`utime` and `stime` are counted in them).
pub(crate) fn clock_tick() -> Duration {
    // SAFETY: sysconf has no preconditions.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // Linux always reports a positive tick rate; 100 is its value on every common build.
    let ticks_per_second = u32::try_from(ticks_per_second)
        .ok()
        .filter(|&t| t > 0)
        .unwrap_or(100);
    Duration::from_secs(1) / ticks_per_second
}

/// Fields 3… of `/proc/<pid>/stat` (after the command name, which may contain spaces).
fn stat_fields(pid: u32) -> Result<Vec<String>> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    let (_, rest) = stat
        .rsplit_once(')')
        .with_context(|| format!("unexpected {path}: {stat}"))?;
    Ok(rest.split_whitespace().map(str::to_owned).collect())
}

fn stat_field(fields: &[String], n: usize) -> Result<u64> {
    fields
        .get(n - 3)
        .with_context(|| format!("/proc stat has no field {n}"))?
        .parse()
        .with_context(|| format!("/proc stat field {n} is not a number"))
}

/// `utime + stime` of a process.
pub(crate) fn cpu_time(pid: u32) -> Result<Duration> {
    let fields = stat_fields(pid)?;
    let ticks = stat_field(&fields, 14)? + stat_field(&fields, 15)?;
    Ok(clock_tick() * u32::try_from(ticks).context("CPU ticks overflow")?)
}

/// `utime + stime + cutime + cstime`: a process and the children it has waited for.
pub(crate) fn cpu_time_with_children(pid: u32) -> Result<Duration> {
    let fields = stat_fields(pid)?;
    let ticks = stat_field(&fields, 14)?
        + stat_field(&fields, 15)?
        + stat_field(&fields, 16)?
        + stat_field(&fields, 17)?;
    Ok(clock_tick() * u32::try_from(ticks).context("CPU ticks overflow")?)
}

/// Resident memory of a process, in KiB (`VmRSS`).
pub(crate) fn rss_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no VmRSS in {path}"))
}

/// The live children of `parent` (scanning `/proc`).
pub(crate) fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            stat_fields(pid)
                .ok()
                .and_then(|fields| stat_field(&fields, 4).ok())
                == Some(u64::from(parent))
        })
        .collect()
}

/// Proportional set size of a process in KiB (`Pss` of `smaps_rollup`): shared pages divided
/// among the processes sharing them, so sums over many processes do not overstate.
pub(crate) fn pss_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/smaps_rollup");
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    text.lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no Pss in {path}"))
}

/// Every live descendant of `root` (children, their children, …).
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(pid) = frontier.pop() {
        for child in children(pid) {
            found.push(child);
            frontier.push(child);
        }
    }
    found
}

/// The command name of a process (`/proc/<pid>/comm`).
pub(crate) fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_owned())
        .unwrap_or_default()
}

/// This process's CPU time (`getrusage(RUSAGE_SELF)`).
pub(crate) fn self_cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is a valid value, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// A directory holding a `tmux` script that appends a line to a log and then runs the real
/// tmux. Put first on `PATH`, it counts every tmux process started by whoever uses that `PATH`.
pub(crate) struct SpawnCounter {
    /// Holds the wrapper and its log; removed with the counter.
    _dir: TempDir,
    log: PathBuf,
    path: OsString,
}

impl SpawnCounter {
    pub(crate) fn new() -> Result<Self> {
        let real = which_tmux()?;
        let dir = tempfile::tempdir().context("create a temporary directory")?;
        let log = dir.path().join("spawns.log");
        std::fs::write(&log, "").context("create the spawn log")?;
        let script = dir.path().join("tmux");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        )
        .context("write the tmux wrapper")?;
        let chmod = std::process::Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .context("run chmod")?;
        ensure!(chmod.success(), "chmod +x {} failed", script.display());
        let mut path = OsString::from(dir.path());
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        Ok(Self {
            _dir: dir,
            log,
            path,
        })
    }

    /// `PATH` with the wrapper first.
    pub(crate) fn path(&self) -> &OsString {
        &self.path
    }

    /// tmux processes started so far, with their arguments.
    pub(crate) fn spawns(&self) -> Result<Vec<String>> {
        Ok(std::fs::read_to_string(&self.log)
            .context("read the spawn log")?
            .lines()
            .map(str::to_owned)
            .collect())
    }
}

/// The tmux binary on `PATH`.
fn which_tmux() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("tmux"))
        .find(|candidate| candidate.is_file())
        .context("tmux is not on PATH")
}
