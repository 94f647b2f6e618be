//! The view-link key, kept in the state directory so that links survive a restart and
//! `muxgate view-link` can sign with the key the running gateway checks.
//!
//! `<state dir>/view.key` (`0600`) holds 32 random bytes as base64url, written at the first
//! start. Deleting it (and restarting) revokes every link. Without a state directory the
//! gateway keeps a random key in memory: links die with the process and only the tool can mint.

use std::io;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::link::ViewKey;

/// The file's name in the state directory.
pub const FILE: &str = "view.key";

/// The key file in `state_dir`.
pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The key in `state_dir`, if one was written.
pub fn load(state_dir: &Path) -> io::Result<Option<ViewKey>> {
    let path = path(state_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bytes: [u8; 32] = URL_SAFE_NO_PAD
        .decode(text.trim())
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} does not hold a view key; delete it to make a new one",
                    path.display()
                ),
            )
        })?;
    Ok(Some(ViewKey::new(bytes)))
}

/// The key in `state_dir`, generated and written first if there is none.
pub fn load_or_create(state_dir: &Path) -> io::Result<ViewKey> {
    if let Some(key) = load(state_dir)? {
        return Ok(key);
    }
    let bytes: [u8; 32] = rand::random();
    let text = format!("{}\n", URL_SAFE_NO_PAD.encode(bytes));
    crate::state::write_private(&path(state_dir), text.as_bytes())?;
    Ok(ViewKey::new(bytes))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::view::link::{ViewGrant, sign, verify};
    use muxgate_tmux::PaneId;

    #[test]
    fn the_key_is_written_once_owner_only_and_read_again() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        let first = load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = load_or_create(dir.path()).unwrap();
        let now = SystemTime::now();
        let grant = ViewGrant::new("work", PaneId(1), 4242, now, Duration::from_secs(60));
        assert!(verify(&again, &sign(&first, &grant), now).is_ok());
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path()), "short").unwrap();
        let error = load(dir.path()).unwrap_err();
        assert!(error.to_string().contains(FILE), "{error}");
    }
}
