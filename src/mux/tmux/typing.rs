//! Typing one line into a pane and pressing Enter, as one caller, in one write.
//!
//! `run_command` types its wrapped command line this way: the text and the Enter travel on the
//! same `;`-chained line, so nothing else can type into the pane between them, and nothing
//! after a refused step runs. This module owns the command lines; callers get a
//! [`TypingError`] that says what happened, not what to tell anyone about it.

use super::{
    BatchMode, Caller, CommandOutcome, EngineError, PaneId, QuoteError, TmuxCommand, TmuxServer,
};

/// Why a line was not typed (whole).
#[derive(Debug, thiserror::Error)]
pub enum TypingError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The text cannot be a tmux argument (it holds a NUL byte).
    #[error(transparent)]
    Quote(#[from] QuoteError),
    /// tmux refused a step; its message.
    #[error("tmux refused the command: {0}")]
    Refused(String),
    /// A step was not run: the line may be typed without its Enter.
    #[error("typing did not complete")]
    Unfinished,
}

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

/// The first step of a chain that did not succeed, if any.
fn parse_outcomes(outcomes: &[CommandOutcome]) -> Result<(), TypingError> {
    match outcomes
        .iter()
        .find(|o| !matches!(o, CommandOutcome::Ok(_)))
    {
        None => Ok(()),
        Some(CommandOutcome::Failed(message)) => Err(TypingError::Refused(message.clone())),
        Some(_) => Err(TypingError::Unfinished),
    }
}

/// Typing into the panes of one tmux server, as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxTyping {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxTyping {
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// Types `text` and Enter into `pane`.
    pub async fn type_line(&self, pane: PaneId, text: &str) -> Result<(), TypingError> {
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                line_commands(pane, text)?,
                BatchMode::StopOnError,
                None,
            )
            .await?;
        parse_outcomes(&outcomes)
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

    #[test]
    fn outcomes() {
        let ok = || CommandOutcome::Ok(Vec::new());
        assert!(parse_outcomes(&[ok(), ok()]).is_ok());
        assert!(matches!(
            parse_outcomes(&[ok(), CommandOutcome::Failed("no pane".into())]),
            Err(TypingError::Refused(message)) if message == "no pane"
        ));
        assert!(matches!(
            parse_outcomes(&[CommandOutcome::Failed("x".into()), CommandOutcome::NotRun]),
            Err(TypingError::Refused(_))
        ));
        assert!(matches!(
            parse_outcomes(&[ok(), CommandOutcome::NotRun]),
            Err(TypingError::Unfinished)
        ));
    }
}
