//! Resolving tmux's path `SESSION:WINDOW[.PANE]` ([`TargetPath`]) to an id, exactly.
//!
//! The gateway lists the session's panes (one `list-panes -s` naming the session by id or as
//! `=name`, so tmux matches it exactly too) and matches the rest itself: WINDOW is a window
//! index, else an exact window name (an index wins, as in tmux); PANE a pane index. Nothing is
//! matched by prefix or pattern, and nothing is read relative to a client. A path that names
//! nothing is missing; one that names several objects (two windows with the same name, or
//! `logs.1` naming both a window so called and pane 1 of window `logs`) is ambiguous; both
//! errors name the candidates, so a model can pick an id without another call.
//!
//! Whether the caller may see the session is the tool layer's check, made before any candidate
//! is named. Pure: the command, its rows and the match.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use muxgate_mux::lines::excerpt;

use crate::wire::format::{row_format, split_row};
use crate::wire::ids::parse_decimal;
use crate::wire::target::{PathReading, Target, TargetPath};
use crate::{PaneId, QuoteError, TmuxCommand, WindowId};

/// `-F` fields of a path row; the free-text names last.
const PATH_FIELDS: [&str; 8] = [
    "session_id",
    "session_created",
    "window_id",
    "window_index",
    "pane_id",
    "pane_index",
    "session_name",
    "window_name",
];

/// Candidates named in an error, at most.
const MAX_CANDIDATES: usize = 12;

/// The rows of every pane of the path's session.
pub(crate) fn path_command(path: &TargetPath) -> Result<TmuxCommand, QuoteError> {
    TmuxCommand::new("list-panes")
        .flag("-s")
        .opt("-t", path.session.tmux_target())
        .opt("-F", row_format(&PATH_FIELDS))
        .build()
}

/// One window of the session and its panes, as the rows report them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWindow {
    /// The window's id, `@N`.
    pub id: WindowId,
    /// The window's index in the session.
    pub index: u32,
    /// The window's name.
    pub name: String,
    /// Pane index and id, in index order.
    pub panes: Vec<(u32, PaneId)>,
}

/// A session's windows and panes, as the rows of `list-panes -s` report them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLayout {
    /// `$N`, as printed.
    pub session_id: String,
    /// The session's creation time, as printed.
    pub session_created: String,
    /// The session's name.
    pub session_name: String,
    /// In index order.
    pub windows: Vec<PathWindow>,
}

impl SessionLayout {
    /// Reads [`path_command`]'s rows; `None` when none is a path row. Rows that are not are
    /// skipped.
    pub(crate) fn parse(rows: &[Vec<u8>]) -> Option<Self> {
        let mut session = None;
        let mut windows: BTreeMap<u32, PathWindow> = BTreeMap::new();
        for f in rows
            .iter()
            .filter_map(|row| split_row(row, PATH_FIELDS.len()))
        {
            let (Ok(window_id), Ok(window_index), Ok(pane_id), Ok(pane_index)) = (
                f[2].parse::<WindowId>(),
                f[3].parse::<u32>(),
                f[4].parse::<PaneId>(),
                f[5].parse::<u32>(),
            ) else {
                continue;
            };
            session.get_or_insert_with(|| (f[0].clone(), f[1].clone(), f[6].clone()));
            windows
                .entry(window_index)
                .or_insert_with(|| PathWindow {
                    id: window_id,
                    index: window_index,
                    name: f[7].clone(),
                    panes: Vec::new(),
                })
                .panes
                .push((pane_index, pane_id));
        }
        let (session_id, session_created, session_name) = session?;
        let mut windows: Vec<PathWindow> = windows.into_values().collect();
        for window in &mut windows {
            window.panes.sort_unstable();
        }
        Some(Self {
            session_id,
            session_created,
            session_name,
            windows,
        })
    }

    /// The windows a WINDOW part names: the one at that index, else those of that exact name.
    fn windows_named(&self, window: &str) -> Vec<&PathWindow> {
        if let Some(index) = parse_decimal(window.as_bytes())
            && let Some(found) = self.windows.iter().find(|w| w.index == index)
        {
            return vec![found];
        }
        self.windows.iter().filter(|w| w.name == window).collect()
    }

    /// What one reading of the path names.
    fn named_by(&self, reading: PathReading<'_>) -> Vec<Target> {
        let windows = self.windows_named(reading.window);
        match reading.pane {
            None => windows.iter().map(|w| Target::Window(w.id)).collect(),
            Some(index) => windows
                .iter()
                .flat_map(|w| w.panes.iter().filter(move |(i, _)| *i == index))
                .map(|(_, pane)| Target::Pane(*pane))
                .collect(),
        }
    }
}

/// Why a path names no single object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// No window of the session matches.
    #[error(
        "session {session} has no window {window:?} (an index or an exact name); its windows: {windows}"
    )]
    NoWindow {
        /// The session's name (cut after 64 characters).
        session: String,
        /// What follows the path's colon, as written (cut after 64 characters).
        window: String,
        /// The session's windows, for the message (`1 "logs" (@4)`, …; `none` when empty).
        windows: String,
    },
    /// The window is there, without a pane at that index.
    #[error("window {window} of session {session} has no pane {pane}; its panes: {panes}")]
    NoPane {
        /// The session's name (cut after 64 characters).
        session: String,
        /// The window, as the message labels it (`1 "logs" (@4)`).
        window: String,
        /// The pane index asked for.
        pane: u32,
        /// The window's panes, for the message (`0 (%3)`, …; `none` when empty).
        panes: String,
    },
    /// The path names several objects.
    #[error("{path:?} names more than one object: {candidates}")]
    Ambiguous {
        /// The path, as written (cut after 64 characters).
        path: String,
        /// The objects it names, for the message.
        candidates: String,
    },
}

impl PathError {
    /// Whether the path names several objects (the caller must choose) rather than none.
    pub fn is_ambiguous(&self) -> bool {
        matches!(self, Self::Ambiguous { .. })
    }
}

/// The one object `path` names in `layout` (the listing of its session), exactly.
pub fn resolve_path(path: &TargetPath, layout: &SessionLayout) -> Result<Target, PathError> {
    let readings = path.readings();
    let mut named: Vec<Target> = Vec::new();
    for reading in &readings {
        for target in layout.named_by(*reading) {
            if !named.contains(&target) {
                named.push(target);
            }
        }
    }
    match named.as_slice() {
        [one] => return Ok(one.clone()),
        [] => {}
        several => {
            return Err(PathError::Ambiguous {
                path: excerpt(&path.to_string()),
                candidates: candidates(several.iter().map(|t| describe(layout, t))),
            });
        }
    }
    let session = excerpt(&layout.session_name);
    // The reading with a pane, when its window is there, tells what is missing best.
    for reading in readings.iter().rev() {
        if let Some(pane) = reading.pane
            && let [window] = layout.windows_named(reading.window).as_slice()
        {
            return Err(PathError::NoPane {
                session,
                window: window_label(window),
                pane,
                panes: candidates(
                    window
                        .panes
                        .iter()
                        .map(|(index, id)| format!("{index} ({id})")),
                ),
            });
        }
    }
    Err(PathError::NoWindow {
        session,
        window: excerpt(path.tail()),
        windows: candidates(layout.windows.iter().map(window_label)),
    })
}

/// `1 "logs" (@4)`.
fn window_label(window: &PathWindow) -> String {
    format!(
        "{} {:?} ({})",
        window.index,
        excerpt(&window.name),
        window.id
    )
}

/// How an error names one candidate: the window, or the pane and where it is.
fn describe(layout: &SessionLayout, target: &Target) -> String {
    let place = |pane: &PaneId| {
        layout.windows.iter().find_map(|w| {
            w.panes
                .iter()
                .find(|(_, id)| id == pane)
                .map(|(index, _)| (w, *index))
        })
    };
    match target {
        Target::Window(id) => match layout.windows.iter().find(|w| w.id == *id) {
            Some(window) => format!("window {}", window_label(window)),
            None => format!("window {id}"),
        },
        Target::Pane(id) => match place(id) {
            Some((window, index)) => {
                format!(
                    "pane {id} (pane {index} of window {})",
                    window_label(window)
                )
            }
            None => format!("pane {id}"),
        },
        Target::Session(session) => format!("session {session}"),
    }
}

/// A list of candidates for a message, cut after [`MAX_CANDIDATES`]; `none` when empty.
fn candidates(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return "none".to_owned();
    }
    let mut out = items
        .iter()
        .take(MAX_CANDIDATES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > MAX_CANDIDATES {
        let _ = write!(out, " and {} more", items.len() - MAX_CANDIDATES);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;
    use crate::wire::target::ClientTarget;

    fn path(text: &str) -> TargetPath {
        match ClientTarget::parse(text) {
            Ok(ClientTarget::Path(path)) => path,
            other => panic!("{text:?} is not a path: {other:?}"),
        }
    }

    /// Session `work` ($1): window 0 "editor" (@1) with panes 0 %1 and 1 %2; window 1 "logs"
    /// (@2) with pane 0 %3; window 3 "logs.1" (@3) with pane 0 %4; window 4 "1" (@5) with
    /// pane 0 %6; window 5 "dup" (@6) pane %7 and window 6 "dup" (@7) pane %8; window 8 "2"
    /// (@8) with pane 0 %10.
    fn layout() -> SessionLayout {
        let row = |window: &str, index: &str, pane: &str, pane_index: &str, name: &str| {
            encode_row(&[
                "$1",
                "1700000000",
                window,
                index,
                pane,
                pane_index,
                "work",
                name,
            ])
        };
        let rows = vec![
            row("@2", "1", "%3", "0", "logs"),
            row("@1", "0", "%2", "1", "editor"),
            row("@1", "0", "%1", "0", "editor"),
            row("@3", "3", "%4", "0", "logs.1"),
            row("@5", "4", "%6", "0", "1"),
            row("@6", "5", "%7", "0", "dup"),
            row("@7", "6", "%8", "0", "dup"),
            row("@8", "8", "%10", "0", "2"),
            b"not a row".to_vec(),
        ];
        SessionLayout::parse(&rows).unwrap()
    }

    fn resolve(text: &str) -> Result<Target, PathError> {
        resolve_path(&path(text), &layout())
    }

    #[test]
    fn the_command_names_the_session_exactly() {
        let line = path_command(&path("work:1.0")).unwrap().text();
        assert!(line.starts_with("list-panes -s -t '=work' -F "), "{line}");
        assert!(line.contains("window_name"), "{line}");
        let line = path_command(&path("$4:1")).unwrap().text();
        assert!(line.starts_with("list-panes -s -t '$4' -F "), "{line}");
    }

    #[test]
    fn rows_become_windows_in_index_order() {
        let layout = layout();
        assert_eq!(layout.session_id, "$1");
        assert_eq!(layout.session_name, "work");
        let indexes: Vec<u32> = layout.windows.iter().map(|w| w.index).collect();
        assert_eq!(indexes, [0, 1, 3, 4, 5, 6, 8]);
        assert_eq!(
            layout.windows[0].panes,
            [(0, PaneId(1)), (1, PaneId(2))],
            "panes in index order"
        );
        assert_eq!(SessionLayout::parse(&[b"junk".to_vec()]), None);
    }

    #[test]
    fn indexes_and_exact_names_resolve_to_ids() {
        assert_eq!(resolve("work:0.1"), Ok(Target::Pane(PaneId(2))));
        assert_eq!(resolve("work:0"), Ok(Target::Window(WindowId(1))));
        assert_eq!(resolve("work:editor"), Ok(Target::Window(WindowId(1))));
        assert_eq!(resolve("work:editor.0"), Ok(Target::Pane(PaneId(1))));
        assert_eq!(resolve("work:logs.0"), Ok(Target::Pane(PaneId(3))));
        // An index wins over a window named like one (as in tmux)...
        assert_eq!(resolve("work:1"), Ok(Target::Window(WindowId(2))));
        // ...and a name is used when no window has that index.
        assert_eq!(resolve("work:2"), Ok(Target::Window(WindowId(8))));
        assert_eq!(resolve("work:4.0"), Ok(Target::Pane(PaneId(6))));
        // A name with a dot that reads no other way.
        assert_eq!(resolve("work:logs.1.0"), Ok(Target::Pane(PaneId(4))));
    }

    #[test]
    fn never_by_prefix_or_pattern() {
        for text in [
            "work:edit",
            "work:edi*",
            "work:Editor",
            "work:01",
            "work:e?itor",
        ] {
            assert!(
                matches!(resolve(text), Err(PathError::NoWindow { .. })),
                "{text}"
            );
        }
    }

    #[test]
    fn ambiguity_names_every_candidate() {
        // Window "logs.1", or pane 1 of window "logs" (which has none): only the window.
        assert_eq!(resolve("work:logs.1"), Ok(Target::Window(WindowId(3))));
        let err = resolve("work:dup").unwrap_err();
        assert!(err.is_ambiguous());
        let message = err.to_string();
        assert!(
            message.contains("@6") && message.contains("@7") && message.contains("\"dup\""),
            "{message}"
        );
    }

    #[test]
    fn a_window_named_like_a_pane_reading_is_ambiguous() {
        let mut layout = layout();
        layout.windows[1].panes.push((1, PaneId(9)));
        let err = resolve_path(&path("work:logs.1"), &layout).unwrap_err();
        let message = err.to_string();
        assert!(err.is_ambiguous(), "{message}");
        assert!(
            message.contains("window 3 \"logs.1\" (@3)") && message.contains("pane %9"),
            "{message}"
        );
    }

    #[test]
    fn missing_objects_name_what_is_there() {
        let message = resolve("work:9").unwrap_err().to_string();
        assert!(
            message.contains("no window \"9\"")
                && message.contains("0 \"editor\" (@1)")
                && message.contains("1 \"logs\" (@2)"),
            "{message}"
        );
        let err = resolve("work:0.7").unwrap_err();
        assert!(!err.is_ambiguous());
        let message = err.to_string();
        assert!(
            message.contains("no pane 7") && message.contains("0 (%1), 1 (%2)"),
            "{message}"
        );
        assert!(
            resolve("work:nosuch.0")
                .unwrap_err()
                .to_string()
                .contains("no window \"nosuch.0\"")
        );
    }

    #[test]
    fn messages_stay_short() {
        let row = |i: u32| {
            encode_row(&[
                "$1",
                "1",
                &format!("@{i}"),
                &i.to_string(),
                &format!("%{i}"),
                "0",
                "s",
                &"n".repeat(300),
            ])
        };
        let layout = SessionLayout::parse(&(0..500).map(row).collect::<Vec<_>>()).unwrap();
        let message = resolve_path(&path("s:x"), &layout).unwrap_err().to_string();
        assert!(message.len() < 1500, "{}", message.len());
        assert!(message.ends_with("and 488 more"), "{message}");
    }
}
