//! Medians, percentiles and how numbers are printed.

use std::time::Duration;

/// The value at quantile `q` (0..=1, nearest rank) of `values`; 0 for none.
pub(crate) fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub(crate) fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

pub(crate) fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// A latency in µs, ms or s with three significant digits.
pub(crate) fn latency(us: f64) -> String {
    if us < 1_000.0 {
        format!("{} µs", sig3(us))
    } else if us < 1_000_000.0 {
        format!("{} ms", sig3(us / 1_000.0))
    } else {
        format!("{} s", sig3(us / 1_000_000.0))
    }
}

/// A ratio, e.g. `41×` or `3.2×`.
pub(crate) fn ratio(value: f64) -> String {
    if !value.is_finite() {
        return "∞".to_owned();
    }
    format!("{}×", sig3_int(value))
}

/// A rate per second, e.g. `12.3 k/s`.
pub(crate) fn rate(per_second: f64) -> String {
    if per_second >= 1_000.0 {
        format!("{} k/s", sig3(per_second / 1_000.0))
    } else {
        format!("{}/s", sig3(per_second))
    }
}

/// Three significant digits, but never a fraction on numbers ≥ 100.
fn sig3(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Like [`sig3`], but ratios ≥ 10 are whole.
fn sig3_int(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// The clock tick in seconds (CPU times are counted in them).
pub(crate) fn tick_secs() -> f64 {
    crate::procfs::clock_tick().as_secs_f64()
}

/// A CPU time in ms.
pub(crate) fn cpu_ms(duration: Duration) -> String {
    format!("{} ms", duration.as_millis())
}

/// KiB as MiB with one decimal.
pub(crate) fn mib(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}
