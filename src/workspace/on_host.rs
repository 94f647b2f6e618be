//! The host's end of the workspaces a gateway places on this machine (`workspaces.hosts`):
//!
//! - `muxgate host-workspace --config FILE start NAME` starts the workspace's sandbox (or finds
//!   it running) exactly as a gateway starts a local one, with the `[workspaces]` and `[state]`
//!   of FILE: this machine's uids, limits, masks and state directory, whatever the gateway's
//!   own configuration says;
//! - `muxgate host-workspace --config FILE client NAME -- ARGS` runs one tmux client of it
//!   (`tmux ARGS`) in the per-client jail a local workspace's clients get, as the workspace's
//!   user, without a shell.
//!
//! The gateway runs both over its link to the host, so every tmux client of a remote
//! workspace is jailed here as a local one is jailed beside the gateway, and the workspace's
//! sandbox is this machine's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::config::LOCAL_HOST;
use super::host::Host;
use super::layout::{self, Layout};
use super::name::WorkspaceName;
use super::{Workspaces, launch, own_uids, sandbox};
use crate::config::Config;
use muxgate_mux::child_process::mark_inherited_fds_cloexec;
use muxgate_tmux::RunAs;
use muxgate_tmux::client::spawn::{WRAPPED_PATH, become_user, is_term_marker};

/// Starts the sandbox of workspace `name` as `config` (this machine's) sets them up, unless it
/// runs; returns once its tmux server answers, with the sandbox's start time (`/proc` clock
/// ticks), which the gateway keeps to tell one run of it from the next.
pub async fn start(config: &Config, name: &str) -> Result<u64, String> {
    let name = WorkspaceName::parse(name).map_err(|e| e.to_string())?;
    let state = state_dir(config)?;
    let mut settings = config.workspaces.clone();
    settings.hosts = vec![LOCAL_HOST.to_owned()];
    let shutdown = CancellationToken::new();
    let workspaces = Workspaces::open(
        &settings,
        &state,
        &config.secret_paths(),
        Arc::new(config.engine.settings()),
        shutdown.clone(),
        BTreeMap::new(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let started = workspaces.server(&name).await;
    shutdown.cancel();
    started.map_err(|e| e.to_string())?;
    let dir = Layout::new(&state, own_uids()).dir(&name);
    launch::running(&dir)
        .map(|process| process.start_time)
        .ok_or_else(|| format!("workspace {name} stopped as it started"))
}

/// Replaces this process with a tmux client of workspace `name` (`tmux -N tmux_args`) in the
/// per-client jail, as the workspace's user, marked `term` when that is a muxgate client's
/// `TERM`. Returns only why it could not.
pub async fn exec_client(
    config: &Config,
    name: &str,
    term: Option<&str>,
    tmux_args: &[OsString],
) -> String {
    use std::os::unix::process::CommandExt;
    let (command, run_as) = match client_command(config, name, term, tmux_args).await {
        Ok(found) => found,
        Err(why) => return why,
    };
    let mut command = command;
    // SAFETY: the closure runs in the forked child before exec and only calls setgroups(2),
    // setgid(2), setuid(2) and close_range(2) or fcntl(2): async-signal-safe, no allocation.
    unsafe {
        command.pre_exec(move || {
            if let Some(run_as) = run_as {
                become_user(run_as)?;
            }
            mark_inherited_fds_cloexec()
        });
    }
    format!("cannot run the workspace's client: {}", command.exec())
}

/// The jailed client's command line, and the user it runs as.
async fn client_command(
    config: &Config,
    name: &str,
    term: Option<&str>,
    tmux_args: &[OsString],
) -> Result<(std::process::Command, Option<RunAs>), String> {
    let name = WorkspaceName::parse(name).map_err(|e| e.to_string())?;
    let state = state_dir(config)?;
    let settings = &config.workspaces;
    let mut secrets = config.secret_paths();
    secrets.push(state.clone());
    let host = Host::resolve(
        &settings.bwrap,
        &config.engine.settings().tmux_bin,
        settings.network,
        &settings.expose,
        &secrets,
    )
    .await
    .map_err(|e| e.to_string())?;
    let dir = Layout::new(&state, own_uids()).dir(&name);
    let meta = layout::read_meta(&dir)
        .map_err(|e| format!("workspace {name} has not been started here: {e}"))?;
    let mut command = std::process::Command::new(&host.spec.bwrap);
    command
        .args(sandbox::client_wrapper(
            &host.spec,
            &host.view,
            &Layout::dirs(&dir).run,
        ))
        .arg(&host.spec.tmux_bin)
        // A jailed client never starts a server: it would die with its jail.
        .arg("-N")
        .args(tmux_args)
        .env_clear()
        .env("PATH", WRAPPED_PATH);
    if let Some(term) = term.filter(|term| is_term_marker(term)) {
        command.env("TERM", term);
    }
    Ok((command, meta.run_as.map(RunAs::from)))
}

fn state_dir(config: &Config) -> Result<PathBuf, String> {
    config.state.resolve(|var| std::env::var_os(var))
}
