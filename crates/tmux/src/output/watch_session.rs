//! The watch session: the one session of a tmux server that muxgate's output connection is
//! attached to, and the commands that keep it.
//!
//! tmux sends `%output` to a control client only for panes of windows linked into the session
//! it is attached to, and checks every pane against every output client on each turn of its
//! event loop (BENCHMARKS.md). So instead of one client per watched session, the windows of
//! watched panes are linked into this one session ([`links`]) and unlinked when no one watches
//! them any more (`unlink`); one client attached to it receives all their output. The
//! session's own first window (a placeholder running `cat`) stays its current window: tmux
//! applies a pending resize to a window only while it is the current window of an attached
//! session, so a watched window that became the watch session's current one would be resized
//! to a human's terminal where it had kept its own size before.
//!
//! What that would change for everyone else, and how it is undone:
//! - the session is listed by tmux: muxgate's tools leave it out everywhere
//!   ([`is_watch_session`]), and a target naming it is not found;
//! - a window whose own session is killed would live on in the watch session: such windows
//!   (`orphans`) are killed at once, so their programs end as they would have; and once the
//!   watch session is the server's only session (`only_watch_left`) it is killed, and the
//!   server still exits with its last real session;
//! - tmux resolves a bare pane or window id to the most recently active session holding it:
//!   linking a window also makes its own session more recent than the watch session (the
//!   worker's client switches to it, once per session while the watch session lives), so such
//!   targets keep resolving as before.
//!
//! Pure: command lines and row parsing; [`crate::output::monitor`] runs them.

use std::collections::{HashMap, HashSet};

use crate::client::connection::NewSession;
use crate::wire::command::TmuxCommand;
use crate::wire::ids::{PaneId, SessionId, WindowId};
use crate::wire::quote::QuoteError;

/// The watch session's name. A leading underscore sorts it apart in a human's `tmux ls`.
pub const WATCH_SESSION: &str = "_muxgate";

/// Whether a session name is the watch session's.
pub fn is_watch_session(name: &str) -> bool {
    name == WATCH_SESSION
}

/// How the output connection creates the watch session and attaches to it in one command: its
/// first window is a placeholder running `cat` (executed without a shell, so no startup file is
/// read), kept as the session's current window.
pub const NEW_SESSION: NewSession = NewSession {
    name: WATCH_SESSION,
    argv: &["cat", "-"],
};

/// Asks for the watch session's current window: its placeholder, right after it was created.
pub(crate) fn placeholder(watch: SessionId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .opt("-t", format!("{watch}:"))
        .arg("#{window_id}")
        .build()
}

/// Reads [`placeholder`]'s answer.
pub(crate) fn parse_placeholder(rows: &[Vec<u8>]) -> Option<WindowId> {
    std::str::from_utf8(rows.first()?)
        .ok()?
        .trim_end()
        .parse()
        .ok()
}

/// Where a pane is, as tmux resolves it: `display-message` of `%N %window $session origin
/// name`, the origin being the server's process and start time and the pane's process.
pub(crate) fn place(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .arg("#{pane_id} #{window_id} #{session_id} #{pid}/#{start_time}/#{pane_pid} #{session_name}")
        .build()
}

/// [`place`]'s answer for one pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlaceRow {
    pub window: WindowId,
    /// The session tmux resolved the pane to (which may be the watch session).
    pub session: SessionId,
    /// Which pane of which server process this is: a pane id names another pane once its
    /// server was restarted, and then the origin differs.
    pub origin: String,
    pub session_name: String,
}

/// Reads [`place`]'s answer for `pane`. `None` for another pane's row or none (tmux 3.3a
/// answers a missing pane with an empty line).
pub(crate) fn parse_place(rows: &[Vec<u8>], pane: PaneId) -> Option<PlaceRow> {
    let text = std::str::from_utf8(rows.first()?).ok()?;
    let mut parts = text.trim_end_matches('\n').splitn(5, ' ');
    let id = parts.next()?.parse::<PaneId>().ok()?;
    let window = parts.next()?.parse().ok()?;
    let session = parts.next()?.parse().ok()?;
    let origin = parts.next()?.to_owned();
    (id == pane).then(|| PlaceRow {
        window,
        session,
        origin,
        session_name: parts.next().unwrap_or("").to_owned(),
    })
}

/// One window's line of [`links`]: its link, then perhaps a switch of the issuing client.
#[derive(Debug)]
pub struct LinkLine {
    /// The link first; the switch, if any, second.
    pub commands: Vec<TmuxCommand>,
    /// The owner this line switches the client to.
    pub switches: Option<SessionId>,
}

/// Links each `(window, owner)` into the watch session `watch` without selecting it, one line
/// per window, so that no other command runs between a link and its switch.
///
/// tmux resolves a bare `%N` or `@N` to the most recently active session holding it, and the
/// watch session is more recent than every session that existed when it started. A switch of
/// the issuing client (the worker's) to the owner makes the owner more recent; nothing but an
/// attach to the watch session makes the watch session more recent again, so an owner needs
/// one switch for the watch session's whole life. The first window of each owner not in
/// `switched` carries it. A switch may fail (an owner that ended meanwhile) without harm.
pub fn links(
    watch: SessionId,
    windows: &[(WindowId, SessionId)],
    switched: &HashSet<SessionId>,
) -> Result<Vec<LinkLine>, QuoteError> {
    let mut planned = HashSet::new();
    let mut lines = Vec::with_capacity(windows.len());
    for (window, owner) in windows {
        let mut commands = vec![
            TmuxCommand::new("link-window")
                .flag("-d")
                .opt("-s", window.to_string())
                .opt("-t", format!("{watch}:"))
                .build()?,
        ];
        let switches = (!switched.contains(owner) && planned.insert(*owner)).then_some(*owner);
        if let Some(owner) = switches {
            commands.push(
                TmuxCommand::new("switch-client")
                    .opt("-t", owner.to_string())
                    .build()?,
            );
        }
        lines.push(LinkLine { commands, switches });
    }
    Ok(lines)
}

/// Unlinks `window` from the watch session; a window linked nowhere else (its session is gone)
/// is killed (`-k`), as it would have been with its session.
pub(crate) fn unlink(watch: SessionId, window: WindowId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("unlink-window")
        .flag("-k")
        .opt("-t", format!("{watch}:{window}"))
        .build()
}

/// Lists the watch session's windows with how many sessions each is linked into (for
/// [`orphans`]).
pub(crate) fn windows(watch: SessionId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-windows")
        .opt("-t", watch.to_string())
        .opt("-F", "#{window_id} #{window_linked_sessions}")
        .build()
}

/// Every window of a [`windows`] answer.
pub(crate) fn listed(rows: &[Vec<u8>]) -> HashSet<WindowId> {
    rows.iter()
        .filter_map(|row| {
            let text = std::str::from_utf8(row).ok()?;
            text.split(' ').next()?.trim_end().parse().ok()
        })
        .collect()
}

/// The windows of a [`windows`] answer linked into the watch session only, but for its
/// `placeholder`: their own session was killed (or they were unlinked from it), so they must
/// end.
pub(crate) fn orphans(rows: &[Vec<u8>], placeholder: WindowId) -> Vec<WindowId> {
    rows.iter()
        .filter_map(|row| {
            let text = std::str::from_utf8(row).ok()?;
            let (window, links) = text.trim_end().split_once(' ')?;
            (links.parse::<u32>().ok()? <= 1).then(|| window.parse().ok())?
        })
        .filter(|window| *window != placeholder)
        .collect()
}

/// Lists the server's sessions by name (for [`only_watch_left`]).
pub(crate) fn sessions() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-sessions")
        .opt("-F", "#{session_name}")
        .build()
}

/// Whether a [`sessions`] answer holds the watch session alone: the server's last real session
/// has ended, and the server must be let exit.
pub(crate) fn only_watch_left(rows: &[Vec<u8>]) -> bool {
    rows.iter()
        .all(|row| row.trim_ascii() == WATCH_SESSION.as_bytes())
}

/// Reads a `list-panes -F '#{pane_id} #{window_id}'` answer: each pane's window.
pub fn pane_windows(rows: &[Vec<u8>]) -> HashMap<PaneId, WindowId> {
    rows.iter()
        .filter_map(|row| {
            let text = std::str::from_utf8(row).ok()?;
            let (pane, window) = text.trim_end().split_once(' ')?;
            Some((pane.parse().ok()?, window.parse().ok()?))
        })
        .collect()
}

/// What became of the watched panes (`live`: each pane and the window its stream is routed
/// to) by the watch session's pane list (`present`, read by [`pane_windows`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Departures {
    /// Panes still in the watch session, in another of its windows than their route says.
    pub moved: Vec<(PaneId, WindowId)>,
    /// Panes that left the watch session's windows, or whose window is not there and not being
    /// linked: moved to a window not linked, or gone, to be looked up.
    pub missing: Vec<PaneId>,
    /// Panes not in the list whose window is being linked: left to the link for now.
    pub left_to_links: usize,
}

/// Sorts the watched panes into [`Departures`]. A pane missing from the list whose window has
/// a link request (`requested`) and is not yet `linked` is its subscriber's to link: looking
/// it up would cost tmux a round trip per pane, and while thousands of links are in flight
/// that kept tmux busy long after they were done. Every other missing pane is looked up, so
/// one whose window was unlinked under its stream is found and linked again.
pub fn departures(
    live: &[(PaneId, WindowId)],
    present: &HashMap<PaneId, WindowId>,
    linked: &HashSet<WindowId>,
    requested: &HashSet<WindowId>,
) -> Departures {
    let mut found = Departures::default();
    for &(pane, window) in live {
        match present.get(&pane) {
            Some(now) if *now != window => found.moved.push((pane, *now)),
            Some(_) => {}
            None if requested.contains(&window) && !linked.contains(&window) => {
                found.left_to_links += 1;
            }
            None => found.missing.push(pane),
        }
    }
    found
}

/// Lists the terminal names of the clients attached to an existing watch session (the name is
/// taken: is it stale?). The target names the session's current window (`=name:`): a bare
/// `=name` is not read as a session by every command.
pub(crate) fn clients() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-clients")
        .opt("-t", format!("={WATCH_SESSION}:"))
        .opt("-F", "#{client_termname}")
        .build()
}

/// Whether a [`clients`] answer shows no client but this gateway's own (`ours`, its terminal
/// marker): then the session is a dead gateway's (this gateway's command client may have
/// attached to it for want of another session) and may be replaced.
pub(crate) fn is_stale(rows: &[Vec<u8>], ours: &str) -> bool {
    rows.iter()
        .all(|row| row.trim_ascii().is_empty() || row.trim_ascii() == ours.as_bytes())
}

/// Whether a [`clients`] answer shows this gateway's own command client (`ours`) attached to
/// the watch session: tmux attaches a client that names no session to the most recent one.
pub(crate) fn ours_attached(rows: &[Vec<u8>], ours: &str) -> bool {
    rows.iter().any(|row| row.trim_ascii() == ours.as_bytes())
}

/// Moves the client that runs it (this gateway's command client) to the next session, off a
/// stale watch session about to be killed: tmux (3.3a and 3.5a, measured) can crash when a
/// session is killed under an attached control client, writing a notification to the client
/// while it exits.
pub(crate) fn leave() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("switch-client").flag("-n").build()
}

/// Kills a stale watch session (left by a muxgate that is gone).
pub(crate) fn kill_stale() -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("kill-session")
        .opt("-t", format!("={WATCH_SESSION}"))
        .build()
}

/// Kills an orphaned window.
pub(crate) fn kill(window: WindowId) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("kill-window")
        .opt("-t", window.to_string())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_session_and_its_links() {
        assert_eq!(
            placeholder(SessionId(9)).unwrap().text(),
            "display-message -p -t '$9:' '#{window_id}'"
        );
        let windows = [
            (WindowId(4), SessionId(2)),
            (WindowId(5), SessionId(3)),
            (WindowId(6), SessionId(2)),
            (WindowId(7), SessionId(5)),
        ];
        let text = |switched: &[u32]| -> Vec<String> {
            let switched = switched.iter().map(|s| SessionId(*s)).collect();
            links(SessionId(9), &windows, &switched)
                .unwrap()
                .iter()
                .map(|line| {
                    let text: Vec<String> = line.commands.iter().map(|c| c.text()).collect();
                    let switch = line.switches.map(|s| format!("switch-client -t '{s}'"));
                    assert_eq!(text.get(1), switch.as_ref(), "`switches` names the switch");
                    text.join(" ; ")
                })
                .collect()
        };
        // One switch per owner, on its first window.
        assert_eq!(
            text(&[]),
            [
                "link-window -d -s '@4' -t '$9:' ; switch-client -t '$2'",
                "link-window -d -s '@5' -t '$9:' ; switch-client -t '$3'",
                "link-window -d -s '@6' -t '$9:'",
                "link-window -d -s '@7' -t '$9:' ; switch-client -t '$5'",
            ]
        );
        // None for an owner switched to before.
        assert_eq!(
            text(&[2, 5]),
            [
                "link-window -d -s '@4' -t '$9:'",
                "link-window -d -s '@5' -t '$9:' ; switch-client -t '$3'",
                "link-window -d -s '@6' -t '$9:'",
                "link-window -d -s '@7' -t '$9:'",
            ]
        );
        assert_eq!(
            String::from_utf8(
                unlink(SessionId(9), WindowId(4))
                    .unwrap()
                    .as_bytes()
                    .to_vec()
            )
            .unwrap(),
            "unlink-window -k -t '$9:@4'"
        );
    }

    #[test]
    fn reads_answers() {
        assert_eq!(
            listed(&[b"@1 2".to_vec(), b"@7 1".to_vec(), b"junk".to_vec()]),
            HashSet::from([WindowId(1), WindowId(7)])
        );
        assert_eq!(parse_placeholder(&[b"@30".to_vec()]), Some(WindowId(30)));
        assert_eq!(parse_placeholder(&[b"$12".to_vec()]), None);
        assert_eq!(parse_placeholder(&[]), None);
        assert_eq!(
            orphans(
                &[
                    b"@0 1".to_vec(),
                    b"@1 2".to_vec(),
                    b"@2 1".to_vec(),
                    b"junk".to_vec(),
                    b"@3 x".to_vec(),
                    b"@4 3".to_vec(),
                ],
                WindowId(0)
            ),
            vec![WindowId(2)]
        );
        assert!(only_watch_left(&[b"_muxgate".to_vec()]));
        assert!(!only_watch_left(&[b"_muxgate".to_vec(), b"work".to_vec()]));
    }

    #[test]
    fn panes_of_windows_being_linked_are_left_to_their_links() {
        let present = pane_windows(&[b"%1 @1".to_vec(), b"%2 @9".to_vec()]);
        let live = [
            (PaneId(1), WindowId(1)), // where it was
            (PaneId(2), WindowId(2)), // moved into another linked window
            (PaneId(3), WindowId(3)), // its window linked, the pane not there: moved away or gone
            (PaneId(4), WindowId(4)), // its window still being linked
            (PaneId(5), WindowId(5)), // its window neither linked nor being linked (unlinked)
            (PaneId(6), WindowId(6)), // a link recorded between the reads: in both sets
        ];
        let linked = HashSet::from([1, 2, 3, 6, 9].map(WindowId));
        let requested = HashSet::from([4, 6].map(WindowId));
        assert_eq!(
            departures(&live, &present, &linked, &requested),
            Departures {
                moved: vec![(PaneId(2), WindowId(9))],
                missing: vec![PaneId(3), PaneId(5), PaneId(6)],
                left_to_links: 1,
            }
        );
        let none = HashSet::new();
        assert_eq!(
            departures(&[], &HashMap::new(), &none, &none),
            Departures::default()
        );
    }

    #[test]
    fn reads_pane_windows_and_clients() {
        let panes = pane_windows(&[b"%1 @2".to_vec(), b"%3 @2".to_vec(), b"%x @2".to_vec()]);
        assert_eq!(panes.len(), 2);
        assert_eq!(panes.get(&PaneId(3)), Some(&WindowId(2)));
        assert!(is_stale(&[], "muxgate-7"));
        assert!(is_stale(&[b"muxgate-7".to_vec()], "muxgate-7"));
        assert!(!is_stale(
            &[b"muxgate-7".to_vec(), b"muxgate-8".to_vec()],
            "muxgate-7"
        ));
        assert!(!is_stale(&[b"xterm".to_vec()], "muxgate-7"));
        assert!(ours_attached(&[b"muxgate-7".to_vec()], "muxgate-7"));
        assert!(!ours_attached(&[b"muxgate-8".to_vec()], "muxgate-7"));
        assert!(!ours_attached(&[], "muxgate-7"));
        assert_eq!(
            clients().unwrap().text(),
            "list-clients -t '=_muxgate:' -F '#{client_termname}'"
        );
    }

    #[test]
    fn reads_a_panes_place() {
        assert_eq!(
            place(PaneId(3)).unwrap().text(),
            "display-message -p -t '%3' '#{pane_id} #{window_id} #{session_id} #{pid}/#{start_time}/#{pane_pid} #{session_name}'"
        );
        assert_eq!(
            parse_place(
                &[b"%3 @1 $2 77/1700000000/81 my session".to_vec()],
                PaneId(3)
            ),
            Some(PlaceRow {
                window: WindowId(1),
                session: SessionId(2),
                origin: "77/1700000000/81".into(),
                session_name: "my session".into()
            })
        );
        assert_eq!(
            parse_place(&[b"%4 @1 $2 7/1/8 x".to_vec()], PaneId(3)),
            None
        );
        assert_eq!(parse_place(&[b"%3 @1 $2".to_vec()], PaneId(3)), None);
        assert_eq!(parse_place(&[b"".to_vec()], PaneId(3)), None);
        assert_eq!(parse_place(&[], PaneId(3)), None);
    }

    #[test]
    fn knows_its_name() {
        assert!(is_watch_session("_muxgate"));
        assert!(!is_watch_session("_muxgate2"));
        assert!(!is_watch_session("work"));
    }
}
