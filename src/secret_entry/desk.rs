//! The secret requests waiting for a human: one-time links, each good until it is used or
//! expires.
//!
//! A link's token is 256 random bits; the desk keeps only its SHA-256, so nothing in the
//! gateway's memory or answers can be turned back into a working link once it was handed out.
//! Looking at a request (the form page) does not spend it; [`SecretDesk::take`] does, once.
//! Whoever waits for the delivery (a call that offered the link by URL elicitation) hears of it
//! through the receiver [`SecretDesk::open`] returns; a call that offered it in an
//! `InputRequiredResult` and ends before the client answers leaves that receiver
//! [parked](SecretDesk::park) for the retry that carries the answer.
//!
//! A request whose link reached no client's user is [held for the
//! approvers](SecretDesk::hand_to_approvers): they see it listed and are given a fresh link on
//! asking ([`SecretDesk::issue`]), never for a request made under their own identity.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

/// Most requests one client may have open at once.
pub(crate) const MAX_OPEN_PER_CLIENT: usize = 16;

/// What a new request asks for.
#[derive(Debug, Clone)]
pub struct NewRequest<T> {
    /// The client (`sub`) that asked.
    pub client: String,
    /// What the human is asked for, in the client's words.
    pub label: String,
    /// Where the secret goes, as shown to the human (`build:%3`).
    pub place: String,
    pub ttl: Duration,
    /// Where and how the secret is typed.
    pub destination: T,
}

/// A request as the human's page shows it.
#[derive(Debug, Clone)]
pub struct OpenRequest<T> {
    pub id: String,
    pub client: String,
    pub label: String,
    pub place: String,
    pub expires_at: SystemTime,
    pub destination: T,
}

/// A link handed out for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub id: String,
    /// The one-time token the link carries.
    pub token: String,
}

/// The client already has [`MAX_OPEN_PER_CLIENT`] requests open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_OPEN_PER_CLIENT} secret requests are already open for this client")]
pub struct TooManyOpen;

/// Told to whoever waits on a request when its secret was typed (a request that expires or
/// is revoked drops its sender instead).
pub(crate) type Delivered = oneshot::Sender<()>;

struct Pending<T> {
    request: OpenRequest<T>,
    deadline: Instant,
    waiter: Option<Delivered>,
    /// Its link reached no client's user: the approvers may take it.
    for_approvers: bool,
}

/// A request held for the approvers, as they see it listed: what it is for, never its link.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HeldRequest {
    pub id: String,
    /// The client (token subject) that asked.
    pub sub: String,
    pub label: String,
    /// Where the secret goes (`build:%3`).
    pub place: String,
    pub expires_in_secs: u64,
}

/// Why no link was issued for a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    #[error("no secret request {0} is waiting for an approver (typed, expired or withdrawn)")]
    NotFound(String),
    #[error("secret request {0} was made under your own identity; another approver must take it")]
    OwnRequest(String),
}

/// A call's wait for a delivery, kept between the rounds of a multi-round call.
struct Parked {
    client: String,
    place: String,
    deadline: Instant,
    delivered: oneshot::Receiver<()>,
}

/// A parked wait, taken back by the round that goes on with it.
#[derive(Debug)]
pub struct Unparked {
    /// Where the secret goes (`build:%3`).
    pub place: String,
    /// How long the request has left.
    pub left: Duration,
    /// Told when the secret was typed (closed unanswered when the request ends otherwise).
    pub delivered: oneshot::Receiver<()>,
}

struct Inner<T> {
    by_token: HashMap<[u8; 32], Pending<T>>,
    parked: HashMap<String, Parked>,
    next_id: u64,
    counts: SecretCounts,
}

/// What became of secret requests since the gateway started (for metrics): counts only, never
/// what a request was for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SecretCounts {
    /// Links handed out.
    pub requested: u64,
    /// Secrets typed into their pane.
    pub typed: u64,
    /// Attempts refused because the pane would show the secret or send it astray, or was gone.
    pub refused: u64,
    /// Requests open now.
    pub open: u64,
}

/// The open requests; cheap to clone.
pub struct SecretDesk<T> {
    inner: Arc<Mutex<Inner<T>>>,
}

impl<T> Clone for SecretDesk<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> Default for SecretDesk<T> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                by_token: HashMap::new(),
                parked: HashMap::new(),
                next_id: 1,
                counts: SecretCounts::default(),
            })),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl<T: Clone> SecretDesk<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        // The map stays consistent at every await-free step, so a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a request: its link, and a receiver told when the secret was typed (closed
    /// unanswered when the request expires or is revoked).
    pub fn open(&self, new: NewRequest<T>) -> Result<(Link, oneshot::Receiver<()>), TooManyOpen> {
        let mut inner = self.lock();
        let now = Instant::now();
        inner.by_token.retain(|_, p| p.deadline > now);
        let open = inner
            .by_token
            .values()
            .filter(|p| p.request.client == new.client)
            .count();
        if open >= MAX_OPEN_PER_CLIENT {
            return Err(TooManyOpen);
        }
        let id = format!("s-{}", inner.next_id);
        inner.next_id += 1;
        inner.counts.requested += 1;
        let token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        let (sender, receiver) = oneshot::channel();
        let request = OpenRequest {
            id: id.clone(),
            client: new.client,
            label: new.label,
            place: new.place,
            expires_at: SystemTime::now() + new.ttl,
            destination: new.destination,
        };
        inner.by_token.insert(
            digest(&token),
            Pending {
                request,
                deadline: now + new.ttl,
                waiter: Some(sender),
                for_approvers: false,
            },
        );
        Ok((Link { id, token }, receiver))
    }

    /// The open request `token` belongs to, without spending it.
    pub fn find(&self, token: &str) -> Option<OpenRequest<T>> {
        let inner = self.lock();
        let pending = inner.by_token.get(&digest(token))?;
        (pending.deadline > Instant::now()).then(|| pending.request.clone())
    }

    /// Spends `token`: its request, and the sender to tell its waiter of the delivery. `None`
    /// for a token that is unknown, used or expired.
    pub fn take(&self, token: &str) -> Option<(OpenRequest<T>, Option<Delivered>)> {
        let mut inner = self.lock();
        let pending = inner.by_token.remove(&digest(token))?;
        (pending.deadline > Instant::now()).then_some((pending.request, pending.waiter))
    }

    /// Withdraws request `id` (its waiter gave up); its link stops working.
    pub fn revoke(&self, id: &str) {
        let mut inner = self.lock();
        inner.by_token.retain(|_, p| p.request.id != id);
        inner.parked.remove(id);
    }

    /// Holds request `id` for the approvers: its link reached no client's user.
    pub fn hand_to_approvers(&self, id: &str) {
        let mut inner = self.lock();
        for pending in inner.by_token.values_mut() {
            if pending.request.id == id {
                pending.for_approvers = true;
            }
        }
    }

    /// The open requests held for the approvers, soonest to expire first.
    pub fn held(&self) -> Vec<HeldRequest> {
        let now = Instant::now();
        let inner = self.lock();
        let mut held: Vec<(Instant, HeldRequest)> = inner
            .by_token
            .values()
            .filter(|p| p.for_approvers && p.deadline > now)
            .map(|p| {
                let request = &p.request;
                let left = p.deadline.saturating_duration_since(now);
                let held = HeldRequest {
                    id: request.id.clone(),
                    sub: request.client.clone(),
                    label: request.label.clone(),
                    place: request.place.clone(),
                    expires_in_secs: left.as_secs(),
                };
                (p.deadline, held)
            })
            .collect();
        held.sort_by_key(|(deadline, _)| *deadline);
        held.into_iter().map(|(_, held)| held).collect()
    }

    /// A fresh link to request `id` for approver `by`, and how long it has left. The desk kept
    /// only the old token's digest, so the old link stops working; it had reached nobody.
    pub fn issue(&self, id: &str, by: &str) -> Result<(Link, Duration), IssueError> {
        let mut inner = self.lock();
        let now = Instant::now();
        let key = inner
            .by_token
            .iter()
            .find(|(_, p)| p.request.id == id && p.for_approvers && p.deadline > now)
            .map(|(key, p)| (*key, p.request.client == by));
        let key = match key {
            None => return Err(IssueError::NotFound(id.to_owned())),
            Some((_, true)) => return Err(IssueError::OwnRequest(id.to_owned())),
            Some((key, false)) => key,
        };
        let Some(pending) = inner.by_token.remove(&key) else {
            return Err(IssueError::NotFound(id.to_owned()));
        };
        let token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        let left = pending.deadline.saturating_duration_since(now);
        inner.by_token.insert(digest(&token), pending);
        let link = Link {
            id: id.to_owned(),
            token,
        };
        Ok((link, left))
    }

    /// Keeps the wait for request `id`'s delivery until the retry of the call that made it
    /// takes it back, or `ttl` passes.
    pub fn park(&self, id: &str, ttl: Duration, delivered: oneshot::Receiver<()>) {
        let mut inner = self.lock();
        let now = Instant::now();
        inner.parked.retain(|_, p| p.deadline > now);
        let Some(request) = inner
            .by_token
            .values()
            .map(|p| &p.request)
            .find(|r| r.id == id)
        else {
            // Gone already (expired or withdrawn): its retry finds nothing to wait for.
            return;
        };
        let parked = Parked {
            client: request.client.clone(),
            place: request.place.clone(),
            deadline: now + ttl,
            delivered,
        };
        inner.parked.insert(id.to_owned(), parked);
    }

    /// Takes back the wait parked for request `id`, if `client` parked it and it has not
    /// expired.
    pub fn unpark(&self, id: &str, client: &str) -> Option<Unparked> {
        let mut inner = self.lock();
        let now = Instant::now();
        let mine = inner
            .parked
            .get(id)
            .is_some_and(|p| p.client == client && p.deadline > now);
        if !mine {
            return None;
        }
        let parked = inner.parked.remove(id)?;
        Some(Unparked {
            place: parked.place,
            left: parked.deadline.saturating_duration_since(now),
            delivered: parked.delivered,
        })
    }

    /// Counts a secret typed.
    pub fn count_typed(&self) {
        self.lock().counts.typed += 1;
    }

    /// Counts an attempt to type that was refused.
    pub fn count_refused(&self) {
        self.lock().counts.refused += 1;
    }

    /// What became of requests so far, and how many are open now.
    pub fn counts(&self) -> SecretCounts {
        let now = Instant::now();
        let inner = self.lock();
        let open = inner.by_token.values().filter(|p| p.deadline > now).count();
        SecretCounts {
            open: open as u64,
            ..inner.counts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(client: &str, ttl_ms: u64) -> NewRequest<u32> {
        NewRequest {
            client: client.into(),
            label: "sudo password".into(),
            place: "work:%1".into(),
            ttl: Duration::from_millis(ttl_ms),
            destination: 7,
        }
    }

    #[test]
    fn a_link_is_shown_any_number_of_times_and_spent_once() {
        let desk = SecretDesk::default();
        let (link, _waiter) = desk.open(request("a", 60_000)).unwrap();
        assert_eq!(link.token.len(), 43, "256 bits, base64url");
        assert_eq!(desk.find(&link.token).unwrap().label, "sudo password");
        assert!(desk.find(&link.token).is_some());
        let (taken, waiter) = desk.take(&link.token).unwrap();
        assert_eq!(
            (taken.id.as_str(), taken.destination),
            (link.id.as_str(), 7)
        );
        assert!(waiter.is_some());
        assert!(desk.find(&link.token).is_none());
        assert!(desk.take(&link.token).is_none());
    }

    #[test]
    fn tokens_are_unguessable_and_only_the_exact_one_works() {
        let desk = SecretDesk::default();
        let (a, _) = desk.open(request("a", 60_000)).unwrap();
        let (b, _) = desk.open(request("a", 60_000)).unwrap();
        assert_ne!(a.token, b.token);
        assert_ne!(a.id, b.id);
        assert!(desk.find(&a.token[..42]).is_none());
        assert!(desk.find(&a.id).is_none());
        assert!(desk.find("").is_none());
    }

    #[test]
    fn an_expired_link_is_gone() {
        let desk = SecretDesk::default();
        let (link, waiter) = desk.open(request("a", 1)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(desk.find(&link.token).is_none());
        assert!(desk.take(&link.token).is_none());
        assert_eq!(desk.counts().open, 0);
        drop(waiter);
    }

    #[test]
    fn a_revoked_link_stops_working_and_its_waiter_hears_nothing() {
        let desk = SecretDesk::default();
        let (link, mut waiter) = desk.open(request("a", 60_000)).unwrap();
        desk.revoke(&link.id);
        assert!(desk.take(&link.token).is_none());
        assert!(waiter.try_recv().is_err());
    }

    #[test]
    fn only_a_held_request_is_listed_and_another_client_gets_its_new_link() {
        let desk = SecretDesk::default();
        let (offered, _) = desk.open(request("agent", 60_000)).unwrap();
        let (held, _) = desk.open(request("agent", 60_000)).unwrap();
        desk.hand_to_approvers(&held.id);
        let listed = desk.held();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id.as_str(), listed[0].sub.as_str()),
            (held.id.as_str(), "agent")
        );
        assert!(!format!("{listed:?}").contains(&held.token));

        assert_eq!(
            desk.issue(&offered.id, "alice").unwrap_err(),
            IssueError::NotFound(offered.id.clone())
        );
        assert_eq!(
            desk.issue(&held.id, "agent").unwrap_err(),
            IssueError::OwnRequest(held.id.clone())
        );
        let (link, left) = desk.issue(&held.id, "alice").unwrap();
        assert_eq!(link.id, held.id);
        assert!(left > Duration::from_secs(50));
        assert!(
            desk.find(&held.token).is_none(),
            "the old link stops working"
        );
        assert!(desk.take(&link.token).is_some());
        assert!(desk.held().is_empty());
    }

    #[test]
    fn a_parked_wait_goes_back_to_its_client_only_and_hears_the_delivery() {
        let desk = SecretDesk::default();
        let (link, delivered) = desk.open(request("agent", 60_000)).unwrap();
        desk.park(&link.id, Duration::from_secs(60), delivered);
        assert!(desk.unpark(&link.id, "other").is_none());
        let (_, waiter) = desk.take(&link.token).unwrap();
        waiter.unwrap().send(()).unwrap();
        let mut unparked = desk.unpark(&link.id, "agent").unwrap();
        assert!(unparked.left > Duration::from_secs(50));
        assert_eq!(unparked.place, "work:%1");
        assert_eq!(unparked.delivered.try_recv(), Ok(()));
        assert!(desk.unpark(&link.id, "agent").is_none(), "taken once");
    }

    #[test]
    fn one_client_cannot_fill_the_desk_for_others() {
        let desk = SecretDesk::default();
        let mut kept = Vec::new();
        for _ in 0..MAX_OPEN_PER_CLIENT {
            kept.push(desk.open(request("greedy", 60_000)).unwrap());
        }
        assert_eq!(
            desk.open(request("greedy", 60_000)).unwrap_err(),
            TooManyOpen
        );
        assert!(desk.open(request("other", 60_000)).is_ok());
    }
}
