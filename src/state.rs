//! The state directory: where the gateway keeps what must outlive a restart (which client
//! owns which session, the workspaces), readable only by the gateway's user.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[state]`: where the gateway keeps what must outlive a restart.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// Default: `$XDG_STATE_HOME/muxgate`, else `$HOME/.local/state/muxgate`.
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

impl StateConfig {
    /// The state directory: the configured one, else the default from `env` (a variable
    /// lookup, typically `std::env::var_os`).
    pub fn resolve(
        &self,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<PathBuf, String> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let absolute = |var: &str| env(var).map(PathBuf::from).filter(|p| p.is_absolute());
        if let Some(state) = absolute("XDG_STATE_HOME") {
            return Ok(state.join("muxgate"));
        }
        if let Some(home) = absolute("HOME") {
            return Ok(home.join(".local/state/muxgate"));
        }
        Err("state.dir is not set and neither XDG_STATE_HOME nor HOME is: set state.dir".into())
    }
}

/// Creates the state directory `dir` (`0700`) if missing, and the directories above it that are
/// missing too. Those are made `0700` as well, except when the gateway runs as root: they are
/// then `0711`, so that workspaces, which run as uids of their own, can pass through them to
/// their own directories (never list them).
pub(crate) fn create_state_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // SAFETY: geteuid(2) cannot fail.
    let parents = if unsafe { libc::geteuid() } == 0 {
        0o711
    } else {
        0o700
    };
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    for (i, path) in missing.iter().rev().enumerate() {
        let mode = if i + 1 == missing.len() {
            0o700
        } else {
            parents
        };
        match std::fs::DirBuilder::new().mode(mode).create(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The JSON document saved in `file`, or the default one when there is no file yet.
pub(crate) fn read_json_or_default<T: serde::de::DeserializeOwned + Default>(
    file: &Path,
) -> io::Result<T> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| io::Error::other(format!("{}: {e}", file.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(e),
    }
}

/// Writes a file only the gateway's user can read (`0600`), replacing it atomically: a reader
/// (or a crash) never sees half of it.
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let temp = path.with_extension("tmp");
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(contents)?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_state_directory_is_private_and_its_new_parents_passable_as_root() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/b/muxgate");
        create_state_dir(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        // SAFETY: geteuid(2) cannot fail.
        let parents = if unsafe { libc::geteuid() } == 0 {
            0o711
        } else {
            0o700
        };
        assert_eq!(mode(&base.path().join("a")), parents);
        assert_eq!(mode(&base.path().join("a/b")), parents);
        create_state_dir(&dir).unwrap();
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    #[test]
    fn the_directory_defaults_to_the_xdg_state_home() {
        let unset = StateConfig { dir: None };
        assert_eq!(
            unset.resolve(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Ok(PathBuf::from("/s/muxgate"))
        );
        assert_eq!(
            unset.resolve(env(&[("XDG_STATE_HOME", "relative"), ("HOME", "/h")])),
            Ok(PathBuf::from("/h/.local/state/muxgate"))
        );
        assert!(unset.resolve(env(&[])).is_err());
        let set = StateConfig {
            dir: Some("/var/lib/muxgate".into()),
        };
        assert_eq!(set.resolve(env(&[])), Ok(PathBuf::from("/var/lib/muxgate")));
    }

    #[test]
    fn private_files_are_0600_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.json");
        write_private(&file, b"one").unwrap();
        write_private(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!dir.path().join("f.tmp").exists());
    }
}
