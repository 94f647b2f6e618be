//! One-time sign-in links and the sessions they open, in memory (a restart signs everyone
//! out).
//!
//! A link's token and a session's token are 256 random bits each, kept only as SHA-256
//! digests. Looking at a link (`GET`) does not spend it, so link previews and chat unfurls
//! cannot burn it; the sign-in `POST` does, and opens a session for the approver the link was
//! made for. Both tables are bounded: expired entries go as new ones come, and past the bound
//! the entry that would expire soonest makes room.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::InboxConfig;

/// Most sign-in links not yet spent.
pub(crate) const MAX_LINKS: usize = 1024;
/// Most sessions open at once.
pub(crate) const MAX_SESSIONS: usize = 1024;

type TokenDigest = [u8; 32];

/// The links and sessions; shared behind an `Arc`.
#[derive(Debug)]
pub(crate) struct SignIns {
    link_ttl: Duration,
    session_ttl: Duration,
    tables: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    links: Grants,
    sessions: Grants,
}

/// Who a token signs in as, until when.
#[derive(Debug, Clone)]
struct Grant {
    sub: String,
    until: Instant,
}

#[derive(Debug, Default)]
struct Grants(HashMap<TokenDigest, Grant>);

impl Grants {
    fn insert(&mut self, digest: TokenDigest, grant: Grant, now: Instant, max: usize) {
        self.0.retain(|_, g| g.until > now);
        if self.0.len() >= max
            && let Some(soonest) = self.0.iter().min_by_key(|(_, g)| g.until).map(|(d, _)| *d)
        {
            self.0.remove(&soonest);
        }
        self.0.insert(digest, grant);
    }

    fn find(&self, digest: &TokenDigest, now: Instant) -> Option<&Grant> {
        self.0.get(digest).filter(|g| g.until > now)
    }
}

/// A token handed out, and how long it is good for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) token: String,
    pub(crate) ttl: Duration,
}

/// A session opened by a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedIn {
    pub(crate) sub: String,
    pub(crate) session: Issued,
}

impl SignIns {
    pub(crate) fn new(config: &InboxConfig) -> Self {
        Self {
            link_ttl: Duration::from_secs(config.link_ttl_secs),
            session_ttl: Duration::from_secs(config.session_ttl_secs),
            tables: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        // Every change is one insert or remove: the tables stay whole across a panic.
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new sign-in link's token for approver `sub`.
    pub(crate) fn issue_link(&self, sub: &str) -> Issued {
        self.issue_link_at(sub, Instant::now())
    }

    fn issue_link_at(&self, sub: &str, now: Instant) -> Issued {
        let token = new_token();
        let grant = Grant {
            sub: sub.to_owned(),
            until: now + self.link_ttl,
        };
        self.lock()
            .links
            .insert(digest(&token), grant, now, MAX_LINKS);
        Issued {
            token,
            ttl: self.link_ttl,
        }
    }

    /// The approver an unspent link signs in, without spending it.
    pub(crate) fn link_holder(&self, token: &str) -> Option<String> {
        let now = Instant::now();
        self.lock()
            .links
            .find(&digest(token), now)
            .map(|g| g.sub.clone())
    }

    /// Spends the link `token`: a session for its approver, or `None` for a link spent,
    /// expired or never made.
    pub(crate) fn sign_in(&self, token: &str) -> Option<SignedIn> {
        self.sign_in_at(token, Instant::now())
    }

    fn sign_in_at(&self, token: &str, now: Instant) -> Option<SignedIn> {
        let mut tables = self.lock();
        let grant = tables.links.0.remove(&digest(token))?;
        if grant.until <= now {
            return None;
        }
        let session = new_token();
        let opened = Grant {
            sub: grant.sub.clone(),
            until: now + self.session_ttl,
        };
        tables
            .sessions
            .insert(digest(&session), opened, now, MAX_SESSIONS);
        Some(SignedIn {
            sub: grant.sub,
            session: Issued {
                token: session,
                ttl: self.session_ttl,
            },
        })
    }

    /// The approver of the open session `token`.
    pub(crate) fn session(&self, token: &str) -> Option<String> {
        self.session_at(token, Instant::now())
    }

    fn session_at(&self, token: &str, now: Instant) -> Option<String> {
        self.lock()
            .sessions
            .find(&digest(token), now)
            .map(|g| g.sub.clone())
    }

    /// Ends the session `token` (signing out).
    pub(crate) fn sign_out(&self, token: &str) {
        self.lock().sessions.0.remove(&digest(token));
    }
}

fn new_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_ins() -> SignIns {
        SignIns::new(&InboxConfig {
            link_ttl_secs: 60,
            session_ttl_secs: 600,
        })
    }

    #[test]
    fn a_link_signs_its_approver_in_once() {
        let s = sign_ins();
        let now = Instant::now();
        let link = s.issue_link_at("alice", now);
        assert_eq!(link.ttl, Duration::from_secs(60));
        assert_eq!(s.link_holder(&link.token).as_deref(), Some("alice"));
        let signed = s.sign_in_at(&link.token, now).unwrap();
        assert_eq!(signed.sub, "alice");
        assert_eq!(signed.session.ttl, Duration::from_secs(600));
        assert_ne!(signed.session.token, link.token);
        assert_eq!(s.sign_in_at(&link.token, now), None, "spent");
        assert_eq!(s.link_holder(&link.token), None);
        assert_eq!(
            s.session_at(&signed.session.token, now).as_deref(),
            Some("alice")
        );
        assert_eq!(s.session_at(&link.token, now), None, "a link is no session");
        s.sign_out(&signed.session.token);
        assert_eq!(s.session_at(&signed.session.token, now), None);
    }

    #[test]
    fn links_and_sessions_expire() {
        let s = sign_ins();
        let now = Instant::now();
        let late = s.issue_link_at("alice", now);
        assert_eq!(
            s.sign_in_at(&late.token, now + Duration::from_secs(60)),
            None
        );
        let link = s.issue_link_at("alice", now);
        let signed = s.sign_in_at(&link.token, now).unwrap();
        let token = &signed.session.token;
        assert!(
            s.session_at(token, now + Duration::from_secs(599))
                .is_some()
        );
        assert_eq!(s.session_at(token, now + Duration::from_secs(600)), None);
        assert_eq!(s.session_at("", now), None);
        assert_eq!(s.session_at("not a token", now), None);
    }

    #[test]
    fn the_tables_are_bounded_and_the_soonest_to_expire_makes_room() {
        let s = sign_ins();
        let now = Instant::now();
        let first = s.issue_link_at("first", now);
        for n in 1..MAX_LINKS {
            s.issue_link_at(&format!("a{n}"), now + Duration::from_millis(n as u64));
        }
        assert_eq!(s.lock().links.0.len(), MAX_LINKS);
        let last = s.issue_link_at("last", now + Duration::from_secs(1));
        assert_eq!(s.lock().links.0.len(), MAX_LINKS);
        assert_eq!(s.link_holder(&first.token), None);
        assert_eq!(s.link_holder(&last.token).as_deref(), Some("last"));
        // Expired entries go first.
        let later = now + Duration::from_secs(120);
        s.issue_link_at("fresh", later);
        assert_eq!(s.lock().links.0.len(), 1);
    }

    #[test]
    fn tokens_are_long_and_url_safe() {
        let s = sign_ins();
        let a = s.issue_link("alice").token;
        let b = s.issue_link("alice").token;
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
