//! The fleet as a resource a coordinator subscribes to: `tmux://{server}/agents` (read:
//! `list_agents`' answer), and a `notifications/resources/updated` for it whenever an agent the
//! subscriber may see changes state, is spawned, resumed or stopped — so a coordinator is
//! woken by an edge instead of polling.
//!
//! Changes go through one broadcast channel ([`FleetFeed`]); each subscription reads it and
//! keeps what its caller may see (the agent's session, by its name and spawner, as the session
//! ACL judges it). Both ways of subscribing are served: 2026-07-28 `subscriptions/listen` (the
//! subscription lives as long as that request) and the 2025 sessions' `resources/subscribe`
//! (a task per subscription, ended by `resources/unsubscribe`, the session's end or shutdown).

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::resources::{Followed, agents_uri};
use crate::auth::Principal;
use crate::auth::policy::{SessionRef, can_see_session};

/// Changes held for slow subscribers; one that falls further behind is told every URI it
/// follows changed (it reads them again).
const BACKLOG: usize = 1024;
/// Most `resources/subscribe` subscriptions per MCP session.
pub(crate) const MAX_PER_SESSION: usize = 64;

/// One agent changed: its state, or it came or went.
#[derive(Debug, Clone)]
pub(crate) struct FleetChange {
    pub(crate) server: String,
    /// Its id, which is its session's name.
    pub(crate) agent: String,
    /// The client that spawned it (its session's owner).
    pub(crate) owner: String,
}

/// The fleet's changes, and the 2025 sessions' subscriptions to them.
#[derive(Debug)]
pub(crate) struct FleetFeed {
    changes: broadcast::Sender<FleetChange>,
    /// By MCP session and URI: what ends each.
    legacy: Mutex<HashMap<(String, String), CancellationToken>>,
}

impl Default for FleetFeed {
    fn default() -> Self {
        Self {
            changes: broadcast::Sender::new(BACKLOG),
            legacy: Mutex::default(),
        }
    }
}

/// Whether `principal` may hear of `change`: it may see the agent's session.
fn tells(principal: &Principal, change: &FleetChange) -> bool {
    can_see_session(
        principal,
        &change.server,
        SessionRef {
            name: &change.agent,
            owner: Some(&change.owner),
        },
    )
}

/// What a subscription hears next.
pub(crate) enum Heard {
    /// This resource (as the subscriber wrote it) changed.
    Updated(String),
    /// It fell behind: this resource, like every one it follows, may have changed.
    Missed(String),
    /// The feed is closed.
    Closed,
}

/// A subscription's view of the feed.
pub(crate) struct Listener {
    changes: broadcast::Receiver<FleetChange>,
    /// Resources still to be told after the feed fell behind.
    missed: Vec<String>,
}

impl Listener {
    /// The next change `principal` may hear of on one of `followed`. Cancel-safe.
    pub(crate) async fn next(&mut self, principal: &Principal, followed: &[Followed]) -> Heard {
        if let Some(uri) = self.missed.pop() {
            return Heard::Missed(uri);
        }
        loop {
            match self.changes.recv().await {
                Ok(change) => {
                    let uri = agents_uri(&change.server);
                    let hit = followed.iter().find(|f| f.uri == uri);
                    if let Some(hit) = hit
                        && tells(principal, &change)
                    {
                        return Heard::Updated(hit.asked.clone());
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.missed = followed.iter().map(|f| f.asked.clone()).collect();
                    if let Some(uri) = self.missed.pop() {
                        return Heard::Missed(uri);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return Heard::Closed,
            }
        }
    }
}

impl FleetFeed {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), CancellationToken>> {
        self.legacy.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the subscribers that agent `agent` of `owner` on `server` changed.
    pub(crate) fn changed(&self, server: &str, agent: &str, owner: &str) {
        // No subscriber: nothing to tell.
        let _ = self.changes.send(FleetChange {
            server: server.to_owned(),
            agent: agent.to_owned(),
            owner: owner.to_owned(),
        });
    }

    /// A new view of the feed, from now on.
    pub(crate) fn listen(&self) -> Listener {
        Listener {
            changes: self.changes.subscribe(),
            missed: Vec::new(),
        }
    }

    /// Subscribes MCP session `session` to `uri` (a fleet resource), telling `peer` until it
    /// unsubscribes, the session ends or `stop` fires. Subscribing again is a no-op; false
    /// when the session holds [`MAX_PER_SESSION`] already.
    pub(crate) fn subscribe_session(
        &self,
        session: &str,
        uri: Followed,
        principal: Principal,
        peer: Peer<RoleServer>,
        stop: CancellationToken,
    ) -> bool {
        let key = (session.to_owned(), uri.asked.clone());
        let mut legacy = self.lock();
        legacy.retain(|_, token| !token.is_cancelled());
        if legacy.contains_key(&key) {
            return true;
        }
        if legacy.keys().filter(|(s, _)| s == session).count() >= MAX_PER_SESSION {
            return false;
        }
        legacy.insert(key, stop.clone());
        let mut listener = self.listen();
        tokio::spawn(async move {
            let followed = [uri];
            loop {
                let heard = tokio::select! {
                    () = stop.cancelled() => return,
                    heard = listener.next(&principal, &followed) => heard,
                };
                let uri = match heard {
                    Heard::Updated(uri) | Heard::Missed(uri) => uri,
                    Heard::Closed => return,
                };
                let sent = peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await;
                // The session is gone: so is its subscription.
                if sent.is_err() {
                    stop.cancel();
                    return;
                }
            }
        });
        true
    }

    /// Ends MCP session `session`'s subscription to `uri`, if it has one.
    pub(crate) fn unsubscribe_session(&self, session: &str, uri: &str) {
        if let Some(stop) = self.lock().remove(&(session.to_owned(), uri.to_owned())) {
            stop.cancel();
        }
    }
}
