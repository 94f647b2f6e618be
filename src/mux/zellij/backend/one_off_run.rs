//! A command run in a pane of its own: `zellij run --block-until-exit`, then the pane's
//! screen read for the command's marked output and exit status.
//!
//! The blocking client lives as long as the command, so it runs outside the session's queue;
//! starting the run and collecting its pane are queued jobs.

use std::ffi::OsString;
use std::time::Duration;

use tokio::time::Instant;

use super::checks::{args, check_dir, check_name, invalid, is_run_pane, opt_path};
use super::types::{CommandResult, ReadScope, RunOptions};
use super::{Inner, ZellijBackend};
use crate::mux::zellij::cli::{CliOutput, describe_status, first_lines, is_session_probe_failure};
use crate::mux::zellij::error::{Result, ZellijError};
use crate::mux::zellij::ids::{SessionName, TabId};
use crate::mux::zellij::listing::Pane;
use crate::mux::zellij::marker::MarkedRun;

/// Pauses between reads of a finished one-off command's screen until it settles.
const ONE_OFF_REREADS: [Duration; 3] = [
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
];

/// What `run_command` found after the blocking call returned.
enum Collected {
    /// No pane carries the run's marker: it never started.
    Missing,
    /// The command is still running (the blocking call timed out).
    Running(Pane),
    /// The command exited; its scrollback, and whether the pane was closed.
    Done {
        pane: Pane,
        lines: Vec<String>,
        closed: bool,
    },
}

impl ZellijBackend {
    /// Runs `command` (a `/bin/sh` command line) in a new command pane, by default a hidden
    /// floating pane of the first tab, and returns its exit status and output. No client's
    /// focus or view changes. The pane is closed afterwards unless `opts.keep_pane`.
    ///
    /// Completion comes from `zellij run --block-until-exit`, which returns when the command
    /// exits, whatever clients are attached; the output is read from the held pane. On timeout
    /// the command keeps running in its pane, whose id the error names; a cancelled caller
    /// leaves the pane too.
    pub async fn run_command(
        &self,
        session: &SessionName,
        command: &str,
        opts: RunOptions,
    ) -> Result<CommandResult> {
        let started = Instant::now();
        let run = MarkedRun::random();
        let argv = run
            .pane_argv(command)
            .map_err(|e| invalid("command", e.to_string()))?;
        let title = match &opts.name {
            Some(name) => {
                check_name("pane name", name)?;
                name.clone()
            }
            None => format!("muxgate-run-{}", run.id()),
        };
        if let Some(cwd) = &opts.cwd {
            check_dir("cwd", cwd)?;
        }
        let tab = opts.tab;
        let tab = self
            .queued(session, "run_command", move |inner, s| async move {
                inner.tab_or_first(&s, tab).await.map(|t| t.id)
            })
            .await?;
        let cli_args = run_argv(session, tab, &title, &opts, argv);
        let waited = self
            .block_until_exit(session, &cli_args, opts.timeout)
            .await;
        let (lookup, finished, keep) = (run.clone(), waited.is_ok(), opts.keep_pane);
        let collected = self
            .queued(session, "run_command", move |inner, s| async move {
                collect(&inner, &s, &lookup, &title, finished, keep).await
            })
            .await?;
        let result = answer(session, &run, collected, waited, opts.timeout)?;
        Ok(CommandResult {
            elapsed: started.elapsed(),
            ..result
        })
    }

    /// `zellij run --block-until-exit`. A failed session probe (see `ZellijCli::action`)
    /// happens before anything is started, so that call is made again, twice at most.
    async fn block_until_exit(
        &self,
        session: &SessionName,
        cli_args: &[OsString],
        timeout: Duration,
    ) -> Result<CliOutput> {
        let mut waited = Err(ZellijError::NoSuchSession {
            session: session.clone(),
        });
        for _ in 0..3 {
            waited = self
                .inner
                .cli
                .run("run --block-until-exit", cli_args, timeout)
                .await;
            match &waited {
                Ok(out) if is_session_probe_failure(&out.stderr) => {}
                _ => break,
            }
        }
        waited
    }
}

/// The arguments of `zellij run` for the command line `argv`, in a pane named `title` on
/// `tab`, never focused.
fn run_argv(
    session: &SessionName,
    tab: TabId,
    title: &str,
    opts: &RunOptions,
    argv: Vec<String>,
) -> Vec<OsString> {
    let mut cli_args: Vec<OsString> = args([
        "--session",
        session.as_str(),
        "run",
        "--block-until-exit",
        "--no-focus",
    ]);
    cli_args.push(format!("--tab-id={tab}").into());
    cli_args.push(format!("--name={title}").into());
    if opts.floating {
        cli_args.push("--floating".into());
    }
    if let Some(cwd) = &opts.cwd {
        cli_args.push(opt_path("--cwd=", cwd));
    }
    cli_args.push("--".into());
    cli_args.extend(argv.into_iter().map(OsString::from));
    cli_args
}

/// Finds the run's pane and, when the command finished, reads its settled screen and closes
/// it unless `keep`.
async fn collect(
    inner: &Inner,
    s: &SessionName,
    run: &MarkedRun,
    title: &str,
    finished: bool,
    keep: bool,
) -> Result<Collected> {
    let panes = inner.panes(s).await?;
    let Some(pane) = panes.into_iter().find(|p| is_run_pane(p, run, title)) else {
        return Ok(Collected::Missing);
    };
    if !finished {
        return Ok(Collected::Running(pane));
    }
    // Zellij can report the exit before its screen of the pane holds all that the command
    // printed (seen under load: nothing, or 29 of 30 lines): the screen is read until two
    // reads agree on some text, briefly.
    let mut lines = inner.dump(s, pane.id, ReadScope::Full).await?;
    for pause in ONE_OFF_REREADS {
        tokio::time::sleep(pause).await;
        let again = inner.dump(s, pane.id, ReadScope::Full).await?;
        let settled = again == lines && again.iter().any(|line| !line.trim().is_empty());
        lines = again;
        if settled {
            break;
        }
    }
    if !keep {
        let id = pane.id.to_string();
        inner
            .act(
                s,
                "action close-pane",
                args(["close-pane", "--pane-id", &id]),
            )
            .await?;
    }
    Ok(Collected::Done {
        pane,
        lines,
        closed: !keep,
    })
}

/// The run's result (its `elapsed` left zero for the caller) from what the blocking call and
/// the pane said.
fn answer(
    session: &SessionName,
    run: &MarkedRun,
    collected: Collected,
    waited: Result<CliOutput>,
    timeout: Duration,
) -> Result<CommandResult> {
    match (collected, waited) {
        (
            Collected::Done {
                pane,
                lines,
                closed,
            },
            Ok(out),
        ) => {
            let extracted = run.extract(&lines, false);
            let exit_status = extracted
                .as_ref()
                .map(|r| r.exit_status)
                .or(pane.exit_status)
                .or(out.status.code())
                .unwrap_or(-1);
            let output = match extracted {
                Some(r) => r.output,
                None => lines.join("\n"),
            };
            Ok(CommandResult {
                pane: pane.id,
                exit_status,
                output,
                truncated: false,
                pane_closed: closed,
                elapsed: Duration::ZERO,
            })
        }
        (Collected::Running(pane), Err(ZellijError::Timeout { .. })) => Err(ZellijError::Timeout {
            what: format!(
                "command in pane {} of session {session} (still running)",
                pane.id
            ),
            after: timeout,
        }),
        (Collected::Missing, waited) => Err(ZellijError::NoEffect {
            session: session.clone(),
            what: "start the command pane",
            detail: match waited {
                Ok(out) => first_lines(&out.stderr),
                Err(e) => e.to_string(),
            },
        }),
        (_, Err(e)) => Err(e),
        // Not reached: `Running` is only collected when the blocking call failed.
        (Collected::Running(_), Ok(out)) => Err(ZellijError::CommandFailed {
            command: "run --block-until-exit".to_owned(),
            status: describe_status(out.status),
            stderr: first_lines(&out.stderr),
        }),
    }
}
