//! Leak and load probes for reliability tests: the gateway's `/metrics` gauges and the
//! process's own resident memory, threads and file descriptors from `/proc`.

/// The value of the sample `name` (exactly, labels included, e.g.
/// `muxgate_tmux_control_connections{server="work",connection="output"}`) in a scrape of
/// `base`/metrics; 0 when absent.
pub(crate) async fn metric(base: &str, name: &str) -> f64 {
    metric_sample(base, name).await.unwrap_or(0.0)
}

/// The value of the sample `name` in a scrape of `base`/metrics; `None` when absent.
pub(crate) async fn metric_sample(base: &str, name: &str) -> Option<f64> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics body");
    sample(&text, name)
}

/// The value of the sample `name` in an exposition text.
pub(crate) fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (key, value) = l.rsplit_once(' ')?;
        (key == name).then(|| value.parse().ok()).flatten()
    })
}

/// A field of `/proc/<pid>/status` in its own unit (kB for memory), e.g. `VmRSS`, `Threads`.
pub(crate) fn status_field(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Resident memory of this process, in KiB.
pub(crate) fn own_rss_kib() -> u64 {
    status_field("self", "VmRSS")
}

/// Open file descriptors of this process.
pub(crate) fn own_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("read fds")
        .count()
}
