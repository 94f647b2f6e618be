//! Typing one line into a pane and pressing Enter, as one caller, in one write.
//!
//! `run_command` types its wrapped command line this way: the text and the Enter travel on the
//! same `;`-chained line, so nothing else can type into the pane between them, and nothing
//! after a refused step runs. This module owns the command lines; callers get an
//! [`OpError`] that says what happened, not what to tell anyone about it.

use crate::typed::op_error::{OpError, first_failure};
use crate::{BatchMode, Caller, PaneId, QuoteError, TmuxCommand, TmuxServer};

/// `text` typed literally (`-l`, after `--` so a leading `-` is text), then Enter.
fn line_commands(pane: PaneId, text: &str) -> Result<Vec<TmuxCommand>, QuoteError> {
    Ok(vec![
        TmuxCommand::new("send-keys")
            .target(pane)
            .flag("-l")
            .end_of_options()
            .arg(text)
            .build()?,
        TmuxCommand::new("send-keys")
            .target(pane)
            .arg("Enter")
            .build()?,
    ])
}

/// Typing into the panes of one tmux server, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxTyping {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxTyping {
    /// Typing into the panes of `server`, as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Types `text` and Enter into `pane`.
    pub async fn type_line(&self, pane: PaneId, text: &str) -> Result<(), OpError> {
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                line_commands(pane, text)?,
                BatchMode::StopOnError,
                None,
            )
            .await?;
        first_failure(&outcomes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let lines: Vec<String> = line_commands(PaneId(4), "-x 'y'")
            .unwrap()
            .iter()
            .map(TmuxCommand::text)
            .collect();
        assert_eq!(
            lines,
            [
                r"send-keys -t '%4' -l -- '-x '\''y'\'",
                "send-keys -t '%4' 'Enter'",
            ]
        );
    }

    #[test]
    fn a_nul_byte_is_refused() {
        assert!(line_commands(PaneId(4), "a\0b").is_err());
    }
}
