//! Programs some tests need beyond tmux: present, or the test is skipped with a note saying
//! what to install, except under `CI=true`, where a missing one fails the test (CI installs
//! them all: `.ci/run`).

use std::path::{Path, PathBuf};

/// Whether `program` is on `PATH`; if not, says which Debian `package` provides it and
/// (outside CI) that `what` is skipped.
pub(crate) fn program(program: &str, package: &str, what: &str) -> bool {
    let found = on_path(program).is_some();
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{program} is required under CI (apt-get install {package})");
        }
        eprintln!("skipping {what}: {program} is not installed (apt-get install {package})");
    }
    found
}

/// Where `program` is on `PATH`, if it is.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// Whether workspace sandboxes can run here (bubblewrap is installed); see [`program`].
pub(crate) fn sandbox(what: &str) -> bool {
    program("bwrap", "bubblewrap", what)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
