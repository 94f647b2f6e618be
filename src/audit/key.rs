//! The audit key: the secret behind the chain's links, the head file's seal and the digests of
//! what clients type.
//!
//! The key file holds at least 32 bytes as hex (the gateway generates 32 random bytes on first
//! start, or take `openssl rand -hex 32`). Two keys are derived from it, one for links and seals
//! and one for digests, so that a digest the log shows (of a value a client chose) is never a
//! MAC over the input a link is computed from. Whoever holds the key can forge the log: it
//! lives outside every pane's reach (`0600`, in the state directory or `audit.key_file`), and
//! `muxgate audit verify` needs a copy.

use std::io;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of a generated key, and the fewest a key file may hold.
pub(crate) const KEY_BYTES: usize = 32;

/// Hex digits of a digest's `mac`.
pub(crate) const DIGEST_HEX: usize = 12;

/// Why the key could not be read or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("audit key {path}: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file does not hold a usable key.
    #[error(
        "audit key {path}: must hold at least {KEY_BYTES} bytes as hex (e.g. `openssl rand -hex {KEY_BYTES}`)"
    )]
    Invalid {
        /// The key file.
        path: PathBuf,
    },
}

/// The derived audit keys. Its `Debug` shows nothing of them.
#[derive(Clone)]
pub struct AuditKey {
    chain: [u8; 32],
    digest: [u8; 32],
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

fn hmac(key: &[u8]) -> HmacSha256 {
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC pads or hashes keys of any length; `new_from_slice` only fails for MACs that
        // need a fixed key size.
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    }
}

impl AuditKey {
    /// Derives the keys from the secret a key file holds.
    pub fn from_secret(secret: &[u8]) -> Self {
        let derive = |label: &[u8]| -> [u8; 32] {
            let mut mac = hmac(secret);
            mac.update(label);
            mac.finalize().into_bytes().into()
        };
        Self {
            chain: derive(b"muxgate audit chain v1"),
            digest: derive(b"muxgate audit digest v1"),
        }
    }

    /// Reads a key file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source,
        })?;
        match hex::decode(text.trim()) {
            Ok(secret) if secret.len() >= KEY_BYTES => Ok(Self::from_secret(&secret)),
            _ => Err(KeyError::Invalid {
                path: path.to_owned(),
            }),
        }
    }

    /// Generates a key and writes it to `path` (`0600`, replaced atomically).
    pub fn create(path: &Path) -> Result<Self, KeyError> {
        let mut secret = [0u8; KEY_BYTES];
        rand::rng().fill_bytes(&mut secret);
        crate::state::write_private(path, format!("{}\n", hex::encode(secret)).as_bytes())
            .map_err(|source| KeyError::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok(Self::from_secret(&secret))
    }

    fn chain_mac(&self, prev: &str, body: &[u8]) -> HmacSha256 {
        let mut mac = hmac(&self.chain);
        mac.update(prev.as_bytes());
        mac.update(b"\n");
        mac.update(body);
        mac
    }

    /// The link of a line: HMAC-SHA256 over the previous link (or a domain label), a newline
    /// and the line's body, as lowercase hex.
    pub fn link(&self, prev: &str, body: &[u8]) -> String {
        hex::encode(self.chain_mac(prev, body).finalize().into_bytes())
    }

    /// Whether `link` (hex) is the link of `body` after `prev`, compared in constant time.
    pub fn check_link(&self, prev: &str, body: &[u8], link: &str) -> bool {
        match hex::decode(link) {
            Ok(tag) => self.chain_mac(prev, body).verify_slice(&tag).is_ok(),
            Err(_) => false,
        }
    }

    /// The first [`DIGEST_HEX`] hex digits of HMAC-SHA256(digest key, `value`): enough to match
    /// a record against a value one knows, useless for guessing one without the key.
    pub fn digest_mac(&self, value: &[u8]) -> String {
        let mut mac = hmac(&self.digest);
        mac.update(value);
        let mut hex = hex::encode(mac.finalize().into_bytes());
        hex.truncate(DIGEST_HEX);
        hex
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.key");
        let created = AuditKey::create(&path).unwrap();
        let loaded = AuditKey::load(&path).unwrap();
        assert_eq!(created.link("p", b"x"), loaded.link("p", b"x"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 2 * KEY_BYTES);
        // A second key is another key.
        let other = AuditKey::create(&dir.path().join("other.key")).unwrap();
        assert_ne!(other.link("p", b"x"), created.link("p", b"x"));
    }

    #[test]
    fn short_or_garbled_key_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.key");
        for text in ["", "abcd", &"zz".repeat(32), &"ab".repeat(31)] {
            std::fs::write(&path, text).unwrap();
            let err = AuditKey::load(&path).unwrap_err();
            assert!(err.to_string().contains("at least 32 bytes"), "{err}");
        }
        std::fs::write(&path, format!("  {}\n", "ab".repeat(40))).unwrap();
        assert!(AuditKey::load(&path).is_ok());
        let missing = AuditKey::load(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(missing, KeyError::Io { .. }), "{missing}");
    }

    #[test]
    fn links_depend_on_key_prev_and_body() {
        let key = AuditKey::from_secret(&[1; 32]);
        let link = key.link("prev", b"{\"seq\":1}");
        assert_eq!(link.len(), 64);
        assert!(key.check_link("prev", b"{\"seq\":1}", &link));
        assert!(!key.check_link("prev", b"{\"seq\":2}", &link));
        assert!(!key.check_link("other", b"{\"seq\":1}", &link));
        assert!(!key.check_link("prev", b"{\"seq\":1}", "not hex"));
        let other = AuditKey::from_secret(&[2; 32]);
        assert!(!other.check_link("prev", b"{\"seq\":1}", &link));
    }

    #[test]
    fn digests_are_keyed() {
        let one = AuditKey::from_secret(&[1; 32]);
        let two = AuditKey::from_secret(&[2; 32]);
        let pin = b"1234";
        assert_eq!(one.digest_mac(pin), one.digest_mac(pin));
        assert_eq!(one.digest_mac(pin).len(), DIGEST_HEX);
        assert_ne!(one.digest_mac(pin), two.digest_mac(pin));
        // Not the unsalted SHA-256 an offline dictionary would hold.
        use sha2::Digest as _;
        let plain = hex::encode(Sha256::digest(pin));
        assert_ne!(one.digest_mac(pin), plain[..DIGEST_HEX]);
    }
}
