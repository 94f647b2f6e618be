//! `muxgate workspace list|stop|delete`: the operator's hands on workspaces, through
//! [`crate::workspace::admin`] (the state directory and the process table; a running gateway
//! need not be asked).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;

use super::WorkspaceCommand;
use crate::config::Config;
use crate::workspace::admin::{self, WorkspaceStatus};

pub(super) async fn run(config: &Config, command: &WorkspaceCommand) -> anyhow::Result<()> {
    let state = config
        .state
        .resolve(|var| std::env::var_os(var))
        .map_err(anyhow::Error::msg)?;
    match command {
        WorkspaceCommand::List => {
            let workspaces =
                admin::list(&state).with_context(|| format!("cannot read {}", state.display()))?;
            print!("{}", render(&workspaces, unix_now()));
        }
        WorkspaceCommand::Stop { name } => {
            if admin::stop(&state, name).await? {
                println!("stopped {name}");
            } else {
                println!("{name} was not running");
            }
        }
        WorkspaceCommand::Delete { name } => match admin::delete(&state, name).await? {
            None => println!("deleted {name}"),
            Some(host) => println!(
                "deleted this gateway's record of {name}; its sandbox and files are on host \
                 {host}: delete them there (`muxgate workspace --config \
                 <hosts.{host}.workspaces_config> delete {name}`)"
            ),
        },
    }
    Ok(())
}

/// The list as aligned text.
fn render(workspaces: &[WorkspaceStatus], now: u64) -> String {
    if workspaces.is_empty() {
        return "no workspaces\n".into();
    }
    let width = workspaces
        .iter()
        .map(|w| w.meta.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let host_width = workspaces
        .iter()
        .filter_map(|w| w.meta.host.as_deref())
        .map(|host| host.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = format!(
        "{:width$}  {:host_width$}  {:20}  {:>7}  created\n",
        "name", "host", "state", "uid"
    );
    for workspace in workspaces {
        let (host, state, uid) = match (&workspace.meta.host, workspace.pid) {
            // Its sandbox, uid and state are the host's: its own `workspace list` shows them.
            (Some(host), _) => (host.as_str(), "on its host".to_owned(), "-".to_owned()),
            (None, pid) => (
                "local",
                pid.map_or_else(|| "stopped".into(), |pid| format!("running (pid {pid})")),
                workspace
                    .meta
                    .run_as
                    .map_or_else(|| "gateway".into(), |r| r.uid.to_string()),
            ),
        };
        let age = Duration::from_secs(now.saturating_sub(workspace.meta.created));
        out.push_str(&format!(
            "{:width$}  {host:host_width$}  {state:20}  {uid:>7}  {} ago\n",
            workspace.meta.name,
            super::human(age)
        ));
    }
    out
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::layout::{RunAsRecord, WorkspaceMeta};

    #[test]
    fn the_list_says_who_runs_as_whom_and_since_when() {
        let status = |name: &str, pid, uid: Option<u32>| WorkspaceStatus {
            meta: WorkspaceMeta {
                name: name.into(),
                run_as: uid.map(|uid| RunAsRecord { uid, gid: uid }),
                created: 1_000,
                host: (name == "carol").then(|| "build-1".into()),
            },
            dir: "/state/workspaces/x".into(),
            pid,
        };
        let text = render(
            &[
                status("alice", Some(42), Some(600_000)),
                status("team-b", None, None),
                status("carol", None, None),
            ],
            1_000 + 3 * 3600,
        );
        assert_eq!(
            text,
            "name    host     state                     uid  created\n\
             alice   local    running (pid 42)       600000  3h ago\n\
             team-b  local    stopped               gateway  3h ago\n\
             carol   build-1  on its host                 -  3h ago\n"
        );
        assert_eq!(render(&[], 0), "no workspaces\n");
    }
}
