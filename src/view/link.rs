//! Signed, expiring view links: which pane of which server a browser may watch, and until when.
//!
//! A link's token is `base64url(payload) "." base64url(HMAC-SHA256(key, payload))`, the payload
//! being JSON `{"s": server, "p": pane, "e": expiry}` (expiry in Unix seconds). It grants
//! watching one pane and nothing else: not typing, not approving, not another pane. It travels
//! in the query string (`/view?t=…`), which the request spans never log (they log the path).
//!
//! The key is the gateway's ([`super::key`]); changing it revokes every link.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use muxgate_tmux::PaneId;

type HmacSha256 = Hmac<Sha256>;

/// Longest token accepted: the longest workspace name (256 characters of up to 4 bytes) with
/// the other fields fits, so anything longer is not one of ours and is refused before any
/// decoding.
const MAX_TOKEN_CHARS: usize = 2048;

/// The key view links are signed with.
#[derive(Clone)]
pub struct ViewKey([u8; 32]);

impl ViewKey {
    /// A key of these 32 bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A fresh random key.
    pub fn random() -> Self {
        Self(rand::random())
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length: this cannot fail for 32 bytes.
        <HmacSha256 as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!())
    }
}

impl fmt::Debug for ViewKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ViewKey(…)")
    }
}

/// What a valid link lets its holder watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewGrant {
    /// The configured tmux server's name, or `workspace` for the workspace named in
    /// [`Self::workspace`].
    #[serde(rename = "s")]
    pub server: String,
    /// The workspace whose server holds the pane, in workspace mode.
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The pid of the tmux server that held the pane when the link was made: pane numbers
    /// start again when a server restarts, and `%3` of the next one is another pane.
    #[serde(rename = "k")]
    pub server_pid: u32,
    /// Which process of the workspace's server held the pane (its sandbox's start): inside a
    /// sandbox the server's pid is always the same, and a restarted workspace numbers its
    /// panes from `%0` again. 0 for a configured server.
    #[serde(rename = "n", default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
    /// The pane, `%N`.
    #[serde(rename = "p")]
    pub pane: String,
    /// Unix seconds after which the link is refused and its stream ends.
    #[serde(rename = "e")]
    pub expires: u64,
}

impl ViewGrant {
    /// A grant of `pane` on `server` (whose tmux process is `server_pid`) for `ttl` from `now`.
    pub fn new(
        server: &str,
        pane: PaneId,
        server_pid: u32,
        now: SystemTime,
        ttl: Duration,
    ) -> Self {
        Self {
            server: server.to_owned(),
            workspace: None,
            server_pid,
            epoch: 0,
            pane: pane.to_string(),
            expires: unix_secs(now).saturating_add(ttl.as_secs()),
        }
    }

    /// The same grant, for a pane of workspace `name`'s server while the process started at
    /// `epoch` serves it.
    pub fn in_workspace(self, name: &str, epoch: u64) -> Self {
        Self {
            workspace: Some(name.to_owned()),
            epoch,
            ..self
        }
    }

    /// The pane, parsed.
    pub fn pane_id(&self) -> Option<PaneId> {
        self.pane.parse().ok()
    }

    /// How long the grant still holds at `now` (zero once expired).
    pub fn remaining(&self, now: SystemTime) -> Duration {
        Duration::from_secs(self.expires.saturating_sub(unix_secs(now)))
    }
}

/// Why a token was refused. Never shown to the viewer beyond "invalid or expired": which of
/// them it is would tell a forger how far they got.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// It is not a view token.
    #[error("the token is malformed")]
    Malformed,
    /// It was not signed with this gateway's key.
    #[error("the signature does not match")]
    BadSignature,
    /// Its time is past.
    #[error("the link has expired")]
    Expired,
}

/// The token for `grant`, signed with `key`.
pub fn sign(key: &ViewKey, grant: &ViewGrant) -> String {
    // Serialising three plain fields cannot fail.
    let payload = serde_json::to_vec(grant).unwrap_or_default();
    let mut mac = key.mac();
    mac.update(&payload);
    let tag = mac.finalize().into_bytes();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(tag)
    )
}

/// The grant `token` carries, if `key` signed it and it has not expired at `now`. The
/// signature is checked (in constant time) before the payload is parsed.
pub fn verify(key: &ViewKey, token: &str, now: SystemTime) -> Result<ViewGrant, LinkError> {
    if token.len() > MAX_TOKEN_CHARS {
        return Err(LinkError::Malformed);
    }
    let (payload, tag) = token.split_once('.').ok_or(LinkError::Malformed)?;
    let payload = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| LinkError::Malformed)?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| LinkError::Malformed)?;
    let mut mac = key.mac();
    mac.update(&payload);
    mac.verify_slice(&tag)
        .map_err(|_| LinkError::BadSignature)?;
    let grant: ViewGrant = serde_json::from_slice(&payload).map_err(|_| LinkError::Malformed)?;
    if grant.pane_id().is_none() {
        return Err(LinkError::Malformed);
    }
    if unix_secs(now) >= grant.expires {
        return Err(LinkError::Expired);
    }
    Ok(grant)
}

fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(pane: u32, now: SystemTime) -> ViewGrant {
        ViewGrant::new("work", PaneId(pane), 4242, now, Duration::from_secs(600))
    }

    #[test]
    fn a_signed_grant_verifies_until_it_expires() {
        let key = ViewKey::new([7; 32]);
        let now = SystemTime::now();
        let token = sign(&key, &grant(3, now));
        assert_eq!(verify(&key, &token, now), Ok(grant(3, now)));
        let later = now + Duration::from_secs(599);
        assert!(verify(&key, &token, later).is_ok());
        let after = now + Duration::from_secs(601);
        assert_eq!(verify(&key, &token, after), Err(LinkError::Expired));
    }

    #[test]
    fn another_key_or_an_edited_payload_is_refused() {
        let key = ViewKey::new([7; 32]);
        let now = SystemTime::now();
        let token = sign(&key, &grant(3, now));
        assert_eq!(
            verify(&ViewKey::new([8; 32]), &token, now),
            Err(LinkError::BadSignature)
        );
        // The same signature over another pane's payload.
        let (_, tag) = token.split_once('.').unwrap();
        let other = sign(&key, &grant(4, now));
        let (payload, _) = other.split_once('.').unwrap();
        assert_eq!(
            verify(&key, &format!("{payload}.{tag}"), now),
            Err(LinkError::BadSignature)
        );
    }

    #[test]
    fn garbage_is_malformed() {
        let key = ViewKey::new([7; 32]);
        let now = SystemTime::now();
        for token in ["", ".", "abc", "a.b.c", "!!!.###", &"a".repeat(5000)] {
            assert!(verify(&key, token, now).is_err(), "{token}");
        }
        // Signed, but not a pane.
        let bad = ViewGrant {
            pane: "@1".into(),
            ..grant(1, now)
        };
        assert_eq!(
            verify(&key, &sign(&key, &bad), now),
            Err(LinkError::Malformed)
        );
    }

    #[test]
    fn a_workspace_grant_names_its_workspace_and_server_process() {
        let key = ViewKey::new([7; 32]);
        let now = SystemTime::now();
        let granted = grant(3, now).in_workspace("team-a", 987_654);
        let verified = verify(&key, &sign(&key, &granted), now).unwrap();
        assert_eq!(verified.workspace.as_deref(), Some("team-a"));
        assert_eq!(verified.server_pid, 4242);
        assert_eq!(verified.epoch, 987_654);
        // A configured server's grant carries no epoch.
        let plain = verify(&key, &sign(&key, &grant(3, now)), now).unwrap();
        assert_eq!(plain.epoch, 0);
        // A link of the earlier form, without the server's process, is not accepted.
        let old = br#"{"s":"work","p":"%3","e":99999999999}"#;
        let mut mac = key.mac();
        mac.update(old);
        let token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(old),
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        );
        assert_eq!(verify(&key, &token, now), Err(LinkError::Malformed));
    }

    #[test]
    fn the_key_is_not_printed() {
        assert_eq!(format!("{:?}", ViewKey::new([7; 32])), "ViewKey(…)");
    }
}
