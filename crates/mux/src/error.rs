//! What went wrong in a backend, as data the same for every backend: [`ErrorKind`], which
//! each backend's error names ([`BackendError`]), and [`Unsupported`], an act or option a
//! backend does not offer.
//!
//! A backend's error keeps its own variants and its message (they name the target and what is
//! wrong with it in that backend's terms); its kind says what the caller can do about it, so
//! the gateway answers every backend's failures from one table of kinds, not by reading the
//! message.

use std::borrow::Cow;
use std::fmt;

/// What kind of failure a backend reports, and so what the caller can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input is malformed or out of range: change it.
    InvalidInput,
    /// The named session, window, tab, pane or buffer does not exist.
    NotFound,
    /// The target exists but is in a state that does not allow the act.
    Conflict,
    /// A queue or limit is full: retrying later can succeed.
    Busy,
    /// The act did not finish in its time.
    Timeout,
    /// The multiplexer cannot be reached, or the connection to it broke.
    Unavailable,
    /// The backend does not offer this act or option at all ([`Unsupported`]): no input and
    /// no retry makes it work there.
    Unsupported,
    /// The backend answered something muxgate cannot read.
    Internal,
}

/// A backend's error: its message names the target and what is wrong in the backend's terms,
/// [`BackendError::kind`] says what kind of failure it is.
pub trait BackendError: std::error::Error + Send + Sync + 'static {
    /// The kind of this failure.
    fn kind(&self) -> ErrorKind;
}

/// An act or option a backend does not offer, and why: refused before anything runs, never
/// silently ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The backend that does not offer it, as users name it (`tmux`, `Zellij`).
    pub backend: &'static str,
    /// The act or option, as the caller names it (an argument such as `direction`, or a
    /// value such as the key `KP0`).
    pub what: Cow<'static, str>,
    /// Why the backend does not offer it, in its own terms.
    pub why: &'static str,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} does not offer {}: {}",
            self.backend, self.what, self.why
        )
    }
}

impl std::error::Error for Unsupported {}

impl BackendError for Unsupported {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsupported_option_says_which_backend_lacks_it_and_why() {
        let refusal = Unsupported {
            backend: "Zellij",
            what: "direction".into(),
            why: "it focuses a pane by its id",
        };
        assert_eq!(
            refusal.to_string(),
            "Zellij does not offer direction: it focuses a pane by its id"
        );
        assert_eq!(refusal.kind(), ErrorKind::Unsupported);
    }
}
