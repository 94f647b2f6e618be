//! `[workspaces]`: whether tenants get workspaces, how they are sandboxed, and their limits.

use std::path::PathBuf;

use serde::Deserialize;

use super::sandbox::{MountSizes, Network, OWN_MOUNTS, ProcessLimits};

/// `[workspaces]` (keys documented in `config/default.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspacesConfig {
    /// Workspace mode is on: each tenant's panes run in a sandboxed tmux server of its own.
    pub enabled: bool,
    /// The bubblewrap binary.
    pub bwrap: PathBuf,
    /// The network a workspace sees: none (a loopback of its own) or the host's.
    pub network: Network,
    /// Host directories shown read-only inside every workspace, besides `/usr` and `/etc`.
    #[serde(default)]
    pub expose: Vec<PathBuf>,
    /// Name patterns of the team workspaces a token's `workspace` claim may name.
    #[serde(default)]
    pub teams: Vec<String>,
    /// First uid of workspaces when the gateway runs as root.
    pub uid_base: u32,
    /// Most workspaces this gateway creates (one uid each).
    pub max_workspaces: u32,
    /// How long a workspace's sandbox may take to start.
    pub start_timeout_ms: u64,
    /// What each workspace may use: sessions, processes, memory, open files, home size.
    pub limits: WorkspaceLimits,
    /// Where workspaces run: [`LOCAL_HOST`] and `[hosts.<name>]` names.
    pub hosts: Vec<String>,
}

/// The entry of `workspaces.hosts` naming this machine.
pub(crate) const LOCAL_HOST: &str = "local";

/// `[workspaces.limits]`: per workspace (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceLimits {
    /// Sessions a workspace may have when `create_session` is called.
    pub sessions: u32,
    /// Processes and threads at once.
    pub processes: u64,
    /// Memory of the whole workspace (its processes, `/tmp` and `/dev/shm`), in bytes: a
    /// memory cgroup of its own, where the gateway can make one.
    pub memory_bytes: u64,
    /// Address space per process, in bytes.
    pub memory_per_process_bytes: u64,
    /// Open files per process.
    pub open_files: u64,
    /// Size of the home's file system, in bytes, reserved on disk when the workspace is
    /// created (where the gateway can mount one: as root).
    pub home_bytes: u64,
    /// Size of `/tmp`, in bytes (a memory file system).
    pub tmp_bytes: u64,
    /// Size of `/dev/shm`, in bytes (a memory file system).
    pub shm_bytes: u64,
}

impl WorkspaceLimits {
    /// The limits the sandbox enforces itself.
    pub fn process_limits(&self) -> ProcessLimits {
        ProcessLimits {
            processes: self.processes,
            memory_per_process: self.memory_per_process_bytes,
            open_files: self.open_files,
        }
    }

    /// The sizes of the sandbox's memory file systems.
    pub fn mount_sizes(&self) -> MountSizes {
        MountSizes {
            tmp: self.tmp_bytes,
            shm: self.shm_bytes,
        }
    }
}

impl WorkspacesConfig {
    /// Whether workspaces may run on this machine.
    pub fn runs_locally(&self) -> bool {
        self.hosts.iter().any(|host| host == LOCAL_HOST)
    }

    /// `start_timeout_ms` as a duration.
    pub fn start_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.start_timeout_ms)
    }

    /// Rules serde cannot express: `(key, message)` of the first that fails.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.bwrap.as_os_str().is_empty() {
            return Err(("bwrap", "must not be empty".into()));
        }
        if let Some(path) = self.expose.iter().find(|p| !p.is_absolute()) {
            return Err((
                "expose",
                format!("`{}` must be an absolute path", path.display()),
            ));
        }
        if let Some((path, own)) = self.expose.iter().find_map(|path| {
            OWN_MOUNTS
                .iter()
                .filter(|own| **own != "/tmp")
                .find(|own| path.starts_with(own) || std::path::Path::new(own).starts_with(path))
                .map(|own| (path, own))
        }) {
            return Err((
                "expose",
                format!(
                    "`{}` would be hidden by (or hide) the workspace's own `{own}`: show a \
                     directory elsewhere",
                    path.display()
                ),
            ));
        }
        if self.expose.iter().any(|path| path.as_os_str() == "/tmp") {
            return Err((
                "expose",
                "`/tmp` would replace the workspace's own `/tmp`: show a directory below it".into(),
            ));
        }
        if let Err((pattern, error)) = crate::auth::pattern::compile_patterns(&self.teams) {
            return Err(("teams", format!("`{pattern}`: {error}")));
        }
        if self.uid_base == 0 {
            return Err(("uid_base", "must not be 0 (root)".into()));
        }
        if self.max_workspaces == 0 {
            return Err(("max_workspaces", "must be positive".into()));
        }
        if self.start_timeout_ms == 0 {
            return Err(("start_timeout_ms", "must be positive".into()));
        }
        if self.hosts.is_empty() {
            return Err((
                "hosts",
                "must name at least one place: \"local\" or a host".into(),
            ));
        }
        if let Some((i, host)) = self
            .hosts
            .iter()
            .enumerate()
            .find(|(i, host)| self.hosts[..*i].contains(host))
        {
            return Err(("hosts", format!("`{host}` is named twice (entry {i})")));
        }
        Ok(())
    }
}
