//! The embedded default's signing secret, kept in the state directory.
//!
//! Started without a configured HS256 secret, `muxgate serve` signs its tokens with a random
//! secret. Kept only in memory, every token it printed would die with the process; so it is
//! written once to `<state dir>/local.secret` (`0600`, in the `0700` state directory, which no
//! workspace can see) and read again at every start, and `muxgate token` without a configured
//! secret mints with it. Deleting the file revokes every token signed with it.

use std::io;
use std::path::{Path, PathBuf};

use super::mint::generate_secret;

/// The file's name in the state directory.
pub(crate) const FILE: &str = "local.secret";

/// The secret file in `state_dir`.
pub(crate) fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The secret in `state_dir`, if one was written.
pub(crate) fn load(state_dir: &Path) -> io::Result<Option<String>> {
    match std::fs::read_to_string(path(state_dir)) {
        Ok(text) if !text.trim().is_empty() => Ok(Some(text.trim().to_owned())),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is empty", path(state_dir).display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The secret in `state_dir`, generated and written first if there is none (the directory is
/// created if missing: [`crate::state::create_state_dir`]).
pub(crate) fn load_or_create(state_dir: &Path) -> io::Result<String> {
    if let Some(secret) = load(state_dir)? {
        return Ok(secret);
    }
    crate::state::create_state_dir(state_dir)?;
    let secret = generate_secret();
    crate::state::write_private(&path(state_dir), format!("{secret}\n").as_bytes())?;
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_secret_is_written_once_owner_only_and_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert_eq!(load(&state).unwrap(), None);
        let first = load_or_create(&state).unwrap();
        assert!(first.len() >= 43, "{first}");
        assert_eq!(load_or_create(&state).unwrap(), first);
        assert_eq!(load(&state).unwrap().as_deref(), Some(first.as_str()));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path(&state)), 0o600);
        assert_eq!(mode(&state), 0o700);
        std::fs::write(path(&state), "\n").unwrap();
        assert!(load(&state).is_err(), "an empty file is not a secret");
    }
}
