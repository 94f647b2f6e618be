//! Pure helpers of the Zellij backend: argument checks, argv building, and facts derived from
//! listings. No I/O.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use muxgate_mux::shell_run::screen::MarkedRun;

use crate::error::{Result, ZellijError};
use crate::listing::{Pane, Tab};

/// The oldest Zellij release with the CLI surface this backend uses (`--pane-id`, `--tab-id`,
/// `list-panes --json`, `subscribe`).
const MIN_VERSION: (u32, u32) = (0, 44);

/// Longest tab or pane name accepted.
const MAX_NAME_LEN: usize = 256;

/// Longest layout string accepted for a new tab.
pub(super) const MAX_LAYOUT_LEN: usize = 64 << 10;

/// What a listing taken after a creation holds that the one before did not.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Created<T> {
    Nothing,
    One(T),
    /// More than one: someone else created one meanwhile, and which is ours cannot be told.
    Several,
}

/// The items of `now` whose id is not in `before`, for a creation whose id Zellij did not
/// print: running it again would create a second one.
pub(super) fn created<T, I: PartialEq>(
    before: &[I],
    now: impl IntoIterator<Item = T>,
    id: impl Fn(&T) -> I,
) -> Created<T> {
    let mut new = now.into_iter().filter(|item| !before.contains(&id(item)));
    match (new.next(), new.next()) {
        (None, _) => Created::Nothing,
        (Some(item), None) => Created::One(item),
        (Some(_), Some(_)) => Created::Several,
    }
}

/// The pane `run_command` started: by the marker id in its command line, else by title.
pub(super) fn is_run_pane(pane: &Pane, run: &MarkedRun, title: &str) -> bool {
    let by_command = pane
        .terminal_command
        .as_deref()
        .is_some_and(|c| c.contains(&format!(" muxgate-run {} ", run.id())));
    by_command || (pane.title == title && pane.terminal_command.is_some())
}

/// Rewrites the duration of a watch timeout to the caller's full timeout.
pub(super) fn with_timeout(e: ZellijError, timeout: Duration) -> ZellijError {
    match e {
        ZellijError::Timeout { what, .. } => ZellijError::Timeout {
            what,
            after: timeout,
        },
        other => other,
    }
}

/// Sets `is_fullscreen` on the pane that fills a tab whose fullscreen is active.
///
/// Zellij's own flag for tiled panes is "fullscreen is active and this pane is focused", and
/// focus is per client: with no client attached it names the wrong pane. The fullscreen pane is
/// the tiled pane that covers the tab's whole viewport.
pub(super) fn mark_fullscreen(panes: &mut [Pane], tabs: &[Tab]) {
    for pane in panes.iter_mut().filter(|p| !p.is_floating) {
        pane.is_fullscreen = tabs.iter().any(|t| {
            t.id == pane.tab_id
                && t.is_fullscreen_active
                && pane.is_user_terminal()
                && pane.geometry.rows == t.viewport_rows
                && pane.geometry.columns == t.viewport_columns
        });
    }
}

/// `["a", "b"]` as argv.
pub(super) fn args<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<OsString> {
    items.into_iter().map(OsString::from).collect()
}

/// `--opt=<path>` without going through UTF-8.
pub(super) fn opt_path(prefix: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(prefix);
    arg.push(path.as_os_str());
    arg
}

pub(super) fn invalid(what: &'static str, reason: impl Into<String>) -> ZellijError {
    ZellijError::InvalidArgument {
        what,
        reason: reason.into(),
    }
}

pub(super) fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(invalid(what, "the name is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(what, format!("longer than {MAX_NAME_LEN} bytes")));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(what, "control characters are not allowed"));
    }
    Ok(())
}

pub(super) fn check_dir(what: &'static str, dir: &Path) -> Result<()> {
    if !dir.is_absolute() {
        return Err(invalid(
            what,
            format!("{} is not an absolute path", dir.display()),
        ));
    }
    Ok(())
}

/// Appends `-- argv…` for a pane command.
pub(super) fn push_command(argv: &mut Vec<OsString>, command: &[String]) -> Result<()> {
    let Some(program) = command.first() else {
        return Ok(());
    };
    if program.trim().is_empty() {
        return Err(invalid("command", "the program name is empty"));
    }
    if command.iter().any(|a| a.contains('\0')) {
        return Err(invalid("command", "arguments must not contain NUL"));
    }
    argv.push("--".into());
    argv.extend(command.iter().map(OsString::from));
    Ok(())
}

/// `"zellij 0.45.1\n"` → `"0.45.1"` if at least [`MIN_VERSION`].
pub(super) fn parse_version(stdout: &str) -> Option<String> {
    let version = stdout.trim().strip_prefix("zellij ")?.trim();
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    ((major, minor) >= MIN_VERSION).then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::{parse_panes, parse_tabs};

    #[test]
    fn a_creation_is_the_one_new_item() {
        let id = |n: &u32| *n;
        assert_eq!(created(&[1, 2], [1, 2, 3], id), Created::One(3));
        assert_eq!(created(&[1, 2], [1, 2], id), Created::Nothing);
        assert_eq!(created(&[1, 2], [2], id), Created::Nothing);
        assert_eq!(created(&[1], [1, 4, 5], id), Created::Several);
        assert_eq!(created(&[], [7], id), Created::One(7));
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version("zellij 0.45.1\n").as_deref(), Some("0.45.1"));
        assert_eq!(parse_version("zellij 0.44.0").as_deref(), Some("0.44.0"));
        assert_eq!(parse_version("zellij 1.0.0").as_deref(), Some("1.0.0"));
        assert_eq!(parse_version("zellij 0.43.1"), None);
        assert_eq!(parse_version("tmux 3.4"), None);
    }

    #[test]
    fn names_and_dirs() {
        assert!(check_name("tab name", "build & test").is_ok());
        assert!(check_name("tab name", "-starts-with-dash").is_ok());
        assert!(check_name("tab name", " ").is_err());
        assert!(check_name("tab name", "a\nb").is_err());
        assert!(check_name("tab name", &"x".repeat(257)).is_err());
        assert!(check_dir("cwd", Path::new("/srv")).is_ok());
        let err = check_dir("cwd", Path::new("srv")).unwrap_err();
        assert_eq!(err.to_string(), "invalid cwd: srv is not an absolute path");
    }

    #[test]
    fn pane_commands_go_after_a_double_dash() {
        let mut argv = args(["new-pane"]);
        push_command(&mut argv, &["--help".to_owned(), "x".to_owned()]).unwrap();
        assert_eq!(argv, args(["new-pane", "--", "--help", "x"]));
        let mut none = args(["new-pane"]);
        push_command(&mut none, &[]).unwrap();
        assert_eq!(none, args(["new-pane"]));
        assert!(push_command(&mut none, &[" ".to_owned()]).is_err());
    }

    #[test]
    fn fullscreen_is_the_pane_covering_the_viewport() {
        let panes_json = r#"[
            {"id":0,"is_plugin":false,"is_fullscreen":true,"tab_id":0,"pane_rows":40,"pane_columns":60},
            {"id":2,"is_plugin":false,"is_fullscreen":false,"tab_id":0,"pane_rows":40,"pane_columns":120},
            {"id":3,"is_plugin":false,"is_fullscreen":false,"tab_id":1,"pane_rows":40,"pane_columns":120}]"#;
        let tabs_json = r#"[
            {"tab_id":0,"position":0,"name":"a","is_fullscreen_active":true,"viewport_rows":40,"viewport_columns":120},
            {"tab_id":1,"position":1,"name":"b","is_fullscreen_active":false,"viewport_rows":40,"viewport_columns":120}]"#;
        let mut panes = parse_panes(panes_json).unwrap();
        mark_fullscreen(&mut panes, &parse_tabs(tabs_json).unwrap());
        let flags: Vec<bool> = panes.iter().map(|p| p.is_fullscreen).collect();
        assert_eq!(flags, [false, true, false]);
    }

    #[test]
    fn run_pane_lookup() {
        let run = MarkedRun::with_id(0xab);
        let json = format!(
            r#"[{{"id":3,"is_plugin":false,"title":"x","tab_id":0,"terminal_command":"/bin/sh -c eval \"$2\" muxgate-run {} echo hi"}},
                {{"id":4,"is_plugin":false,"title":"muxgate-run-000000ab","tab_id":0}}]"#,
            run.id()
        );
        let panes = parse_panes(&json).unwrap();
        assert!(is_run_pane(&panes[0], &run, "muxgate-run-000000ab"));
        // A plain shell pane with the same title is not the command pane.
        assert!(!is_run_pane(&panes[1], &run, "muxgate-run-000000ab"));
    }
}
