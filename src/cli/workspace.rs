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
        WorkspaceCommand::Delete { name } => {
            admin::delete(&state, name).await?;
            println!("deleted {name}");
        }
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
    let mut out = format!("{:width$}  {:20}  {:>7}  created\n", "name", "state", "uid");
    for workspace in workspaces {
        let state = match workspace.pid {
            Some(pid) => format!("running (pid {pid})"),
            None => "stopped".into(),
        };
        let uid = workspace
            .meta
            .run_as
            .map_or_else(|| "gateway".into(), |r| r.uid.to_string());
        let age = Duration::from_secs(now.saturating_sub(workspace.meta.created));
        out.push_str(&format!(
            "{:width$}  {state:20}  {uid:>7}  {} ago\n",
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
            },
            dir: "/state/workspaces/x".into(),
            pid,
        };
        let text = render(
            &[
                status("alice", Some(42), Some(600_000)),
                status("team-b", None, None),
            ],
            1_000 + 3 * 3600,
        );
        assert_eq!(
            text,
            "name    state                     uid  created\n\
             alice   running (pid 42)       600000  3h ago\n\
             team-b  stopped               gateway  3h ago\n"
        );
        assert_eq!(render(&[], 0), "no workspaces\n");
    }
}
