//! Copy mode in one pane, as one caller: entering it (optionally scrolled up into the history)
//! and leaving it.
//!
//! This module owns the command lines and the row that reports the pane's mode; callers get a
//! [`ModeState`] and an [`OpError`] that says what happened, not what to tell anyone
//! about it. Each change reads the pane's mode on the same line, right after the change, so
//! the answer shows the pane as the change left it and nothing else can run in between.

use crate::typed::op_error::{OpError, first_failure};
use crate::wire::format::{flag, row_format, split_row};
use crate::{BatchMode, Caller, CommandOutcome, PaneId, QuoteError, TmuxCommand, TmuxServer};

/// `-F` fields of the mode row; the mode's name (free text) last.
const MODE_FIELDS: [&str; 4] = ["pane_id", "pane_in_mode", "scroll_position", "pane_mode"];

/// A pane's mode, as a change left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeState {
    /// The pane (`%N`).
    pub pane_id: String,
    /// Whether it is in a mode at all.
    pub in_mode: bool,
    /// How many lines it is scrolled back.
    pub scroll_position: u32,
    /// Which mode (`copy-mode`, …; empty when none).
    pub mode: String,
}

/// `copy-mode` for `pane`, then `scroll_up` lines up when there are any to scroll.
fn enter_commands(pane: PaneId, scroll_up: u32) -> Result<Vec<TmuxCommand>, QuoteError> {
    let mut commands = vec![TmuxCommand::new("copy-mode").target(pane).build()?];
    if scroll_up > 0 {
        commands.push(
            TmuxCommand::new("send-keys")
                .flag("-X")
                .opt("-N", scroll_up.to_string())
                .target(pane)
                .arg("scroll-up")
                .build()?,
        );
    }
    Ok(commands)
}

/// `copy-mode -q`: leaves whatever mode `pane` is in (nothing when in none).
fn exit_command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("copy-mode")
        .flag("-q")
        .target(pane)
        .build()
}

/// `display-message` printing `pane`'s mode row.
fn state_command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg(row_format(&MODE_FIELDS))
        .build()
}

/// The mode row printed by the last command of a chain run to its first failure.
fn parse_outcomes(outcomes: &[CommandOutcome]) -> Result<ModeState, OpError> {
    first_failure(outcomes)?;
    let f = match outcomes.last() {
        Some(CommandOutcome::Ok(last)) => last
            .first()
            .and_then(|line| split_row(line, MODE_FIELDS.len())),
        _ => None,
    }
    .ok_or(OpError::Unanswered)?;
    Ok(ModeState {
        pane_id: f[0].clone(),
        in_mode: flag(&f[1]),
        // tmux prints no position for a pane in no mode.
        scroll_position: f[2].parse().unwrap_or(0),
        mode: f[3].clone(),
    })
}

/// Copy mode in the panes of one tmux server, acted on as `caller` (the engine's fairness
/// key).
#[derive(Clone)]
pub struct TmuxCopyMode {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxCopyMode {
    /// Copy mode in the panes of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Puts `pane` into copy mode, scrolled up `scroll_up` lines; its mode afterwards.
    pub async fn enter(&self, pane: PaneId, scroll_up: u32) -> Result<ModeState, OpError> {
        let mut commands = enter_commands(pane, scroll_up)?;
        commands.push(state_command(pane)?);
        self.change(commands).await
    }

    /// Takes `pane` out of any mode; its mode afterwards.
    pub async fn exit(&self, pane: PaneId) -> Result<ModeState, OpError> {
        self.change(vec![exit_command(pane)?, state_command(pane)?])
            .await
    }

    /// Runs `commands` (the last one prints the mode row), stopping at the first failure.
    async fn change(&self, commands: Vec<TmuxCommand>) -> Result<ModeState, OpError> {
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::StopOnError, None)
            .await?;
        parse_outcomes(&outcomes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    fn lines(commands: Vec<TmuxCommand>) -> Vec<String> {
        commands.iter().map(TmuxCommand::text).collect()
    }

    #[test]
    fn command_lines() {
        assert_eq!(
            lines(enter_commands(PaneId(3), 0).unwrap()),
            ["copy-mode -t '%3'"]
        );
        assert_eq!(
            lines(enter_commands(PaneId(3), 40).unwrap()),
            [
                "copy-mode -t '%3'",
                "send-keys -X -N '40' -t '%3' 'scroll-up'"
            ]
        );
        assert_eq!(
            exit_command(PaneId(3)).unwrap().text(),
            "copy-mode -q -t '%3'"
        );
        let state = state_command(PaneId(3)).unwrap().text();
        assert!(state.starts_with("display-message -p -t '%3' "), "{state}");
        assert!(state.contains("pane_in_mode") && state.contains("scroll_position"));
    }

    #[test]
    fn the_last_row_is_the_mode() {
        let ok = |lines: Vec<Vec<u8>>| CommandOutcome::Ok(lines);
        let row = encode_row(&["%3", "1", "40", "copy-mode"]);
        assert_eq!(
            parse_outcomes(&[ok(Vec::new()), ok(vec![row])]).unwrap(),
            ModeState {
                pane_id: "%3".into(),
                in_mode: true,
                scroll_position: 40,
                mode: "copy-mode".into(),
            }
        );
        let odd = encode_row(&["%3", "0", "", ""]);
        let left = parse_outcomes(&[ok(vec![odd])]).unwrap();
        assert!(!left.in_mode && left.scroll_position == 0 && left.mode.is_empty());
    }

    #[test]
    fn failures_stop_the_chain() {
        assert!(matches!(
            parse_outcomes(&[
                CommandOutcome::Failed("can't find pane: %9".into()),
                CommandOutcome::NotRun,
            ]),
            Err(OpError::Refused(m)) if m == "can't find pane: %9"
        ));
        assert!(matches!(
            parse_outcomes(&[CommandOutcome::Ok(Vec::new()), CommandOutcome::NotRun]),
            Err(OpError::Unanswered)
        ));
        assert!(matches!(
            parse_outcomes(&[CommandOutcome::Ok(vec![b"junk".to_vec()])]),
            Err(OpError::Unanswered)
        ));
        assert!(matches!(parse_outcomes(&[]), Err(OpError::Unanswered)));
    }
}
