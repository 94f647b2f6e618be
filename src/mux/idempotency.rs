//! Idempotency keys: a call that carries one is done at most once per client and key within
//! [`KEPT_FOR`]; a retry gets the first call's answer (marked as a replay) and types nothing.
//!
//! A key is claimed before the call acts. While the first call runs, a retry is told so
//! (it must not act beside it); when the first call fails before acting, its claim is dropped
//! and a retry may act. At most [`CAPACITY`] keys are kept: past it, the oldest finished one
//! goes, and when every kept key belongs to a running call, a new one is refused.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How long a finished call's answer is kept for its retries.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(600);
/// Most keys kept, all clients together.
pub(crate) const CAPACITY: usize = 4096;
/// Longest key, in bytes.
pub(crate) const MAX_KEY_LEN: usize = 128;

#[derive(Debug)]
enum Entry<T> {
    Running,
    Done(Instant, T),
}

/// What a claim of a key found.
#[derive(Debug)]
pub(crate) enum Claim<'a, T> {
    /// The key is new: act, then [`ClaimGuard::finish`] with the answer.
    New(ClaimGuard<'a, T>),
    /// A call with this key finished: its answer.
    Replay(T),
    /// A call with this key is running now.
    Running,
    /// No room: every kept key belongs to a running call.
    Full,
}

/// The claim of a key by the call that acts; dropped unfinished, it frees the key.
#[derive(Debug)]
pub(crate) struct ClaimGuard<'a, T> {
    keys: &'a IdempotencyKeys<T>,
    key: Option<(String, String)>,
}

impl<T> ClaimGuard<'_, T> {
    /// Keeps `answer` for the key's retries.
    pub(crate) fn finish(mut self, answer: T) {
        if let Some(key) = self.key.take() {
            self.keys
                .lock()
                .insert(key, Entry::Done(Instant::now(), answer));
        }
    }
}

impl<T> Drop for ClaimGuard<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.keys.lock().remove(&key);
        }
    }
}

/// The keys of every client, with the answers (`T`) of the calls that finished.
#[derive(Debug)]
pub(crate) struct IdempotencyKeys<T> {
    entries: Mutex<Entries<T>>,
}

type Entries<T> = HashMap<(String, String), Entry<T>>;

impl<T> Default for IdempotencyKeys<T> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> IdempotencyKeys<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<T>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T: Clone> IdempotencyKeys<T> {
    /// Claims `key` for client `sub`'s call.
    pub(crate) fn claim(&self, sub: &str, key: &str) -> Claim<'_, T> {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, entry| match entry {
            Entry::Running => true,
            Entry::Done(at, _) => now.duration_since(*at) < KEPT_FOR,
        });
        let id = (sub.to_owned(), key.to_owned());
        match entries.get(&id) {
            Some(Entry::Running) => return Claim::Running,
            Some(Entry::Done(_, answer)) => return Claim::Replay(answer.clone()),
            None => {}
        }
        if entries.len() >= CAPACITY {
            let oldest = entries
                .iter()
                .filter_map(|(id, entry)| match entry {
                    Entry::Done(at, _) => Some((*at, id.clone())),
                    Entry::Running => None,
                })
                .min_by_key(|(at, _)| *at);
            match oldest {
                Some((_, id)) => entries.remove(&id),
                None => return Claim::Full,
            };
        }
        entries.insert(id.clone(), Entry::Running);
        Claim::New(ClaimGuard {
            keys: self,
            key: Some(id),
        })
    }
}

/// Whether `key` may be an idempotency key: 1 to [`MAX_KEY_LEN`] printable ASCII characters.
pub(crate) fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        Err(format!(
            "idempotency_key must be 1 to {MAX_KEY_LEN} printable ASCII characters without spaces"
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_key_acts_once_and_its_retries_get_the_answer() {
        let keys = IdempotencyKeys::<Value>::default();
        let Claim::New(guard) = keys.claim("a", "k1") else {
            panic!("a new key")
        };
        assert!(matches!(keys.claim("a", "k1"), Claim::Running));
        // Another client's key of the same name is its own.
        assert!(matches!(keys.claim("b", "k1"), Claim::New(_)));
        guard.finish(json!({"outcome": "answered"}));
        match keys.claim("a", "k1") {
            Claim::Replay(answer) => assert_eq!(answer["outcome"], "answered"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_call_that_fails_before_acting_frees_its_key() {
        let keys = IdempotencyKeys::<Value>::default();
        let Claim::New(guard) = keys.claim("a", "k1") else {
            panic!("a new key")
        };
        drop(guard);
        assert!(matches!(keys.claim("a", "k1"), Claim::New(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_kept_for_a_while_and_the_oldest_make_room() {
        let keys = IdempotencyKeys::<Value>::default();
        if let Claim::New(guard) = keys.claim("a", "old") {
            guard.finish(json!(1));
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        for n in 1..CAPACITY {
            if let Claim::New(guard) = keys.claim("a", &format!("k{n}")) {
                guard.finish(json!(n));
            }
        }
        // Full: the oldest finished answer goes to make room.
        assert!(matches!(keys.claim("a", "new"), Claim::New(_)));
        assert!(matches!(keys.claim("a", "old"), Claim::New(_)));
        tokio::time::advance(KEPT_FOR).await;
        assert!(matches!(keys.claim("a", "k1"), Claim::New(_)));
    }

    #[test]
    fn running_calls_are_never_evicted() {
        let keys = IdempotencyKeys::<Value>::default();
        let guards: Vec<_> = (0..CAPACITY)
            .map(|n| match keys.claim("a", &format!("k{n}")) {
                Claim::New(guard) => guard,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(matches!(keys.claim("a", "one-more"), Claim::Full));
        drop(guards);
    }

    #[test]
    fn keys_are_short_and_printable() {
        assert!(check_key("retry-7f3a").is_ok());
        for bad in ["", "a b", "é", "x\n"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        assert!(check_key(&"k".repeat(MAX_KEY_LEN + 1)).is_err());
    }
}
