//! When, from what and on how busy a machine a benchmark's numbers come.

/// When and from what the numbers come: the UTC date and the commit (with `+changes` when the
/// tree differs from it), so a table pasted into BENCHMARKS.md says what it describes.
pub(crate) fn provenance() -> String {
    let run = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let date = run("date", &["-u", "+%Y-%m-%d"]).unwrap_or_else(|| "date unknown".to_owned());
    let commit = run("git", &["rev-parse", "--short=12", "HEAD"])
        .unwrap_or_else(|| "commit unknown".to_owned());
    let changed = run("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    format!(
        "measured {date} at commit {commit}{}",
        if changed { "+changes" } else { "" }
    )
}

/// The load average over 1, 5 and 15 minutes.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
