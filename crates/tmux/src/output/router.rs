//! Which stream each pane's output goes to: the routes from pane ids to [`PaneStream`]s that the
//! watch connection's reader task feeds, with the window each pane was linked
//! through and the keeps that hold streams open without a subscriber.
//!
//! A route holds its stream weakly: a stream lives while a subscriber (or a keep) holds it, and
//! a route whose stream is gone is forgotten at the next sweep.
//!
//! A stream ended because its connection was lost (a host's link dropped) is held a while
//! longer: the next subscriber of the same pane, the same process of the same server, gets a
//! [`PaneStream::continuation`] of it, so the pane's ledger and recent output go on across the
//! loss, with a gap marked where nothing was seen.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::time::Instant;

use crate::output::{CONTINUED_WITHIN, PaneStream, StreamEnd};
use crate::wire::ids::{PaneId, WindowId};

/// Which stream each pane's output goes to.
#[derive(Default)]
pub(super) struct Router {
    routes: Mutex<HashMap<PaneId, Route>>,
    /// Streams a lost connection ended, until a subscriber of their pane continues them or
    /// [`CONTINUED_WITHIN`] passes. Locked after `routes` when both are.
    interrupted: Mutex<HashMap<PaneId, Interrupted>>,
    /// Whether a task lets go of `interrupted` streams as they lapse (one at a time).
    expiring: AtomicBool,
}

/// Streams a lost connection ended held at once per server; past it the oldest goes. Each is
/// a pane's ring, so a tenant who makes its panes' connection drop again and again (killing
/// the client on its own host) holds no more than this many.
const MAX_INTERRUPTED: usize = 256;

/// A stream a lost connection ended, or its continuation until a subscriber has it (see
/// [`Router::settled`]), so that a subscription that fails on the way loses nothing.
struct Interrupted {
    origin: String,
    stream: Arc<PaneStream>,
    at: Instant,
}

struct Route {
    /// The pane's window, as linked into the watch session.
    window: WindowId,
    /// Which process of which server the pane was ([`super::watch_session::PlaceRow::origin`]).
    origin: String,
    stream: Weak<PaneStream>,
    /// The stream held open until then, so its pane's ledger keeps recording with no
    /// subscriber (see [`OutputHub::keep`]).
    kept: Option<(Arc<PaneStream>, Instant)>,
}

impl Route {
    /// Whether a subscriber (not only a keep) holds the stream.
    fn subscribed(&self) -> bool {
        self.stream.strong_count() > usize::from(self.kept.is_some())
    }
}

impl Router {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PaneId, Route>> {
        // Each update is a single insert, remove or field write, so a poisoned map is still
        // consistent.
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn stream(&self, pane: PaneId) -> Option<Arc<PaneStream>> {
        self.lock().get(&pane)?.stream.upgrade()
    }

    /// The live, open stream for `pane` and its window, if some subscriber still holds one.
    pub(super) fn live(&self, pane: PaneId) -> Option<(WindowId, Arc<PaneStream>)> {
        let routes = self.lock();
        let route = routes.get(&pane)?;
        let stream = route.stream.upgrade()?;
        (!stream.is_closed()).then_some((route.window, stream))
    }

    fn lock_interrupted(&self) -> std::sync::MutexGuard<'_, HashMap<PaneId, Interrupted>> {
        // Each update is a single insert or remove, so a poisoned map is still consistent.
        self.interrupted.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stream `pane` (in `window`, of `origin`) is routed to: a live, open one if a
    /// subscriber holds one, so that subscribers who raced to subscribe to one pane share one
    /// stream (a replaced stream would never see output); else the continuation of the stream
    /// a lost connection ended, if it was this very pane's; else a new one keeping `capacity`
    /// bytes.
    pub(super) fn route(
        &self,
        pane: PaneId,
        window: WindowId,
        origin: String,
        capacity: usize,
    ) -> Arc<PaneStream> {
        let mut routes = self.lock();
        if let Some(existing) = routes
            .get(&pane)
            .and_then(|r| r.stream.upgrade())
            .filter(|s| !s.is_closed())
        {
            return existing;
        }
        let stream = {
            let mut interrupted = self.lock_interrupted();
            match interrupted.get_mut(&pane) {
                Some(before)
                    if before.origin == origin
                        && before.stream.is_closed()
                        && before.at.elapsed() < CONTINUED_WITHIN =>
                {
                    // Held until a subscriber has it: a failed link keeps it for the next.
                    before.stream = before.stream.continuation();
                    before.stream.clone()
                }
                _ => {
                    interrupted.remove(&pane);
                    PaneStream::new(pane, capacity)
                }
            }
        };
        routes.insert(
            pane,
            Route {
                window,
                origin,
                stream: Arc::downgrade(&stream),
                kept: None,
            },
        );
        stream
    }

    /// A subscriber has `pane`'s stream: a continuation held for it is let go of (the
    /// subscriber holds it now).
    pub(super) fn settled(&self, pane: PaneId) {
        let mut interrupted = self.lock_interrupted();
        if interrupted
            .get(&pane)
            .is_some_and(|i| !i.stream.is_closed())
        {
            interrupted.remove(&pane);
        }
    }

    /// Records that `pane` now lives in `window` (it was moved).
    pub(super) fn moved(&self, pane: PaneId, window: WindowId) {
        if let Some(route) = self.lock().get_mut(&pane) {
            route.window = window;
        }
    }

    /// Holds `stream` open until `until` (or later, if it already was), while it is its
    /// pane's routed stream.
    pub(super) fn keep(&self, stream: &Arc<PaneStream>, until: Instant) {
        let mut routes = self.lock();
        let Some(route) = routes.get_mut(&stream.pane()) else {
            return;
        };
        if !route
            .stream
            .upgrade()
            .is_some_and(|s| Arc::ptr_eq(&s, stream))
        {
            return;
        }
        let until = match &route.kept {
            Some((_, kept)) => until.max(*kept),
            None => until,
        };
        route.kept = Some((stream.clone(), until));
    }

    /// Lets go of kept streams whose time is up or whose pane's output ended.
    pub(super) fn expire_kept(&self, now: Instant) {
        for route in self.lock().values_mut() {
            if route
                .kept
                .as_ref()
                .is_some_and(|(stream, until)| *until <= now || stream.is_closed())
            {
                route.kept = None;
            }
        }
    }

    /// Windows with a live stream, each with `None` when a subscriber holds one of them, or
    /// the latest time keeps hold them until when only keeps do.
    pub(super) fn live_windows(&self) -> HashMap<WindowId, Option<Instant>> {
        let mut routes = self.lock();
        routes.retain(|_, r| r.stream.strong_count() > 0);
        let mut windows: HashMap<WindowId, Option<Instant>> = HashMap::new();
        for route in routes.values() {
            let kept_until = match (&route.kept, route.subscribed()) {
                (Some((_, until)), false) => Some(*until),
                _ => None,
            };
            windows
                .entry(route.window)
                .and_modify(|held| {
                    *held = match (*held, kept_until) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    }
                })
                .or_insert(kept_until);
        }
        windows
    }

    /// Live subscriptions across all panes (each holds its pane's stream; a kept stream's own
    /// hold is not one).
    pub(super) fn subscriptions(&self) -> usize {
        self.lock()
            .values()
            .map(|r| r.stream.strong_count() - usize::from(r.kept.is_some()))
            .sum()
    }

    /// Panes with a live stream, and their windows.
    pub(super) fn live_panes(&self) -> Vec<(PaneId, WindowId)> {
        let mut routes = self.lock();
        routes.retain(|_, r| r.stream.strong_count() > 0);
        routes.iter().map(|(p, r)| (*p, r.window)).collect()
    }

    /// Whether the caller is to start the task that lets go of lapsed interrupted streams
    /// ([`Self::expire_interrupted`]): none runs yet.
    pub(super) fn start_expiring(&self) -> bool {
        !self.expiring.swap(true, Ordering::AcqRel)
    }

    /// Lets go of the streams a lost connection ended that are past [`CONTINUED_WITHIN`].
    /// Returns when the next one is due; `None` once none is held, and the expiring task ends.
    pub(super) fn expire_interrupted(&self) -> Option<Instant> {
        let mut interrupted = self.lock_interrupted();
        interrupted.retain(|_, i| i.at.elapsed() < CONTINUED_WITHIN);
        let due = interrupted.values().map(|i| i.at + CONTINUED_WITHIN).min();
        if due.is_none() {
            // Cleared under the lock: a stream held after this starts a new task.
            self.expiring.store(false, Ordering::Release);
        }
        due
    }

    /// Ends and forgets the streams for which `which` holds. Those a lost connection ended
    /// ([`StreamEnd::Lost`]) are held a while for the next subscriber of their pane to continue.
    pub(super) fn close_where(&self, reason: &StreamEnd, which: impl Fn(PaneId, WindowId) -> bool) {
        let continued = matches!(reason, StreamEnd::Lost(_));
        let closed: Vec<_> = {
            let mut routes = self.lock();
            let panes: Vec<_> = routes
                .iter()
                .filter(|(p, r)| which(**p, r.window))
                .map(|(p, _)| *p)
                .collect();
            panes
                .into_iter()
                .filter_map(|p| routes.remove(&p))
                .collect()
        };
        let at = Instant::now();
        for route in closed {
            let Some(stream) = route.stream.upgrade() else {
                continue;
            };
            stream.close(reason.clone());
            if !continued {
                // Ended for good: nothing of the pane is to be continued.
                self.lock_interrupted().remove(&stream.pane());
                continue;
            }
            let pane = stream.pane();
            let origin = route.origin;
            let mut interrupted = self.lock_interrupted();
            if interrupted.len() >= MAX_INTERRUPTED
                && !interrupted.contains_key(&pane)
                && let Some(oldest) = interrupted
                    .iter()
                    .min_by_key(|(_, i)| i.at)
                    .map(|(p, _)| *p)
            {
                interrupted.remove(&oldest);
            }
            interrupted.insert(pane, Interrupted { origin, stream, at });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn only_the_same_pane_of_the_same_server_continues_a_lost_stream() {
        let router = Router::default();
        let (pane, window) = (PaneId(3), WindowId(1));
        let first = router.route(pane, window, "10/100/20".into(), 64);
        first.push(b"before");
        assert!(
            Arc::ptr_eq(&router.route(pane, window, "10/100/20".into(), 64), &first),
            "a live stream is shared"
        );
        router.close_where(&StreamEnd::Lost("eof".into()), |p, _| p == pane);
        assert!(first.is_closed());
        assert!(router.start_expiring(), "one task lets go of it");
        assert!(!router.start_expiring(), "one only");
        let due = router.expire_interrupted().expect("held until due");
        assert!(due > Instant::now() + CONTINUED_WITHIN - Duration::from_secs(60));
        let next = router.route(pane, window, "10/100/20".into(), 64);
        assert_eq!(next.end_offset(), first.end_offset(), "continued");
        assert!(next.unseen_since().is_some());
        // A subscription that failed on the way (its stream dropped) loses nothing: the
        // continuation is held until a subscriber settles it.
        drop(next);
        let next = router.route(pane, window, "10/100/20".into(), 64);
        assert_eq!(next.end_offset(), first.end_offset(), "still continued");
        router.settled(pane);
        assert!(router.lock_interrupted().is_empty());

        // Another server process on the same socket: the pane id names another pane.
        router.close_where(&StreamEnd::Lost("eof".into()), |p, _| p == pane);
        let other = router.route(pane, window, "11/107/20".into(), 64);
        assert_eq!(other.end_offset(), 0, "a new stream");
        assert!(other.unseen_since().is_none());

        // A stream closed for good is not held.
        router.close_where(&StreamEnd::PaneClosed, |p, _| p == pane);
        assert_eq!(
            router
                .route(pane, window, "11/107/20".into(), 64)
                .end_offset(),
            0
        );
        assert!(router.lock_interrupted().is_empty());
        assert_eq!(router.expire_interrupted(), None, "the task ends");
        assert!(router.start_expiring(), "the next loss starts another");

        // At most MAX_INTERRUPTED are held; the oldest goes.
        let streams: Vec<_> = (0..=MAX_INTERRUPTED)
            .map(|n| router.route(PaneId(100 + n as u32), window, "o".into(), 8))
            .collect();
        router.close_where(&StreamEnd::Lost("eof".into()), |p, _| p.0 >= 100);
        assert_eq!(router.lock_interrupted().len(), MAX_INTERRUPTED);
        drop(streams);
    }
}
