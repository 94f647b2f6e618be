//! Progress notifications while a waiting call runs.
//!
//! Many MCP clients give up on a request after a fixed time (60 s is common) unless progress
//! arrives, and reset that timeout on each progress notification. The waiting tools
//! ([`WAITING_TOOLS`]) may run up to the caller's `max_wait_seconds`, so when the client sent a
//! `progressToken` such a call gets a heartbeat: every `http.progress_interval_secs` (10 s) a
//! `notifications/progress` whose `progress` is the seconds waited so far, `total` the most
//! the call may take, and `message` what it waits for and how long at most is left. A call
//! that ends sooner sends nothing; one without a token is left alone.

use std::time::Duration;

use muxgate_mux::lines::excerpt;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

/// Tools that wait for something that may take long.
pub(crate) const WAITING_TOOLS: &[&str] = &[
    "wait_for_text",
    "wait_for_state",
    "send_prompt",
    "run_command",
    "wait_for_channel",
    "pane_batch",
    "send_keys_batch",
    "zellij_run_command",
    "spawn_agent",
];

/// The heartbeat of one call.
pub(crate) struct Heartbeat {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    interval: Duration,
    /// When the first notification goes: one interval in, or at once for a call the client
    /// must learn about now (held for approval).
    first: Duration,
    /// The most the call may take: its `timeout` argument, at most the caller's wait limit.
    limit: Duration,
    /// What it waits for, e.g. `wait_for_text on %3`.
    what: String,
}

impl Heartbeat {
    /// The heartbeat for a call of `tool` with `args`, if it is a waiting tool and the client
    /// asked for progress.
    pub(crate) fn for_call(
        tool: &str,
        args: Option<&serde_json::Map<String, Value>>,
        token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
        interval: Duration,
        max_wait: Duration,
    ) -> Option<Self> {
        let token = token?;
        if !WAITING_TOOLS.contains(&tool) {
            return None;
        }
        let arg = |name: &str| args.and_then(|a| a.get(name));
        let limit = arg("timeout")
            .and_then(Value::as_f64)
            .filter(|secs| secs.is_finite() && *secs > 0.0)
            .map_or(max_wait, |secs| Duration::from_secs_f64(secs).min(max_wait));
        let on = ["target", "pane", "channel"]
            .iter()
            .find_map(|name| arg(name).and_then(Value::as_str));
        let what = match on {
            Some(on) => format!("{tool} on {}", excerpt(on)),
            None => tool.to_owned(),
        };
        Some(Self {
            peer,
            token,
            interval,
            first: interval,
            limit,
            what,
        })
    }

    /// The heartbeat of a call held for approval, if the client asked for progress: the first
    /// notification at once (so the client can tell the human which id to decide), then one
    /// every `interval` until `limit`.
    pub(crate) fn for_approval(
        what: String,
        token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
        interval: Duration,
        limit: Duration,
    ) -> Option<Self> {
        Some(Self {
            peer,
            token: token?,
            interval,
            first: Duration::ZERO,
            limit,
            what,
        })
    }

    /// Runs `call`, beating until it ends (or is dropped). A first notification due at once
    /// is sent before `call` is polled, so it reaches the client ahead of the call's answer
    /// however soon the call ends (a human may decide a held call before a spawned task would
    /// have run).
    pub(crate) async fn around<F: Future>(self, call: F) -> F::Output {
        let start = Instant::now();
        if self.first.is_zero() && !self.notify(start).await {
            return call.await;
        }
        let _beating = AbortOnDropHandle::new(tokio::spawn(self.beat(start)));
        call.await
    }

    /// The notifications after the first: `first` after `start` (or one interval, when the
    /// first went at once), then every `interval`.
    async fn beat(self, start: Instant) {
        let first = if self.first.is_zero() {
            self.interval
        } else {
            self.first
        };
        let mut ticks = tokio::time::interval_at(start + first, self.interval);
        loop {
            ticks.tick().await;
            if !self.notify(start).await {
                return;
            }
        }
    }

    /// Sends one notification; false when the client went away (it just misses its
    /// progress; the call ends on its own).
    async fn notify(&self, start: Instant) -> bool {
        let waited = start.elapsed();
        let left = self.limit.saturating_sub(waited);
        let param =
            ProgressNotificationParam::new(self.token.clone(), waited.as_secs_f64().floor())
                .with_total(self.limit.as_secs_f64().ceil())
                .with_message(format!(
                    "{}: still waiting after {} s, at most {} s left",
                    self.what,
                    waited.as_secs(),
                    left.as_secs()
                ));
        self.peer.notify_progress(param).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::WAITING_TOOLS;

    /// A tool that takes a `timeout` may wait that long, so it gets a heartbeat; one that does
    /// not never waits long enough to need one.
    #[test]
    fn the_waiting_tools_are_the_tools_that_take_a_timeout() {
        let mut with_timeout: Vec<String> = crate::mcp::catalog::tools()
            .into_iter()
            .filter(|tool| {
                tool.input_schema
                    .get("properties")
                    .and_then(|p| p.get("timeout"))
                    .is_some()
            })
            .map(|tool| tool.name.to_string())
            .collect();
        with_timeout.sort();
        let mut waiting: Vec<&str> = WAITING_TOOLS.to_vec();
        waiting.sort();
        assert_eq!(with_timeout, waiting);
    }
}
