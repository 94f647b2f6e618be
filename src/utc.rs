//! A system time as a UTC calendar date and time of day, for the timestamps the gateway writes
//! itself (audit records, recording file names) without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// A point in time in UTC, to the millisecond. Times before 1970 read as 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
    pub millis: u32,
}

impl From<SystemTime> for Utc {
    fn from(t: SystemTime) -> Self {
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        let (year, month, day) = civil_from_days((secs / 86_400) as i64);
        let rem = secs % 86_400;
        Self {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
            millis: since.subsec_millis(),
        }
    }
}

impl Utc {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339).
    pub(crate) fn rfc3339_millis(&self) -> String {
        self.written(["-", ":", "."])
    }

    /// `YYYYMMDDTHHMMSSmmmZ`: without separators that sort wrongly or a file name cannot hold.
    pub(crate) fn basic(&self) -> String {
        self.written(["", "", ""])
    }

    /// The time with `date` between the parts of the date, `time` between those of the time
    /// of day, and `fraction` before the milliseconds.
    fn written(&self, [date, time, fraction]: [&str; 3]) -> String {
        format!(
            "{:04}{date}{:02}{date}{:02}T{:02}{time}{:02}{time}{:02}{fraction}{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_across_leap_years_and_centuries() {
        let at = |secs: u64| Utc::from(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!((at(0).year, at(0).month, at(0).day), (1970, 1, 1));
        // 2000-02-29 12:34:56 and 2100-03-01 00:00:00.
        let leap = at(951_827_696);
        assert_eq!((leap.year, leap.month, leap.day), (2000, 2, 29));
        assert_eq!((leap.hour, leap.minute, leap.second), (12, 34, 56));
        let century = at(4_107_542_400);
        assert_eq!((century.year, century.month, century.day), (2100, 3, 1));
        let before = Utc::from(UNIX_EPOCH - Duration::from_secs(5));
        assert_eq!((before.year, before.month, before.day), (1970, 1, 1));
    }

    #[test]
    fn written_with_and_without_separators() {
        let at = |s: u64, ms: u64| {
            Utc::from(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0).rfc3339_millis(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            at(951_782_400, 5).rfc3339_millis(),
            "2000-02-29T00:00:00.005Z"
        );
        assert_eq!(
            at(1_700_000_000, 999).rfc3339_millis(),
            "2023-11-14T22:13:20.999Z"
        );
        assert_eq!(
            at(4_107_542_399, 0).rfc3339_millis(),
            "2100-02-28T23:59:59.000Z"
        );
        assert_eq!(at(1_700_000_000, 12).basic(), "20231114T221320012Z");
    }
}
