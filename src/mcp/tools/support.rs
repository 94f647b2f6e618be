//! Small pieces the session, window, option and hook tools share: a value that cannot be
//! quoted and a failed typed operation as errors, narrowing a target to the kind a tool acts on, listing filters, and the
//! rule for operations that reach beyond one session.
//!
//! Pure apart from [`TmuxAccess`] reads; no tool logic lives here.

use muxgate_mux::lines::excerpt;

use crate::auth::pattern::NamePattern;
use crate::mcp::access::{TmuxAccess, checked_target, engine_error};
use crate::mcp::error::{ToolError, ToolErrorKind};
pub(crate) use muxgate_tmux::typed::environment::is_env_name;
use muxgate_tmux::typed::op_error::OpError;
use muxgate_tmux::wire::format_check::check_format;
use muxgate_tmux::wire::target::{SessionSel, Target};
use muxgate_tmux::{EngineError, QuoteError};

/// A value that cannot go on a command line (a NUL byte), as an error the model can fix.
pub(crate) fn build_error(error: QuoteError) -> ToolError {
    ToolError::invalid_arguments(
        error.to_string(),
        "remove NUL bytes from the arguments and call again",
    )
}

/// A failed typed operation as an error for the model, for the cases a tool does not word
/// itself: the engine's failures and tmux's refusals as for any command (suggesting
/// `list_hint`), a value that cannot be quoted as [`build_error`] says, a command tmux did not
/// answer as worth a retry.
pub(crate) fn op_failure(server: &str, error: OpError, list_hint: &str) -> ToolError {
    match error {
        OpError::Engine(error) => engine_error(server, error, list_hint),
        OpError::Refused(message) => engine_error(server, EngineError::Command(message), list_hint),
        OpError::Quote(error) => build_error(error),
        OpError::Unanswered => ToolError::new(
            ToolErrorKind::Unavailable,
            "tmux did not answer for every command",
            "retry shortly",
        ),
    }
}

/// The session a tool that acts on whole sessions was given; other kinds are refused so that a
/// pane or window id never stands in for its session in a destructive call.
pub(crate) fn session_only(target: &Target, tool: &str) -> Result<SessionSel, ToolError> {
    match target {
        Target::Session(session) => Ok(session.clone()),
        other => Err(ToolError::invalid_arguments(
            format!(
                "{tool} takes a session id ($N) or session name, not the {} {other}",
                other.kind()
            ),
            "call list_sessions and pass the session's id",
        )),
    }
}

/// [`session_only`] for a client's target argument: a path (`SESSION:WINDOW`) never names a
/// session, so it is refused without asking tmux.
pub(crate) fn session_target(text: &str, tool: &str) -> Result<SessionSel, ToolError> {
    match checked_target(text)? {
        Some(target) => session_only(&target, tool),
        None => Err(ToolError::invalid_arguments(
            format!(
                "{tool} takes a session id ($N) or session name, not the window or pane {:?}",
                excerpt(text)
            ),
            "pass the session's name (the part before the colon) or its id",
        )),
    }
}

/// Refuses operations whose effect reaches every session of a server (killing it, server and
/// global options and environment) unless the caller may see every session there: a caller
/// limited to some sessions must not change the others.
pub(crate) fn require_every_session(tmux: &TmuxAccess<'_>, what: &str) -> Result<(), ToolError> {
    if tmux.acl_needs_sessions() {
        return Err(ToolError::new(
            ToolErrorKind::Forbidden,
            format!(
                "{what} affects every session on server {:?}, and your access is limited to some of them",
                tmux.server_name()
            ),
            "act on a session you may see instead (pass its target), or use a token without session restrictions",
        ));
    }
    Ok(())
}

/// Compiles a `name` filter: `*` any run of characters, `?` one character, else literal.
pub(crate) fn name_filter(pattern: Option<&str>) -> Result<Option<NamePattern>, ToolError> {
    pattern
        .map(|p| {
            NamePattern::new(p).map_err(|e| {
                ToolError::invalid_arguments(
                    format!("filters.name is not a usable pattern: {e}"),
                    "use a name, or a glob with * and ? (e.g. \"build-*\")",
                )
            })
        })
        .transpose()
}

/// Longest window name accepted.
pub(crate) const MAX_WINDOW_NAME_CHARS: usize = 64;

/// Checks a window name a client gives (`field` names the argument in errors): 1-64
/// characters, no control characters, and no `#`, which tmux would expand as a format in
/// window names.
/// Checks client text that tmux will expand as a format (`field` names the argument) against
/// the safe grammar ([`muxgate_tmux::wire::format_check`]).
pub(crate) fn check_tmux_format(text: &str, field: &str) -> Result<(), ToolError> {
    check_format(text).map_err(|error| {
        ToolError::invalid_arguments(
            format!("{field} refused: {error}"),
            "use #{variable} formats with the plain modifiers (conditionals, comparisons, trims, padding up to 1000); to run a command in a pane use send_keys",
        )
    })
}

pub(crate) fn check_window_name(name: &str, field: &str) -> Result<(), ToolError> {
    let count = name.chars().count();
    if (1..=MAX_WINDOW_NAME_CHARS).contains(&count)
        && !name.chars().any(|c| c.is_control() || c == '#')
    {
        return Ok(());
    }
    Err(ToolError::invalid_arguments(
        format!(
            "{field} {:?} is not a valid window name: use 1-{MAX_WINDOW_NAME_CHARS} characters without `#` or control characters",
            excerpt(name)
        ),
        "choose a plain name such as editor or tests",
    ))
}

/// Largest window width or height tmux accepts.
pub(crate) const MAX_WINDOW_SIZE: u32 = 10_000;

/// Checks an optional width or height (`field` names it in errors).
pub(crate) fn validate_window_size(value: Option<u32>, field: &str) -> Result<(), ToolError> {
    match value {
        Some(v) if v == 0 || v > MAX_WINDOW_SIZE => Err(ToolError::invalid_arguments(
            format!("{field} must be between 1 and {MAX_WINDOW_SIZE}, got {v}"),
            "pass a size in character cells, e.g. 120 columns by 40 rows",
        )),
        _ => Ok(()),
    }
}

/// Checks a start directory's form: an absolute path. Whether it exists is asked where the
/// panes run ([`TmuxAccess::check_start_directory`]).
pub(crate) fn validate_start_directory(dir: &str) -> Result<(), ToolError> {
    if !std::path::Path::new(dir).is_absolute() || dir.len() > 4096 {
        return Err(ToolError::invalid_arguments(
            format!(
                "start_directory {:?} must be an absolute path",
                excerpt(dir)
            ),
            "pass a path starting with /",
        ));
    }
    Ok(())
}

impl TmuxAccess<'_> {
    /// Refuses a start directory that does not exist on this machine (tmux itself would
    /// silently fall back to another directory). On another host it is not asked: this
    /// machine's files say nothing of the host's, and must not be probed through it.
    pub(crate) fn check_start_directory(&self, dir: Option<&str>) -> Result<(), ToolError> {
        let Some(dir) = dir else { return Ok(()) };
        validate_start_directory(dir)?;
        if self.server.endpoint().remote_host().is_none() && !std::path::Path::new(dir).is_dir() {
            return Err(ToolError::invalid_arguments(
                format!(
                    "start_directory {:?} is not an existing directory",
                    excerpt(dir)
                ),
                "create it first (e.g. with run_command mkdir -p) or pass another directory",
            ));
        }
        Ok(())
    }
}

/// Most variables one call may set.
pub(crate) const MAX_ENVIRONMENT_VARS: usize = 64;

/// Checks an `environment` argument and returns its pairs in name order.
pub(crate) fn validate_environment(
    environment: std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ToolError> {
    if environment.len() > MAX_ENVIRONMENT_VARS {
        return Err(ToolError::invalid_arguments(
            format!(
                "environment has {} variables; at most {MAX_ENVIRONMENT_VARS} are accepted",
                environment.len()
            ),
            "set fewer variables, or set the rest with set_environment",
        ));
    }
    if let Some(bad) = environment.keys().find(|name| !is_env_name(name)) {
        return Err(ToolError::invalid_arguments(
            format!(
                "environment variable name {:?} is not valid: use letters, digits and _ (not starting with a digit)",
                excerpt(bad)
            ),
            "rename the variable",
        ));
    }
    Ok(environment.into_iter().collect())
}

/// A `shell` argument, when given, must name a command.
pub(crate) fn check_shell(shell: Option<&str>) -> Result<(), ToolError> {
    if shell.is_some_and(|s| s.trim().is_empty()) {
        return Err(ToolError::invalid_arguments(
            "shell is empty",
            "omit shell for the default shell, or pass a command",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::access::window_only;
    use muxgate_tmux::{PaneId, WindowId};

    #[test]
    fn narrows_targets_by_kind() {
        let session = Target::parse("$3").unwrap();
        assert!(session_only(&session, "kill_session").is_ok());
        let err = session_only(&Target::Pane(PaneId(1)), "kill_session").unwrap_err();
        assert!(err.message.contains("not the pane %1"), "{}", err.message);
        assert_eq!(
            window_only(&Target::parse("@2").unwrap(), "t").unwrap(),
            WindowId(2)
        );
        assert!(window_only(&session, "kill_window").is_err());
    }

    #[test]
    fn name_filters_are_globs() {
        assert!(name_filter(None).unwrap().is_none());
        let p = name_filter(Some("ci-*")).unwrap().unwrap();
        assert!(p.matches("ci-1") && !p.matches("main"));
        assert!(name_filter(Some("")).is_err());
        assert_eq!(excerpt(&"x".repeat(100)).chars().count(), 65);
        assert_eq!(excerpt("abc"), "abc");
    }

    #[test]
    fn window_names_sizes_directories_and_environment() {
        assert!(check_window_name("my editor", "name").is_ok());
        assert!(check_window_name("naïve;'x'", "name").is_ok());
        for bad in ["", "a#{b}", "tab\there", &"w".repeat(65)] {
            let err = check_window_name(bad, "name").unwrap_err();
            assert!(err.message.starts_with("name "), "{}", err.message);
        }
        assert!(validate_window_size(None, "width").is_ok());
        assert!(validate_window_size(Some(10_000), "width").is_ok());
        assert!(validate_window_size(Some(0), "height").is_err());
        assert!(validate_window_size(Some(10_001), "height").is_err());
        assert!(validate_start_directory("/").is_ok());
        assert!(validate_start_directory("tmp").is_err());
        assert!(is_env_name("_A1") && is_env_name("path"));
        assert!(
            !is_env_name("1A") && !is_env_name("A-B") && !is_env_name("") && !is_env_name("A=B")
        );
        let env =
            std::collections::BTreeMap::from([("B".into(), "2".into()), ("A".into(), "1".into())]);
        assert_eq!(
            validate_environment(env).unwrap(),
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "2".to_owned())
            ]
        );
        let many = (0..65).map(|i| (format!("V{i}"), String::new())).collect();
        assert!(validate_environment(many).is_err());
    }
}
