//! What one call may spend, the same for every backend: how long a wait may last (a slot among
//! the caller's concurrent waits, and the timeout clamped to its `max_wait_seconds`) and how much
//! text its answer may carry.
//!
//! The limits themselves live in [`crate::limits`]; this module turns them into the tool errors
//! and values a tool works with.

use std::time::Duration;

use tokio::time::Instant;

use crate::limits::output::Carried;
use crate::limits::{Limits, WaitPermit};

use super::call::CallContext;
use super::error::{ToolError, ToolErrorKind};

/// How long a wait may last and its slot among the caller's concurrent waits (freed on drop).
#[derive(Debug)]
pub struct WaitBudget {
    pub started: Instant,
    pub deadline: Instant,
    /// The timeout actually applied (the request clamped to the caller's `max_wait_seconds`).
    pub effective: Duration,
    _permit: WaitPermit,
}

/// What one caller may spend in one call: a wait slot and its clamped timeout, and the room
/// left in its answers. Each backend's access hands out the same one.
#[derive(Clone, Copy)]
pub struct CallBudget<'a> {
    limits: &'a Limits,
    call: &'a CallContext,
}

impl<'a> CallBudget<'a> {
    pub fn new(limits: &'a Limits, call: &'a CallContext) -> Self {
        Self { limits, call }
    }

    /// Takes one of the caller's wait slots and clamps the timeout (seconds; `default` when
    /// absent) to its `max_wait_seconds`.
    pub fn wait(&self, requested: Option<f64>, default: Duration) -> Result<WaitBudget, ToolError> {
        let requested = match requested {
            None => default,
            Some(secs) => parse_timeout(secs)?,
        };
        let sub = self.call.sub();
        let permit = self.limits.acquire_wait(sub).map_err(|e| {
            ToolError::new(
                ToolErrorKind::Busy,
                e.to_string(),
                "wait for one of your running waits to finish, or cancel it",
            )
        })?;
        let effective = self.limits.clamp_wait(sub, requested).effective;
        let started = Instant::now();
        Ok(WaitBudget {
            started,
            deadline: started + effective,
            effective,
            _permit: permit,
        })
    }

    /// Caps text for a tool result to what is left of the call's output budget, keeping the
    /// tail. Returns the text and how many bytes were cut.
    pub fn cap_output(&self, text: &str) -> (String, usize) {
        self.cap(text, Carried::InToolResult)
    }

    /// Caps a resource's text the same way (a resource carries it once).
    pub fn cap_resource_text(&self, text: &str) -> String {
        self.cap(text, Carried::InResource).0
    }

    fn cap(&self, text: &str, carried: Carried) -> (String, usize) {
        let capped = self
            .limits
            .clamp_output(self.call.sub(), text, &self.call.output, carried);
        (capped.text.to_owned(), capped.dropped_bytes)
    }
}

impl WaitBudget {
    /// The effective timeout in seconds, as reported to clients.
    pub fn effective_secs(&self) -> f64 {
        self.effective.as_secs_f64()
    }
}

/// A client's timeout in seconds: positive and finite.
pub(crate) fn parse_timeout(secs: f64) -> Result<Duration, ToolError> {
    if !secs.is_finite() || secs <= 0.0 {
        return Err(ToolError::invalid_arguments(
            format!("timeout must be a positive number of seconds, got {secs}"),
            "pass e.g. `timeout: 30`",
        ));
    }
    // Far beyond any limit; the budget clamps it anyway.
    Ok(Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_must_be_positive_and_finite() {
        assert_eq!(parse_timeout(1.5).unwrap(), Duration::from_millis(1500));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = parse_timeout(bad).unwrap_err();
            assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        }
    }
}
