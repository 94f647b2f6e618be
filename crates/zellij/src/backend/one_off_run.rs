//! A command run in a pane of its own: `zellij run --block-until-exit`, then the pane's
//! screen read for the command's marked output and exit status.
//!
//! The blocking client lives as long as the command, so it runs outside the session's queue;
//! starting the run and collecting its pane are queued jobs.

use std::ffi::OsString;
use std::time::Duration;

use muxgate_mux::shell_run::screen::MarkedRun;
use tokio::time::Instant;

use super::checks::{args, check_dir, check_name, invalid, is_run_pane, opt_path};
use super::types::{CommandResult, ReadScope, RunOptions};
use super::{Inner, ZellijBackend};
use crate::cli::{CliOutput, describe_status, first_lines, is_session_probe_failure};
use crate::error::{Result, ZellijError};
use crate::ids::{SessionName, TabId};
use crate::listing::Pane;

/// How long after its command exited a pane's screen may take to show the end marker (the
/// wrapper prints it after everything the command printed).
const SCREEN_DEADLINE: Duration = Duration::from_secs(3);
/// The first pause between two reads of that screen; each next one doubles, up to the last.
const FIRST_REREAD: Duration = Duration::from_millis(10);
const LONGEST_REREAD: Duration = Duration::from_millis(200);

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
    // printed (seen under load: nothing, or 29 of 30 lines, or all but the last line). The
    // end marker comes after all of it, so the screen is read until it shows the marker;
    // two reads that agree prove nothing (both may lack the end).
    let deadline = Instant::now() + SCREEN_DEADLINE;
    let mut pause = FIRST_REREAD;
    let mut lines = inner.dump(s, pane.id, ReadScope::Full).await?;
    while run.extract(&lines, false).is_none() && Instant::now() < deadline {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_REREAD);
        lines = inner.dump(s, pane.id, ReadScope::Full).await?;
    }
    // A pane whose output never showed whole is kept, for the caller to read.
    let keep = keep || run.extract(&lines, false).is_none();
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
            // An exit status is answered only with the output that came before it.
            let Some(extracted) = run.extract(&lines, false) else {
                let status = pane
                    .exit_status
                    .or(out.status.code())
                    .map_or_else(|| "an unknown status".to_owned(), |s| format!("status {s}"));
                return Err(ZellijError::NoEffect {
                    session: session.clone(),
                    what: "show the command's whole output",
                    detail: format!(
                        "the command in pane {} exited with {status}, but the end of its output \
                         did not reach the pane's screen within {} s (it exited without \
                         returning to the wrapper, or Zellij is overloaded); the pane is kept: \
                         read it with capture_pane",
                        pane.id,
                        SCREEN_DEADLINE.as_secs()
                    ),
                });
            };
            Ok(CommandResult {
                pane: pane.id,
                exit_status: extracted.exit_status,
                output: extracted.output,
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::*;
    use crate::listing::parse_panes;

    /// A command pane whose command exited with status 3 (Zellij's own report).
    fn exited_pane() -> Pane {
        let json = r#"[{"id":7,"is_plugin":false,"is_focused":true,"is_fullscreen":false,"is_floating":false,"is_suppressed":false,"title":"job","exited":true,"exit_status":3,"is_held":true,"pane_x":0,"pane_content_x":0,"pane_y":0,"pane_content_y":0,"pane_rows":10,"pane_content_rows":10,"pane_columns":40,"pane_content_columns":40,"cursor_coordinates_in_pane":null,"terminal_command":"muxgate-run","plugin_url":null,"is_selectable":true,"tab_id":0,"tab_position":0,"tab_name":"t"}]"#;
        parse_panes(json).unwrap().remove(0)
    }

    fn answer_for(lines: &[&str]) -> Result<CommandResult> {
        let run = MarkedRun::with_id(1);
        let collected = Collected::Done {
            pane: exited_pane(),
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            closed: false,
        };
        let waited = Ok(CliOutput {
            status: ExitStatus::from_raw(3 << 8),
            stdout: String::new(),
            stderr: String::new(),
        });
        answer(
            &SessionName::new("s").unwrap(),
            &run,
            collected,
            waited,
            Duration::from_secs(1),
        )
    }

    #[test]
    fn an_exit_status_comes_with_the_output_before_the_end_marker() {
        let result = answer_for(&["ZOUT42", "tail", "", "__MGE_00000001_3__"]).unwrap();
        assert_eq!(
            (result.exit_status, result.output.as_str()),
            (3, "ZOUT42\ntail\n")
        );
    }

    /// A screen read before the output reached it: Zellij already says "exited with 3", but an
    /// answer of status 3 with this screen's text would drop what the command printed.
    #[test]
    fn a_screen_without_the_end_marker_is_no_answer() {
        for screen in [&[][..], &[""][..], &["ZOUT42"][..]] {
            let err = answer_for(screen).unwrap_err();
            let text = err.to_string();
            assert!(
                matches!(err, ZellijError::NoEffect { .. }) && text.contains("status 3"),
                "{screen:?}: {text}"
            );
        }
    }
}
