//! Workspaces: one sandboxed tmux server per tenant, so that per-client authentication is
//! isolation too.
//!
//! Every client with `mux:write` runs code (typing into a shell is running code). On a shared
//! tmux server that code runs as the server's user and reaches every session, the server's
//! socket and whatever that user can read; access rules separate only clients that cannot type.
//! In workspace mode each tenant — a token's `sub`, or a team named by a `workspace` claim or
//! `[clients.<sub>] workspace` — gets a tmux server of its own, started on its first call
//! inside a bubblewrap sandbox, seen by the tenant as the server `workspace`.
//!
//! - [`name`]: workspace names and their directory names (pure);
//! - [`sandbox`]: the sandboxes as `bwrap` command lines (pure);
//! - [`host`]: the binaries, the host view with the gateway's secrets masked, and the proof
//!   that sandboxes can start here;
//! - [`layout`]: the state directory: each workspace's directories, owners and record;
//! - [`disk`]: a home of a fixed size (an ext4 image, loop-mounted);
//! - [`cgroup`]: the whole workspace's memory, bounded (a memory cgroup);
//! - [`launch`]: a sandbox as a process (start, recognise after a restart, kill);
//! - [`admin`]: `muxgate workspace list|stop|delete`;
//! - [`remote`]: a workspace placed on another host (`workspaces.hosts`), started and reached
//!   over the host's link; [`on_host`]: the host's end of it (`muxgate host-workspace`);
//! - [`config`]: the `[workspaces]` section.
//!
//! [`Workspaces`] holds the running ones: each gets its own [`TmuxServer`] (its own worker, so
//! a busy or stuck workspace delays no other), whose every tmux client process runs in a jail
//! of its own as the workspace's user (a tmux server can make its clients read and write
//! files: see [`muxgate_tmux::client::spawn`]).

pub mod admin;
pub mod cgroup;
pub(crate) mod config;
pub mod disk;
pub(crate) mod host;
pub(crate) mod launch;
pub(crate) mod layout;
pub(crate) mod name;
pub mod on_host;
pub(crate) mod remote;
pub(crate) mod sandbox;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use cgroup::{Membership, MemoryCgroups};
pub use config::{WorkspaceLimits, WorkspacesConfig};
use disk::{Home, HomeDisks};
use host::{Host, HostError};
use launch::{LaunchError, Plan};
use layout::{Layout, OpenError};
pub use name::WorkspaceName;
pub use remote::WorkspaceHost;

use muxgate_tmux::typed::server::TmuxServerOps;
use muxgate_tmux::{
    Caller, ClientLaunch, ClientWrapper, ConnectError, EngineError, EngineSettings, RunAs,
    TmuxEndpoint, TmuxServer, TmuxSocket,
};

/// The server name a client sees for its workspace.
pub const SERVER_NAME: &str = "workspace";

/// Why a workspace is not available.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The host lacks what sandboxes need.
    #[error("workspaces cannot run on this host: {0}")]
    Host(#[from] HostError),
    /// As many workspaces as `max_workspaces` exist already.
    #[error("this gateway already has {0} workspaces (workspaces.max_workspaces)")]
    TooMany(u32),
    /// Its files could not be read or written.
    #[error("the workspace's files: {0}")]
    Io(#[from] std::io::Error),
    /// Its sandbox could not start.
    #[error("the workspace's sandbox: {0}")]
    Launch(#[from] LaunchError),
    /// Workspace users cannot reach the state directory.
    #[error(
        "workspaces run as uids of their own and cannot pass through {} to the state directory {}: choose a state directory every user may pass through (state.dir = \"/var/lib/muxgate\", say), or allow it with `chmod o+x {}`",
        dir.display(),
        state.display(),
        dir.display()
    )]
    Unreachable {
        /// The directory they cannot pass through.
        dir: PathBuf,
        /// The state directory.
        state: PathBuf,
    },
    /// Its host could not start it.
    #[error("the workspace's sandbox: {0}")]
    Remote(String),
    /// Its host cannot be reached now.
    #[error(transparent)]
    LinkDown(muxgate_tmux::LinkDown),
    /// It runs on a place `workspaces.hosts` no longer lists.
    #[error(
        "workspace {name} runs on {host}, which workspaces.hosts no longer lists: list it again, or delete the workspace (muxgate workspace delete) to place it anew"
    )]
    Placed {
        /// The workspace.
        name: String,
        /// Where it runs: a host's name, or `local`.
        host: String,
    },
    /// Homes of a fixed size cannot be made here.
    #[error(
        "workspace homes cannot be given their size here: {0}. Set workspaces.limits.home_bytes = 0 to run homes as plain directories (a tenant can then fill the disk the state directory is on)"
    )]
    Disks(String),
}

impl From<OpenError> for WorkspaceError {
    fn from(error: OpenError) -> Self {
        match error {
            OpenError::TooMany(max) => Self::TooMany(max),
            OpenError::Io(e) => Self::Io(e),
        }
    }
}

/// Counters of workspace starts, read by the metrics exporter.
#[derive(Debug, Default)]
pub struct WorkspaceStats {
    /// Sandboxes started by this gateway.
    pub started: AtomicU64,
    /// Sandboxes found running (started before a gateway restart).
    pub found: AtomicU64,
    /// Starts that failed.
    pub failed: AtomicU64,
    /// Total time spent starting sandboxes, in microseconds.
    pub start_micros: AtomicU64,
}

/// The workspaces of this gateway.
#[derive(Clone)]
pub struct Workspaces {
    inner: Arc<Inner>,
}

struct Inner {
    /// This machine's sandboxes, when workspaces run here (`workspaces.hosts` has `local`).
    host: Option<Host>,
    /// The hosts that run workspaces, by name.
    remote: BTreeMap<String, WorkspaceHost>,
    layout: Layout,
    /// Sized homes, when the gateway can mount them.
    disks: Option<HomeDisks>,
    /// Memory cgroups, when the gateway can make them.
    cgroups: Option<MemoryCgroups>,
    config: WorkspacesConfig,
    settings: Arc<EngineSettings>,
    shutdown: CancellationToken,
    slots: Mutex<HashMap<WorkspaceName, Arc<Slot>>>,
    /// Held while a workspace's directories are created (uids are allocated under it).
    opening: tokio::sync::Mutex<()>,
    stats: WorkspaceStats,
}

/// One workspace this gateway has served since it started.
struct Slot {
    dir: PathBuf,
    run_as: Option<RunAs>,
    server: TmuxServer,
    /// Ends the server's worker and output tasks when the slot is replaced.
    retire: CancellationToken,
    /// Held while the sandbox is checked and, if needed, started.
    starting: tokio::sync::Mutex<()>,
    /// Whether this gateway has seen its sandbox running (started it or found it).
    seen: AtomicBool,
    /// The host it runs on; `None`: this machine.
    remote: Option<WorkspaceHost>,
}

/// How much longer than a local start a start on a host may take: the request's own round
/// trips and the host's check that sandboxes start there.
const REMOTE_START_MARGIN: Duration = Duration::from_secs(10);

impl Slot {
    /// Whether its sandbox runs, as far as this gateway can tell without asking a host: a
    /// remote one while its server is connected.
    fn is_running(&self) -> bool {
        match &self.remote {
            Some(_) => self
                .server
                .worker()
                .stats()
                .connected
                .load(Ordering::Relaxed),
            None => launch::running(&self.dir).is_some(),
        }
    }
}

impl Workspaces {
    /// Checks that sandboxes work here (when workspaces run here) and prepares the state
    /// directory. `secrets` are the gateway's files no workspace may see (config, keys, audit
    /// log); `remote` the hosts `workspaces.hosts` names.
    pub async fn open(
        config: &WorkspacesConfig,
        state_dir: &Path,
        secrets: &[PathBuf],
        settings: Arc<EngineSettings>,
        shutdown: CancellationToken,
        remote: BTreeMap<String, WorkspaceHost>,
    ) -> Result<Self, WorkspaceError> {
        let layout = Layout::new(state_dir, own_uids());
        if let Some(dir) = layout.unreachable_parent() {
            return Err(WorkspaceError::Unreachable {
                dir,
                state: state_dir.to_owned(),
            });
        }
        let (host, disks, cgroups) = if config.runs_locally() {
            let mut secrets = secrets.to_vec();
            secrets.push(state_dir.to_owned());
            let host = Host::probe(
                &config.bwrap,
                &settings.tmux_bin,
                config.network,
                &config.expose,
                &secrets,
            )
            .await?;
            let (disks, cgroups) = local_limits(config, state_dir).await?;
            (Some(host), disks, cgroups)
        } else {
            (None, None, None)
        };
        layout.prepare()?;
        Ok(Self {
            inner: Arc::new(Inner {
                host,
                remote,
                layout,
                disks,
                cgroups,
                config: config.clone(),
                settings,
                shutdown,
                slots: Mutex::new(HashMap::new()),
                opening: tokio::sync::Mutex::new(()),
                stats: WorkspaceStats::default(),
            }),
        })
    }

    /// The limits of every workspace.
    pub fn limits(&self) -> &WorkspaceLimits {
        &self.inner.config.limits
    }

    /// What workspaces did so far, for metrics.
    pub fn stats(&self) -> &WorkspaceStats {
        &self.inner.stats
    }

    /// The tmux server of workspace `name`, its sandbox started first if it is not running.
    pub async fn server(&self, name: &WorkspaceName) -> Result<TmuxServer, WorkspaceError> {
        let slot = self.slot(name).await?;
        let _starting = slot.starting.lock().await;
        if let Some(remote) = &slot.remote {
            // The host knows whether the sandbox runs: asked whenever the server is not
            // connected (first use, or its connection ended), which starts it if needed.
            if !slot
                .server
                .worker()
                .stats()
                .connected
                .load(Ordering::Relaxed)
            {
                let epoch = remote
                    .start(
                        name,
                        self.inner.config.start_timeout() + REMOTE_START_MARGIN,
                    )
                    .await?;
                slot.server.set_epoch(epoch);
                self.reach(&slot.server).await;
            }
        } else {
            match launch::running(&slot.dir) {
                None => {
                    let process = self.start_sandbox(name, &slot).await?;
                    slot.server.set_epoch(process.start_time);
                    self.reach(&slot.server).await;
                }
                Some(process) => {
                    slot.server.set_epoch(process.start_time);
                    if !slot.seen.swap(true, Ordering::Relaxed) {
                        tracing::info!(workspace = %name, "workspace found running");
                        self.inner.stats.found.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        slot.seen.store(true, Ordering::Relaxed);
        Ok(slot.server.clone())
    }

    /// The tmux server of workspace `name` if its sandbox is running now; never starts one.
    pub fn running_server(&self, name: &WorkspaceName) -> Option<TmuxServer> {
        let slot = self.lock_slots().get(name).cloned()?;
        if slot.remote.is_some() {
            return slot.is_running().then(|| slot.server.clone());
        }
        let process = launch::running(&slot.dir)?;
        slot.server.set_epoch(process.start_time);
        Some(slot.server.clone())
    }

    /// The servers of the workspaces served since the gateway started (for metrics).
    pub fn servers(&self) -> Vec<TmuxServer> {
        self.lock_slots()
            .values()
            .map(|slot| slot.server.clone())
            .collect()
    }

    /// How many of them have a running sandbox.
    pub fn running(&self) -> usize {
        self.lock_slots()
            .values()
            .filter(|slot| slot.is_running())
            .count()
    }

    async fn start_sandbox(
        &self,
        name: &WorkspaceName,
        slot: &Slot,
    ) -> Result<launch::ProcessId, WorkspaceError> {
        let inner = &self.inner;
        let began = Instant::now();
        let host = inner.host.as_ref().ok_or_else(|| not_here(name))?;
        let plan = self.prepare(name, slot).await?;
        let started = launch::start(host, &slot.dir, plan, inner.config.start_timeout()).await;
        match started {
            Ok(process) => {
                let micros = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
                inner.stats.started.fetch_add(1, Ordering::Relaxed);
                inner
                    .stats
                    .start_micros
                    .fetch_add(micros, Ordering::Relaxed);
                tracing::info!(workspace = %name, pid = process.pid, ms = micros / 1000, "workspace started");
                Ok(process)
            }
            Err(error) => {
                inner.stats.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(workspace = %name, %error, "workspace did not start");
                Err(error.into())
            }
        }
    }

    /// Makes ready what a sandbox needs before it starts: its home's file system and its
    /// memory cgroup.
    async fn prepare(&self, name: &WorkspaceName, slot: &Slot) -> Result<Plan, WorkspaceError> {
        let inner = &self.inner;
        let limits = &inner.config.limits;
        if let (Some(disks), Some(owner)) = (&inner.disks, slot.run_as) {
            let home = Layout::dirs(&slot.dir).home;
            let attached = disks
                .attach(&slot.dir, &home, limits.home_bytes, owner)
                .await?;
            if attached == Home::Unsized {
                tracing::warn!(workspace = %name, "this workspace's home predates sized homes and has no size bound; delete the workspace to give it one");
            }
        }
        let cgroup = match &inner.cgroups {
            Some(cgroups) => {
                let path = cgroups.prepare(&dir_name(&slot.dir), limits.memory_bytes)?;
                cgroup::record(&slot.dir, &path)?;
                Some(Membership::of(&path)?)
            }
            None => None,
        };
        Ok(Plan {
            run_as: slot.run_as,
            limits: limits.process_limits(),
            sizes: limits.mount_sizes(),
            cgroup,
        })
    }

    /// Waits (at most the start timeout) until the server's worker reaches the sandbox just
    /// started: it may still hold a failure from before (a stopped sandbox), which it repeats
    /// for its reconnect backoff.
    async fn reach(&self, server: &TmuxServer) {
        let server = TmuxServerOps::new(server.clone(), Caller::new(SERVER_NAME));
        let deadline = tokio::time::Instant::now() + self.inner.config.start_timeout();
        while let Some(left) = deadline.checked_duration_since(tokio::time::Instant::now()) {
            match server.probe(left).await {
                Err(EngineError::Unavailable {
                    cause: ConnectError::NoSessions { .. },
                    ..
                })
                | Ok(_) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// The slot of `name`, made (with the workspace's directories and record) if this
    /// gateway has none, or if the operator deleted the workspace since (`muxgate workspace
    /// delete` beside a running gateway): its next call then gets a new one.
    async fn slot(&self, name: &WorkspaceName) -> Result<Arc<Slot>, WorkspaceError> {
        if let Some(slot) = self.current_slot(name) {
            return Ok(slot);
        }
        let inner = &self.inner;
        let _opening = inner.opening.lock().await;
        if let Some(slot) = self.current_slot(name) {
            return Ok(slot);
        }
        let layout = inner.layout.clone();
        let places = inner.config.hosts.clone();
        let (uid_base, max) = (inner.config.uid_base, inner.config.max_workspaces);
        let owned = name.clone();
        let (dir, meta) = tokio::task::spawn_blocking(move || {
            layout.open(&owned, &places, uid_base, max, unix_now())
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
        let run_as = meta.run_as.map(RunAs::from);
        let (endpoint, remote) = match &meta.host {
            Some(host) => {
                let remote = inner
                    .remote
                    .get(host)
                    .ok_or_else(|| WorkspaceError::Placed {
                        name: name.to_string(),
                        host: host.clone(),
                    })?
                    .clone();
                (remote.endpoint(name), Some(remote))
            }
            None => {
                let host = inner.host.as_ref().ok_or_else(|| not_here(name))?;
                let wrapper = ClientWrapper {
                    program: host.spec.bwrap.clone(),
                    args: sandbox::client_wrapper(&host.spec, &host.view, &Layout::dirs(&dir).run),
                    run_as,
                };
                let endpoint = TmuxEndpoint {
                    socket: TmuxSocket::Path(sandbox::INSIDE_SOCKET.into()),
                    launch: ClientLaunch::Wrapped(Arc::new(wrapper)),
                };
                (endpoint, None)
            }
        };
        let retire = inner.shutdown.child_token();
        let server = TmuxServer::start(
            SERVER_NAME,
            endpoint,
            inner.settings.clone(),
            retire.clone(),
        )
        .keyed(&format!("{SERVER_NAME}:{name}"));
        let slot = Arc::new(Slot {
            dir,
            run_as,
            server,
            retire,
            starting: tokio::sync::Mutex::new(()),
            seen: AtomicBool::new(false),
            remote,
        });
        if let Some(old) = self.lock_slots().insert(name.clone(), slot.clone()) {
            old.retire.cancel();
        }
        Ok(slot)
    }

    /// The slot of `name`, unless there is none or its workspace was deleted.
    fn current_slot(&self, name: &WorkspaceName) -> Option<Arc<Slot>> {
        let slot = self.lock_slots().get(name).cloned()?;
        // One `stat` per call: the record is only ever removed with the whole workspace.
        slot.dir.join(layout::META_FILE).exists().then_some(slot)
    }

    fn lock_slots(&self) -> std::sync::MutexGuard<'_, HashMap<WorkspaceName, Arc<Slot>>> {
        // A poisoned table is still a consistent map (inserts are single calls).
        self.inner
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What bounds a workspace on this machine beyond its sandbox: sized homes and memory cgroups,
/// where this machine can make them (and the limits ask for them).
async fn local_limits(
    config: &WorkspacesConfig,
    state_dir: &Path,
) -> Result<(Option<HomeDisks>, Option<MemoryCgroups>), WorkspaceError> {
    let limits = &config.limits;
    let disks = match HomeDisks::probe() {
        _ if limits.home_bytes == 0 => None,
        Ok(disks) => {
            disks
                .prove(limits.home_bytes.min(disk::MIN_HOME_BYTES))
                .await
                .map_err(|e| WorkspaceError::Disks(e.to_string()))?;
            Some(disks)
        }
        // As root, sized homes are expected to work: a missing tool is a broken install.
        Err(why) if own_uids() => return Err(WorkspaceError::Disks(why)),
        Err(why) => {
            tracing::warn!(
                reason = %why,
                "workspace homes have no size bound (workspaces.limits.home_bytes): a tenant can fill the disk the state directory is on"
            );
            None
        }
    };
    let cgroups = match MemoryCgroups::probe(&cgroup_group(state_dir)) {
        _ if limits.memory_bytes == 0 => None,
        Ok(cgroups) => Some(cgroups),
        Err(why) => {
            tracing::warn!(
                reason = %why,
                "a workspace's memory is bounded per process only (workspaces.limits.memory_bytes needs a memory cgroup muxgate can make here)"
            );
            None
        }
    };
    Ok((disks, cgroups))
}

/// The error for workspace `name`, recorded on this machine, when workspaces no longer run here.
fn not_here(name: &WorkspaceName) -> WorkspaceError {
    WorkspaceError::Placed {
        name: name.to_string(),
        host: config::LOCAL_HOST.to_owned(),
    }
}

/// Whether workspaces get uids of their own: when the gateway runs as root (a sandbox running
/// as root would own every root-owned file it can see).
pub fn own_uids() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The name of the cgroup holding this gateway's workspaces: one per state directory, so that
/// two gateways on one host keep theirs apart.
pub(crate) fn cgroup_group(state_dir: &Path) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(state_dir.as_os_str().as_encoded_bytes());
    format!("muxgate-{}", hex::encode(&digest[..6]))
}

/// The last component of a workspace's directory (its name on disk).
fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
