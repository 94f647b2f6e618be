//! One-time sign-in links and the sessions they open, in memory (a restart signs everyone
//! out).
//!
//! A link's token and a session's token are 256 random bits each, kept only as SHA-256
//! digests. Looking at a link (`GET`) does not spend it, so link previews and chat unfurls
//! cannot burn it; the sign-in `POST` does, and opens a session for the approver the link was
//! made for. A link made with an approver's token lasts no longer than the token, nor does the
//! session it opens. Both tables are bounded: expired entries go as new ones come, and past the
//! bound the entry that would expire soonest makes room; one approver's links are bounded apart
//! ([`MAX_LINKS_PER_APPROVER`]), so links made for one (a notification for every held call)
//! never push out another's.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::InboxConfig;

/// Most sign-in links not yet spent.
pub(crate) const MAX_LINKS: usize = 1024;
/// Most sign-in links of one approver not yet spent.
pub(crate) const MAX_LINKS_PER_APPROVER: usize = 64;
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

/// Who a token signs in as, until when; for a link, the latest its session may last.
#[derive(Debug, Clone)]
struct Grant {
    sub: String,
    until: Instant,
    cap: Option<Instant>,
}

#[derive(Debug, Default)]
struct Grants(HashMap<TokenDigest, Grant>);

impl Grants {
    fn insert(&mut self, digest: TokenDigest, grant: Grant, now: Instant, max: usize) {
        self.0.retain(|_, g| g.until > now);
        if self.0.len() >= max {
            self.drop_soonest(|_| true);
        }
        self.0.insert(digest, grant);
    }

    /// Drops the entry that would expire soonest among those `which` picks.
    fn drop_soonest(&mut self, which: impl Fn(&Grant) -> bool) {
        if let Some(soonest) = self
            .0
            .iter()
            .filter(|(_, g)| which(g))
            .min_by_key(|(_, g)| g.until)
            .map(|(d, _)| *d)
        {
            self.0.remove(&soonest);
        }
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

    /// A new sign-in link's token for approver `sub`, good for at most `left` (the life left
    /// to the token it was made with, if any): the link and the session it opens end by then.
    pub(crate) fn issue_link(&self, sub: &str, left: Option<Duration>) -> Issued {
        self.issue_link_at(sub, left, Instant::now())
    }

    fn issue_link_at(&self, sub: &str, left: Option<Duration>, now: Instant) -> Issued {
        let token = new_token();
        let cap = left.map(|left| now + left);
        let until = cap.map_or(now + self.link_ttl, |cap| cap.min(now + self.link_ttl));
        let grant = Grant {
            sub: sub.to_owned(),
            until,
            cap,
        };
        let mut tables = self.lock();
        let links = &mut tables.links;
        links.0.retain(|_, g| g.until > now);
        if links.0.values().filter(|g| g.sub == sub).count() >= MAX_LINKS_PER_APPROVER {
            links.drop_soonest(|g| g.sub == sub);
        }
        links.insert(digest(&token), grant, now, MAX_LINKS);
        Issued {
            token,
            ttl: until.saturating_duration_since(now),
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
        let until = grant.cap.map_or(now + self.session_ttl, |cap| {
            cap.min(now + self.session_ttl)
        });
        let opened = Grant {
            sub: grant.sub.clone(),
            until,
            cap: None,
        };
        tables
            .sessions
            .insert(digest(&session), opened, now, MAX_SESSIONS);
        Some(SignedIn {
            sub: grant.sub,
            session: Issued {
                token: session,
                ttl: until.saturating_duration_since(now),
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
        let link = s.issue_link_at("alice", None, now);
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
        let late = s.issue_link_at("alice", None, now);
        assert_eq!(
            s.sign_in_at(&late.token, now + Duration::from_secs(60)),
            None
        );
        let link = s.issue_link_at("alice", None, now);
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
        let first = s.issue_link_at("first", None, now);
        for n in 1..MAX_LINKS {
            s.issue_link_at(
                &format!("a{n}"),
                None,
                now + Duration::from_millis(n as u64),
            );
        }
        assert_eq!(s.lock().links.0.len(), MAX_LINKS);
        let last = s.issue_link_at("last", None, now + Duration::from_secs(1));
        assert_eq!(s.lock().links.0.len(), MAX_LINKS);
        assert_eq!(s.link_holder(&first.token), None);
        assert_eq!(s.link_holder(&last.token).as_deref(), Some("last"));
        // Expired entries go first.
        let later = now + Duration::from_secs(120);
        s.issue_link_at("fresh", None, later);
        assert_eq!(s.lock().links.0.len(), 1);
    }

    #[test]
    fn a_link_and_its_session_end_with_the_token_that_made_it() {
        let s = sign_ins();
        let now = Instant::now();
        let short = s.issue_link_at("alice", Some(Duration::from_secs(30)), now);
        assert_eq!(short.ttl, Duration::from_secs(30));
        let signed = s.sign_in_at(&short.token, now).unwrap();
        assert_eq!(signed.session.ttl, Duration::from_secs(30));
        let token = &signed.session.token;
        assert_eq!(s.session_at(token, now + Duration::from_secs(30)), None);
        // A long-lived token: the configured lives.
        let long = s.issue_link_at("alice", Some(Duration::from_secs(86_400)), now);
        assert_eq!(long.ttl, Duration::from_secs(60));
    }

    #[test]
    fn one_approvers_links_never_push_out_anothers() {
        let s = sign_ins();
        let now = Instant::now();
        let bobs = s.issue_link_at("bob", None, now);
        let first = s.issue_link_at("alice", None, now);
        for n in 1..=MAX_LINKS_PER_APPROVER {
            s.issue_link_at("alice", None, now + Duration::from_millis(n as u64));
        }
        assert_eq!(
            s.link_holder(&first.token),
            None,
            "alice's oldest made room"
        );
        assert_eq!(s.link_holder(&bobs.token).as_deref(), Some("bob"));
    }

    #[test]
    fn tokens_are_long_and_url_safe() {
        let s = sign_ins();
        let a = s.issue_link("alice", None).token;
        let b = s.issue_link("alice", None).token;
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
