//! A call that types into a pane, made at most once per idempotency key (`send_prompt`,
//! `answer_agent`): the claim before it acts, the first answer for a retry, and the refusals —
//! a call with the key still running, the key already used for another request, no room.
//!
//! The keys themselves (per client, how long, how many) are [`crate::mux::idempotency`]'s.

use std::hash::{Hash, Hasher};

use super::error::{ToolError, ToolErrorKind};
use crate::mux::idempotency::{Claim, ClaimGuard, IdempotencyKeys, check_key};

/// A finished call's answer, with the request it answered.
#[derive(Debug, Clone)]
pub(crate) struct Kept<T> {
    request: u64,
    answer: T,
}

/// The keys of one tool's calls.
pub(crate) type OnceKeys<T> = IdempotencyKeys<Kept<T>>;

/// What a call does about its key.
#[derive(Debug)]
pub(crate) enum Once<'a, T> {
    /// Act; then [`Claimed::finish`] keeps the answer (dropped unfinished: the key is freed).
    Act(Option<Claimed<'a, T>>),
    /// The same request was made with this key: its answer, nothing done again.
    Replay(T),
}

/// A key claimed by the call that acts.
#[derive(Debug)]
pub(crate) struct Claimed<'a, T> {
    guard: ClaimGuard<'a, Kept<T>>,
    request: u64,
}

impl<T> Claimed<'_, T> {
    /// Keeps `answer` for the key's retries.
    pub(crate) fn finish(self, answer: T) {
        self.guard.finish(Kept {
            request: self.request,
            answer,
        });
    }
}

/// A digest of what a request asks (its pane, its text or keys…): a key reused for another
/// request is refused, not answered with the other's answer.
pub(crate) fn request_digest(parts: impl Hash) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

/// Checks `key` as an idempotency key, before anything is done.
pub(crate) fn check(key: Option<&str>) -> Result<(), ToolError> {
    match key {
        None => Ok(()),
        Some(key) => check_key(key).map_err(|why| {
            ToolError::invalid_arguments(why, "pass a short unique key, e.g. a UUID")
        }),
    }
}

/// Claims client `sub`'s `key` (if any) for `request` ([`request_digest`]).
pub(crate) fn claim<'a, T: Clone>(
    keys: &'a OnceKeys<T>,
    sub: &str,
    key: Option<&str>,
    request: u64,
) -> Result<Once<'a, T>, ToolError> {
    let Some(key) = key else {
        return Ok(Once::Act(None));
    };
    check(Some(key))?;
    match keys.claim(sub, key) {
        Claim::New(guard) => Ok(Once::Act(Some(Claimed { guard, request }))),
        Claim::Replay(kept) if kept.request == request => Ok(Once::Replay(kept.answer)),
        Claim::Replay(_) => Err(ToolError::new(
            ToolErrorKind::Conflict,
            "this idempotency_key was used for another request in the last 10 minutes",
            "use a new key for a new request; a retry passes the same arguments",
        )),
        Claim::Running => Err(ToolError::new(
            ToolErrorKind::Conflict,
            "a call with this idempotency_key is still running",
            "wait for it; a retry after it ends gets its answer",
        )),
        Claim::Full => Err(ToolError::new(
            ToolErrorKind::Busy,
            "too many calls with idempotency keys are running",
            "retry in a few seconds",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_gets_the_first_answer_and_another_request_is_refused() {
        let keys = OnceKeys::<u32>::default();
        let first = request_digest(("%1", "deploy"));
        let Ok(Once::Act(Some(claimed))) = claim(&keys, "a", Some("k1"), first) else {
            panic!("a new key acts");
        };
        assert!(matches!(
            claim(&keys, "a", Some("k1"), first),
            Err(e) if e.kind == ToolErrorKind::Conflict
        ));
        claimed.finish(7);
        assert!(matches!(
            claim(&keys, "a", Some("k1"), first),
            Ok(Once::Replay(7))
        ));
        let other = request_digest(("%2", "deploy"));
        assert!(matches!(
            claim(&keys, "a", Some("k1"), other),
            Err(e) if e.kind == ToolErrorKind::Conflict
        ));
        // Another client's key of the same name is its own.
        assert!(matches!(
            claim(&keys, "b", Some("k1"), other),
            Ok(Once::Act(Some(_)))
        ));
        assert!(matches!(
            claim(&keys, "a", None, first),
            Ok(Once::Act(None))
        ));
        assert!(matches!(
            claim(&keys, "a", Some("has space"), first),
            Err(e) if e.kind == ToolErrorKind::InvalidArguments
        ));
    }

    #[test]
    fn a_call_that_did_nothing_frees_its_key() {
        let keys = OnceKeys::<u32>::default();
        let request = request_digest("x");
        let Ok(Once::Act(Some(claimed))) = claim(&keys, "a", Some("k"), request) else {
            panic!("a new key acts");
        };
        drop(claimed);
        assert!(matches!(
            claim(&keys, "a", Some("k"), request),
            Ok(Once::Act(Some(_)))
        ));
    }
}
