//! Throttling sources that fail to authenticate.
//!
//! Every other limit is per client, and a request without a valid token has no client. Failed
//! authentications are counted per source address (GCRA, governor; `http.auth_failures_per_minute`
//! with that many in a burst); once a source is over its budget, each of its requests whose
//! token does not verify gets `429` with `Retry-After` and is not counted again, until the
//! budget allows one more failure.
//!
//! A token that verifies is admitted whatever its source's record (see
//! [`super::Authenticator`]'s `admit`): the clients behind one address (a proxy, a host whose
//! tenants share it) share that record, and one of them sending bad tokens must not lock the
//! others out. What that costs: every request of a throttled source still has its token
//! verified, one signature check on at most [`super::token::MAX_TOKEN_BYTES`] (an HMAC for
//! HS256; an RSA, ECDSA or Ed25519 verification with public keys), the same work as a request
//! from a source that is not throttled, so the throttle no longer saves verification work.
//! What it still does: a throttled source's bad token goes no further than that check, its
//! answer no longer says which check failed (one `429` for every reason), and the bookkeeping
//! stays bounded (one limiter cell and one deadline per source, idle ones swept).
//!
//! The source is the connection's peer address ([`PeerAddr`], set by [`crate::http::serve`]);
//! a request without one (an in-process router in tests) is not throttled.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::owners::lock;

/// The peer address of a request's connection (axum `ConnectInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerAddr(pub SocketAddr);

/// How many failures between sweeps of idle sources.
const SWEEP_EVERY: u64 = 1024;

/// Failed authentications per source address.
pub(crate) struct FailureThrottle {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
    /// Sources over their budget, and until when.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    failures: AtomicU64,
}

impl std::fmt::Debug for FailureThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureThrottle").finish_non_exhaustive()
    }
}

impl FailureThrottle {
    /// At most `per_minute` failures a minute per source, all of them in a burst.
    pub(crate) fn new(per_minute: NonZeroU32) -> Self {
        Self {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            clock: DefaultClock::default(),
            blocked: Mutex::new(HashMap::new()),
            failures: AtomicU64::new(0),
        }
    }

    /// How long `source` must wait before a failure of it counts again, when it spent its
    /// failures.
    pub(crate) fn check(&self, source: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let mut blocked = lock(&self.blocked);
        match blocked.get(&source) {
            Some(until) if *until > now => Some(*until - now),
            Some(_) => {
                blocked.remove(&source);
                None
            }
            None => None,
        }
    }

    /// Counts a failed authentication from `source`; the failure beyond its budget blocks it
    /// until the budget allows one more.
    pub(crate) fn fail(&self, source: IpAddr) {
        if let Err(not_until) = self.limiter.check_key(&source) {
            let wait = not_until.wait_time_from(self.clock.now());
            lock(&self.blocked).insert(source, Instant::now() + wait);
        }
        if self.failures.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
            let now = Instant::now();
            lock(&self.blocked).retain(|_, until| *until > now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_blocked_after_its_failures_and_others_are_not() {
        let throttle = FailureThrottle::new(NonZeroU32::new(3).unwrap());
        let (bad, good): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..3 {
            assert_eq!(throttle.check(bad), None);
            throttle.fail(bad);
        }
        assert_eq!(throttle.check(bad), None, "three failures are allowed");
        throttle.fail(bad);
        let wait = throttle.check(bad).expect("the fourth blocks it");
        assert!(
            wait > Duration::from_secs(10) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        assert_eq!(throttle.check(good), None);
    }
}
