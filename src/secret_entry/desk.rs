//! The secret requests waiting for a human: one-time links, each good until it is used or
//! expires.
//!
//! A link's token is 256 random bits; the desk keeps only its SHA-256, so nothing in the
//! gateway's memory or answers can be turned back into a working link once it was handed out.
//! Looking at a request (the form page) does not spend it; [`SecretDesk::take`] does, once.
//! Whoever waits for the delivery (a call that offered the link by URL elicitation) hears of it
//! through the receiver [`SecretDesk::open`] returns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

/// Most requests one client may have open at once.
pub const MAX_OPEN_PER_CLIENT: usize = 16;

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
pub type Delivered = oneshot::Sender<()>;

struct Pending<T> {
    request: OpenRequest<T>,
    deadline: Instant,
    waiter: Option<Delivered>,
}

struct Inner<T> {
    by_token: HashMap<[u8; 32], Pending<T>>,
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
