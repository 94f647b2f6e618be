//! The one error of the typed tmux operations, and how a batch's answers become it.
//!
//! Every typed operation fails the same few ways: the engine could not run its line, an
//! argument cannot be quoted for tmux, tmux refused a command, or a command was not run (an
//! earlier one of its line failed) or printed no row that parses. [`OpError`] says which;
//! a module wraps it only for the cases it alone has (a missing buffer, a name in use, …).
//! Callers decide what to tell anyone about it.

use crate::{CommandOutcome, EngineError, PaneId, QuoteError};

/// Why a typed operation failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The engine could not run the line.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An argument cannot be a tmux argument (it holds a NUL byte).
    #[error(transparent)]
    Quote(#[from] QuoteError),
    /// tmux refused a command; its message.
    #[error("tmux refused the command: {0}")]
    Refused(String),
    /// A command was not run, or did not print the row the operation reads.
    #[error("tmux did not answer for every command")]
    Unanswered,
}

/// Why an operation on one pane failed: as any operation, or the pane is not there.
#[derive(Debug, thiserror::Error)]
pub enum PaneOpError {
    /// As any operation.
    #[error(transparent)]
    Op(#[from] OpError),
    /// tmux reported nothing for the pane: it is not there (any more).
    #[error("no pane {0} on this server")]
    Missing(PaneId),
}

/// `From` the engine's and the quoting errors for an error that wraps [`OpError`] as its `Op`
/// case, so that `?` takes either straight into it.
macro_rules! wraps_op_error {
    ($name:ident) => {
        impl From<$crate::EngineError> for $name {
            fn from(error: $crate::EngineError) -> Self {
                Self::Op(error.into())
            }
        }

        impl From<$crate::QuoteError> for $name {
            fn from(error: $crate::QuoteError) -> Self {
                Self::Op(error.into())
            }
        }
    };
}
pub(crate) use wraps_op_error;

wraps_op_error!(PaneOpError);

/// The first command of a batch that did not succeed, as an error: a refusal with tmux's
/// message, a command that was not run as [`OpError::Unanswered`].
pub fn first_failure(outcomes: &[CommandOutcome]) -> Result<(), OpError> {
    match outcomes
        .iter()
        .find(|outcome| !matches!(outcome, CommandOutcome::Ok(_)))
    {
        None => Ok(()),
        Some(CommandOutcome::Failed(message)) => Err(OpError::Refused(message.clone())),
        Some(_) => Err(OpError::Unanswered),
    }
}

/// The rows a listing printed right after a change on the same line (`[change, listing]`):
/// the change's failure as [`first_failure`] says; a listing that did not answer is
/// [`OpError::Unanswered`], as the change itself was made.
pub fn listed_after_change(outcomes: &[CommandOutcome]) -> Result<&[Vec<u8>], OpError> {
    let [change, listing] = outcomes else {
        return Err(OpError::Unanswered);
    };
    first_failure(std::slice::from_ref(change))?;
    match listing {
        CommandOutcome::Ok(rows) => Ok(rows),
        _ => Err(OpError::Unanswered),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> CommandOutcome {
        CommandOutcome::Ok(vec![b"row".to_vec()])
    }

    #[test]
    fn every_command_answered_is_no_failure() {
        assert!(first_failure(&[]).is_ok());
        assert!(first_failure(&[ok(), ok()]).is_ok());
    }

    #[test]
    fn the_first_refusal_is_reported_with_its_message() {
        let outcomes = [
            ok(),
            CommandOutcome::Failed("can't find pane: %9".into()),
            CommandOutcome::NotRun,
            CommandOutcome::Failed("later".into()),
        ];
        assert!(matches!(
            first_failure(&outcomes),
            Err(OpError::Refused(m)) if m == "can't find pane: %9"
        ));
    }

    #[test]
    fn a_command_not_run_is_unanswered() {
        assert!(matches!(
            first_failure(&[ok(), CommandOutcome::NotRun]),
            Err(OpError::Unanswered)
        ));
    }

    #[test]
    fn a_listing_after_a_change_gives_its_rows_or_why_not() {
        assert_eq!(
            listed_after_change(&[ok(), ok()]).ok(),
            Some(&[b"row".to_vec()][..])
        );
        assert!(matches!(
            listed_after_change(&[CommandOutcome::Failed("no".into()), CommandOutcome::NotRun]),
            Err(OpError::Refused(m)) if m == "no"
        ));
        assert!(matches!(
            listed_after_change(&[ok(), CommandOutcome::Failed("list".into())]),
            Err(OpError::Unanswered)
        ));
        assert!(matches!(
            listed_after_change(&[CommandOutcome::NotRun, ok()]),
            Err(OpError::Unanswered)
        ));
        assert!(matches!(
            listed_after_change(&[ok()]),
            Err(OpError::Unanswered)
        ));
    }
}
