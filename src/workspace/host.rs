//! What this host offers the sandboxes: the binaries they run, the system directories they
//! show, the gateway's secrets they must hide, and whether `bwrap` works here at all.
//!
//! [`Host::probe`] runs once when the gateway starts in workspace mode (and in `muxgate
//! doctor`): it resolves `bwrap`, `tmux` and `prlimit` to absolute paths, builds the
//! [`HostView`], and starts one throwaway sandbox to prove that user, PID and mount
//! namespaces can be created here. Every failure says what is missing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::sandbox::{
    HostView, MountSizes, Network, SandboxSpec, WorkspaceDirs, workspace_sandbox,
};

/// Host directories every workspace sees read-only, when they exist.
const SYSTEM_DIRS: &[&str] = &["/usr", "/etc"];

/// Top-level names that are symbolic links into `/usr` on a merged-/usr system, or real
/// directories (then bound read-only) on an older one.
const SYSTEM_LINKS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// How long the probe sandbox may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why workspaces cannot run on this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error(
        "`{0}` not found: workspaces need bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; set workspaces.bwrap if it lives elsewhere)"
    )]
    MissingBwrap(String),
    #[error("`{0}` not found on PATH (workspaces run it inside their sandbox)")]
    MissingBinary(String),
    #[error(
        "the gateway's secret {} would be visible in every workspace: it lies in {}, which workspaces are shown (workspaces.expose, or /etc and /usr) and no mask can hide it there; move it, or show less",
        secret.display(),
        root.display()
    )]
    SecretShown { secret: PathBuf, root: PathBuf },
    #[error(
        "bubblewrap cannot create a sandbox here: {0}. It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) and, in a container, a seccomp and AppArmor profile that allow them (see README: Workspaces in a container)"
    )]
    SandboxRefused(String),
}

/// The host, as the sandboxes use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Host {
    pub spec: SandboxSpec,
    pub view: HostView,
}

impl Host {
    /// Resolves the binaries, builds the view (hiding `secrets`), and proves a sandbox starts.
    pub(crate) async fn probe(
        bwrap: &Path,
        tmux_bin: &Path,
        network: Network,
        expose: &[PathBuf],
        secrets: &[PathBuf],
    ) -> Result<Self, HostError> {
        let host = Self::resolve(bwrap, tmux_bin, network, expose, secrets).await?;
        host.try_sandbox().await?;
        Ok(host)
    }

    /// Resolves the binaries and builds the view (hiding `secrets`), without starting a
    /// sandbox: for a client of a workspace whose sandbox already runs.
    pub(crate) async fn resolve(
        bwrap: &Path,
        tmux_bin: &Path,
        network: Network,
        expose: &[PathBuf],
        secrets: &[PathBuf],
    ) -> Result<Self, HostError> {
        let bwrap =
            which(bwrap).ok_or_else(|| HostError::MissingBwrap(bwrap.display().to_string()))?;
        let tmux_bin = which(tmux_bin)
            .ok_or_else(|| HostError::MissingBinary(tmux_bin.display().to_string()))?;
        let prlimit = which(Path::new("prlimit"))
            .ok_or_else(|| HostError::MissingBinary("prlimit".into()))?;
        let disable_userns = supports_disable_userns(&bwrap).await;
        let view = host_view(expose, secrets, &tmux_bin)?;
        Ok(Self {
            spec: SandboxSpec {
                bwrap,
                disable_userns,
                tmux_bin,
                prlimit,
                network,
            },
            view,
        })
    }

    /// Starts `true` in a workspace's sandbox, with throwaway directories.
    async fn try_sandbox(&self) -> Result<(), HostError> {
        let scratch = Scratch::create("muxgate-sandbox-probe")
            .map_err(|e| HostError::SandboxRefused(e.to_string()))?;
        let dirs = WorkspaceDirs {
            home: scratch.path().join("home"),
            run: scratch.path().join("run"),
        };
        for dir in [&dirs.home, &dirs.run] {
            std::fs::create_dir(dir).map_err(|e| HostError::SandboxRefused(e.to_string()))?;
        }
        let mut command = tokio::process::Command::new(&self.spec.bwrap);
        command
            .args(workspace_sandbox(
                &self.spec,
                &self.view,
                &dirs,
                MountSizes { tmp: 0, shm: 0 },
            ))
            .arg("true")
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = tokio::time::timeout(PROBE_TIMEOUT, command.output())
            .await
            .map_err(|_| HostError::SandboxRefused("a test sandbox did not finish".into()))?
            .map_err(|e| HostError::SandboxRefused(e.to_string()))?;
        if output.status.success() {
            Ok(())
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(HostError::SandboxRefused(
                stderr.trim().chars().take(300).collect(),
            ))
        }
    }
}

/// A private directory for a throwaway check, removed when dropped.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub(super) fn create(prefix: &str) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Self(dir))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `bwrap --help` lists `--disable-userns`.
async fn supports_disable_userns(bwrap: &Path) -> bool {
    let help = tokio::process::Command::new(bwrap)
        .arg("--help")
        .env_clear()
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(PROBE_TIMEOUT, help).await {
        Ok(Ok(output)) => String::from_utf8_lossy(&output.stdout).contains("--disable-userns"),
        _ => false,
    }
}

/// The read-only view: system directories and links, `expose`, the tmux binary when it lives
/// elsewhere, and `secrets` masked where the view would show them (a secret's directory is
/// masked whole unless it is one of the view's roots, since keys tend to sit together).
///
/// A secret is judged by where it really is: made absolute against the working directory
/// (`--config muxgate.toml` run from a shown directory) and with the symbolic links of its path
/// resolved. One the view would show and no mask can hide (a shown directory inside it, or a
/// file not yet made in a shown directory) refuses the start.
fn host_view(
    expose: &[PathBuf],
    secrets: &[PathBuf],
    tmux_bin: &Path,
) -> Result<HostView, HostError> {
    let mut view = HostView::default();
    for dir in SYSTEM_DIRS.iter().map(Path::new) {
        if dir.is_dir() {
            view.read_only.push(dir.to_owned());
        }
    }
    for dir in expose {
        if dir.is_dir() && !view.read_only.contains(dir) && !view.exposed.contains(dir) {
            view.exposed.push(dir.to_owned());
        }
    }
    for link in SYSTEM_LINKS.iter().map(Path::new) {
        match std::fs::symlink_metadata(link) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(link) {
                    view.symlinks.push((link.to_owned(), target));
                }
            }
            Ok(meta) if meta.is_dir() => view.read_only.push(link.to_owned()),
            _ => {}
        }
    }
    let shown: Vec<PathBuf> = view
        .read_only
        .iter()
        .chain(&view.exposed)
        .cloned()
        .collect();
    if !shown.iter().any(|dir| tmux_bin.starts_with(dir)) {
        view.extra_binary = Some(tmux_bin.to_owned());
    }
    for secret in secrets.iter().map(|path| resolve(path)) {
        let shown_error = |root: &Path| HostError::SecretShown {
            secret: secret.clone(),
            root: root.to_owned(),
        };
        if let Some(root) = shown.iter().find(|dir| dir.starts_with(&secret)) {
            return Err(shown_error(root));
        }
        let Some(root) = shown.iter().find(|dir| secret.starts_with(dir)) else {
            continue;
        };
        let parent = secret.parent().filter(|p| p != root && p.starts_with(root));
        match parent {
            Some(dir) if dir.is_dir() => push_unique(&mut view.masked_dirs, dir),
            _ if secret.is_dir() => push_unique(&mut view.masked_dirs, &secret),
            _ if secret.is_file() => push_unique(&mut view.masked_files, &secret),
            _ => return Err(shown_error(root)),
        }
    }
    Ok(view)
}

/// `path` as a sandbox would reach it: absolute (against the working directory), with the
/// symbolic links and `..` of its existing part resolved and the rest appended.
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |path, name| path.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

fn push_unique(list: &mut Vec<PathBuf>, path: &Path) {
    if !list.iter().any(|p| p == path) {
        list.push(path.to_owned());
    }
}

/// `program` as an absolute path: itself if it has a slash, else the first match on `PATH`.
pub(crate) fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        let path = std::fs::canonicalize(program).ok()?;
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| std::fs::canonicalize(found).ok())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_with_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("etc");
        let keys = root.join("muxgate");
        std::fs::create_dir_all(&keys).unwrap();
        std::fs::write(keys.join("secret"), "k").unwrap();
        std::fs::write(root.join("loose.toml"), "k").unwrap();
        let outside = base.join("elsewhere.key");
        std::fs::write(&outside, "k").unwrap();
        let view = host_view(
            std::slice::from_ref(&root),
            &[
                keys.join("secret"),
                root.join("loose.toml"),
                outside.clone(),
            ],
            Path::new("/usr/bin/tmux"),
        )
        .unwrap();
        assert!(view.exposed.contains(&root));
        assert!(!view.read_only.contains(&root));
        assert_eq!(view.masked_dirs, vec![keys]);
        assert_eq!(view.masked_files, vec![root.join("loose.toml")]);
        assert!(view.extra_binary.is_none());
    }

    #[test]
    fn a_secret_is_judged_where_it_really_is() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let shown = base.join("shown");
        std::fs::create_dir(&shown).unwrap();
        std::fs::write(shown.join("muxgate.toml"), "k").unwrap();
        // Reached through a link from outside, and with `..` in the way.
        std::os::unix::fs::symlink(&shown, base.join("link")).unwrap();
        let view = host_view(
            std::slice::from_ref(&shown),
            &[base.join("link/../link/muxgate.toml")],
            Path::new("/usr/bin/tmux"),
        )
        .unwrap();
        assert_eq!(view.masked_files, vec![shown.join("muxgate.toml")]);
        // A relative path is the working directory's (the package root, for unit tests).
        let manifest = std::fs::canonicalize("Cargo.toml").unwrap();
        assert_eq!(resolve(Path::new("./src/../Cargo.toml")), manifest);
        assert_eq!(
            resolve(Path::new("no-such-dir/x.key")),
            std::fs::canonicalize(".")
                .unwrap()
                .join("no-such-dir/x.key")
        );
    }

    #[test]
    fn a_secret_no_mask_can_hide_refuses_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let shown = base.join("shown");
        std::fs::create_dir_all(shown.join("data")).unwrap();
        for secret in [
            shown.clone(),             // the shown directory is the secret
            base.clone(),              // ... or inside it
            shown.join("audit.jsonl"), // a file not made yet, right in it
        ] {
            let refused = host_view(
                std::slice::from_ref(&shown),
                std::slice::from_ref(&secret),
                Path::new("/usr/bin/tmux"),
            );
            assert!(
                matches!(&refused, Err(HostError::SecretShown { .. })),
                "{secret:?}: {refused:?}"
            );
        }
    }

    #[test]
    fn a_tmux_outside_the_view_is_bound_alone() {
        let view = host_view(&[], &[], Path::new("/opt/tmux-3.7/bin/tmux")).unwrap();
        assert_eq!(
            view.extra_binary,
            Some(PathBuf::from("/opt/tmux-3.7/bin/tmux"))
        );
    }

    #[test]
    fn binaries_resolve_on_path_or_as_given() {
        let sh = which(Path::new("sh")).expect("sh on PATH");
        assert!(sh.is_absolute());
        assert!(which(Path::new("/nonexistent/tmux")).is_none());
        assert!(which(Path::new("no-such-program-muxgate")).is_none());
    }
}
