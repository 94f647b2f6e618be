//! The windows of one tmux server, as one caller: listing, creating, renaming, selecting,
//! resizing, laying out, moving and killing them.
//!
//! This module owns the command lines and the `-F` rows they print; callers get [`Window`]
//! values and an [`OpError`] that says what happened, not what to tell anyone about it.
//! Who may see a window is the caller's business: rows come back unfiltered, each with its
//! session's creation time so that the caller can tell which session it is.
//!
//! An operation that changes a window lists its session's windows on the same line, right
//! after the change, so the answer shows the window as the change left it and nothing else
//! can run in between.

use crate::ops;
use crate::typed::op_error::{OpError, first_failure, listed_after_change};
use crate::wire::format::{flag, row_format, split_row};
use crate::{
    BatchMode, Caller, CommandBuilder, CommandOutcome, QuoteError, SessionId, TmuxCommand,
    TmuxServer, WindowId,
};

/// `-F` fields of a window row; the window name (free text) last.
const WINDOW_FIELDS: [&str; 13] = [
    "window_id",
    "window_index",
    "session_id",
    "window_active",
    "window_panes",
    "window_width",
    "window_height",
    "window_zoomed_flag",
    "pane_id",
    "window_layout",
    "session_created",
    "session_name",
    "window_name",
];

/// A window in the session it was named through (a window may be linked into several): what
/// an act on one window of a session needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocatedWindow {
    /// The window.
    pub window: WindowId,
    /// Its session.
    pub session: SessionId,
}

impl std::fmt::Display for LocatedWindow {
    /// The window's id (`@N`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.window.fmt(f)
    }
}

/// One tmux window, as linked into one session (a window linked into several sessions has a
/// row in each).
// No more field docs: each would be schema text in every tools/list.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Window {
    /// Window id (`@N`): the stable way to target it.
    pub id: WindowId,
    /// Its position in the session's window list.
    pub index: u32,
    pub name: String,
    /// The session it is listed in (`$N`).
    pub session_id: String,
    pub session_name: String,
    /// That session's creation time, seconds since the Unix epoch (for the ownership check;
    /// not answered).
    #[serde(skip)]
    pub session_created: u64,
    /// Whether it is the session's current window.
    pub active: bool,
    /// Number of panes.
    pub panes: u32,
    /// Size in character cells.
    pub width: u32,
    pub height: u32,
    /// Whether a pane is zoomed to fill it.
    pub zoomed: bool,
    /// Its active pane (`%N`).
    pub active_pane_id: String,
    /// tmux's layout string (usable with select_layout).
    pub layout: String,
}

/// Parses one row printed with [`WINDOW_FIELDS`]. A row without its session's creation time
/// is dropped: the session id alone does not say which session it is across server restarts.
fn parse_window_row(line: &[u8]) -> Option<Window> {
    let f = split_row(line, WINDOW_FIELDS.len())?;
    Some(Window {
        id: f[0].parse().ok()?,
        index: f[1].parse().ok()?,
        session_id: f[2].clone(),
        active: flag(&f[3]),
        panes: f[4].parse().unwrap_or(0),
        width: f[5].parse().unwrap_or(0),
        height: f[6].parse().unwrap_or(0),
        zoomed: flag(&f[7]),
        active_pane_id: f[8].clone(),
        layout: f[9].clone(),
        session_created: f[10].parse().ok()?,
        session_name: f[11].clone(),
        name: f[12].clone(),
    })
}

fn parse_windows(rows: &[Vec<u8>]) -> Vec<Window> {
    rows.iter()
        .filter_map(|row| parse_window_row(row))
        .collect()
}

/// `list-windows` of one session (a tmux target, `$N`), or of all (`-a`).
fn list_command(session: Option<&str>) -> Result<TmuxCommand, QuoteError> {
    let command = TmuxCommand::new("list-windows");
    let command = match session {
        Some(session) => command.opt("-t", session),
        None => command.flag("-a"),
    };
    command.opt("-F", row_format(&WINDOW_FIELDS)).build()
}

/// Which side of a window another one goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Before the window (`-b`).
    Before,
    /// After the window (`-a`).
    After,
}

impl Side {
    fn flag(self) -> &'static str {
        match self {
            Side::Before => "-b",
            Side::After => "-a",
        }
    }
}

/// Where a window is created or moved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Next to a window.
    Beside(WindowId, Side),
    /// At the session's next free index.
    In(SessionId),
}

impl Place {
    /// The position flag, if any, then `-t`: both come before a command's other options.
    fn flags_and_target(self, command: CommandBuilder) -> CommandBuilder {
        match self {
            Place::Beside(window, side) => command.flag(side.flag()).target(window),
            Place::In(session) => command.target(session),
        }
    }
}

/// A window to create: values already checked by the caller.
#[derive(Debug, Clone)]
pub struct NewWindow {
    /// Where it goes.
    pub place: Place,
    /// Its name (default: tmux names it after its program).
    pub name: Option<String>,
    /// Its pane's directory (taken literally, never as a format).
    pub start_directory: Option<String>,
    /// `NAME`, `value` pairs for its pane.
    pub environment: Vec<(String, String)>,
    /// Make it its session's current window.
    pub select: bool,
}

impl NewWindow {
    /// `new-window`, printing the window's row; `launch` is the argv of its program
    /// (default: tmux's default shell).
    fn command(&self, launch: Option<&[String]>) -> Result<TmuxCommand, QuoteError> {
        let mut command = TmuxCommand::new("new-window")
            .flag("-P")
            .opt("-F", row_format(&WINDOW_FIELDS));
        if !self.select {
            command = command.flag("-d");
        }
        command = self.place.flags_and_target(command);
        if let Some(name) = &self.name {
            command = command.opt("-n", name);
        }
        if let Some(dir) = &self.start_directory {
            command = command.format_opt("-c", dir);
        }
        for (name, value) in &self.environment {
            command = command.opt("-e", format!("{name}={value}"));
        }
        if let Some(argv) = launch {
            command = ops::shell::with_launch(command, argv);
        }
        command.build()
    }
}

/// Which window of a session to make current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// This window.
    Window(WindowId),
    /// The next by index, wrapping.
    Next,
    /// The previous by index, wrapping.
    Previous,
    /// The one current before the current one.
    Last,
}

impl Selection {
    fn command(self, session: SessionId) -> CommandBuilder {
        match self {
            Selection::Window(window) => TmuxCommand::new("select-window").target(window),
            Selection::Next => TmuxCommand::new("next-window").target(session),
            Selection::Previous => TmuxCommand::new("previous-window").target(session),
            Selection::Last => TmuxCommand::new("last-window").target(session),
        }
    }
}

/// The windows of one tmux server, acted on as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxWindows {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxWindows {
    /// The windows of `server`, acted on as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    /// The windows of one session (a tmux target, `$N`), or of every session.
    pub async fn list(&self, session: Option<&str>) -> Result<Vec<Window>, OpError> {
        let rows = self
            .server
            .run(&self.caller, list_command(session)?)
            .await?;
        Ok(parse_windows(&rows))
    }

    /// Creates a window running `launch` (default: tmux's default shell).
    pub async fn create(
        &self,
        window: &NewWindow,
        launch: Option<&[String]>,
    ) -> Result<Window, OpError> {
        let rows = self
            .server
            .run(&self.caller, window.command(launch)?)
            .await?;
        rows.iter()
            .find_map(|row| parse_window_row(row))
            .ok_or(OpError::Unanswered)
    }

    /// Kills `window` of `session`; whether that session ended with it (it was its last).
    pub async fn kill(&self, window: WindowId, session: SessionId) -> Result<bool, OpError> {
        let kill = TmuxCommand::new("kill-window").target(window).build()?;
        let still_there = TmuxCommand::new("has-session").target(session).build()?;
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                vec![kill, still_there],
                BatchMode::Independent,
                None,
            )
            .await?;
        let [kill, session] = outcomes.as_slice() else {
            return Err(OpError::Unanswered);
        };
        first_failure(std::slice::from_ref(kill))?;
        Ok(!matches!(session, CommandOutcome::Ok(_)))
    }

    /// Renames `window` (tmux then stops naming it after its program); `session`'s windows
    /// afterwards.
    pub async fn rename(
        &self,
        window: WindowId,
        session: SessionId,
        name: &str,
    ) -> Result<Vec<Window>, OpError> {
        let rename = TmuxCommand::new("rename-window")
            .target(window)
            .end_of_options()
            .arg(name);
        self.change(rename, session).await
    }

    /// Makes a window `session`'s current one; its windows afterwards.
    pub async fn select(
        &self,
        selection: Selection,
        session: SessionId,
    ) -> Result<Vec<Window>, OpError> {
        self.change(selection.command(session), session).await
    }

    /// Sets `window`'s size (its `window-size` becomes manual); `session`'s windows
    /// afterwards.
    pub async fn resize(
        &self,
        window: WindowId,
        session: SessionId,
        width: Option<u32>,
        height: Option<u32>,
    ) -> Result<Vec<Window>, OpError> {
        let mut resize = TmuxCommand::new("resize-window").target(window);
        if let Some(width) = width {
            resize = resize.opt("-x", width.to_string());
        }
        if let Some(height) = height {
            resize = resize.opt("-y", height.to_string());
        }
        self.change(resize, session).await
    }

    /// Arranges `window`'s panes by a layout name or string (tmux checks it); `session`'s
    /// windows afterwards.
    pub async fn select_layout(
        &self,
        window: WindowId,
        session: SessionId,
        layout: &str,
    ) -> Result<Vec<Window>, OpError> {
        let select = TmuxCommand::new("select-layout")
            .target(window)
            .end_of_options()
            .arg(layout);
        self.change(select, session).await
    }

    /// Moves `window` to `place` (in `session`), making it that session's current window if
    /// `select`; `session`'s windows afterwards.
    pub async fn move_to(
        &self,
        window: WindowId,
        place: Place,
        session: SessionId,
        select: bool,
    ) -> Result<Vec<Window>, OpError> {
        let mut command = TmuxCommand::new("move-window");
        if !select {
            command = command.flag("-d");
        }
        if let Place::Beside(_, side) = place {
            command = command.flag(side.flag());
        }
        let command = command.opt("-s", window.to_string()).opt(
            "-t",
            match place {
                Place::Beside(window, _) => window.to_string(),
                Place::In(session) => session.to_string(),
            },
        );
        self.change(command, session).await
    }

    /// Runs `command`, then lists `session`'s windows on the same line.
    async fn change(
        &self,
        command: CommandBuilder,
        session: SessionId,
    ) -> Result<Vec<Window>, OpError> {
        let list = list_command(Some(&session.to_string()))?;
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                vec![command.build()?, list],
                BatchMode::StopOnError,
                None,
            )
            .await?;
        Ok(parse_windows(listed_after_change(&outcomes)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::format::encode_row;

    #[test]
    fn rows_parse_with_the_name_last() {
        let line = encode_row(&[
            "@3",
            "2",
            "$1",
            "1",
            "2",
            "80",
            "24",
            "0",
            "%5",
            "abcd,80x24,0,0",
            "1700000000",
            "main",
            "my editor|x",
        ]);
        let w = parse_window_row(&line).unwrap();
        assert_eq!(
            (w.id, w.index, w.session_id.as_str()),
            (WindowId(3), 2, "$1")
        );
        assert_eq!(w.session_created, 1_700_000_000);
        assert!(w.active && !w.zoomed);
        assert_eq!((w.width, w.height, w.panes), (80, 24, 2));
        assert_eq!(w.active_pane_id, "%5");
        assert_eq!(w.layout, "abcd,80x24,0,0");
        assert_eq!(w.name, "my editor|x", "a separator in the last field stays");
        assert!(parse_window_row(b"@1|not-a-number").is_none());
        assert_eq!(parse_windows(&[line, b"junk".to_vec()]).len(), 1);
    }

    fn line(command: CommandBuilder) -> String {
        command.build().unwrap().text()
    }

    #[test]
    fn places_put_the_side_before_the_target() {
        assert_eq!(Side::Before.flag(), "-b");
        assert_eq!(Side::After.flag(), "-a");
        let beside = Place::Beside(WindowId(4), Side::After);
        assert_eq!(
            line(beside.flags_and_target(TmuxCommand::new("new-window"))),
            "new-window -a -t '@4'"
        );
        assert_eq!(
            line(Place::In(SessionId(2)).flags_and_target(TmuxCommand::new("new-window"))),
            "new-window -t '$2'"
        );
    }

    #[test]
    fn a_new_window_is_one_command_with_every_value_quoted() {
        let window = NewWindow {
            place: Place::In(SessionId(1)),
            name: Some("edit;".into()),
            start_directory: Some("/tmp/#x".into()),
            environment: vec![("A".into(), "1;".into())],
            select: false,
        };
        let plain = window.command(None).unwrap().text();
        assert!(plain.starts_with("new-window -P -F "), "{plain}");
        assert!(
            plain.ends_with(" -d -t '$1' -n 'edit;' -c '/tmp/##x' -e 'A=1;'"),
            "{plain}"
        );
        let launch = ["/bin/zsh".to_owned()];
        let integrated = window.command(Some(&launch)).unwrap();
        assert!(integrated.as_bytes().ends_with(b" -- '/bin/zsh'"));
    }

    #[test]
    fn selections_target_the_window_or_its_session() {
        let session = SessionId(1);
        assert_eq!(
            line(Selection::Window(WindowId(4)).command(session)),
            "select-window -t '@4'"
        );
        assert_eq!(
            line(Selection::Next.command(session)),
            "next-window -t '$1'"
        );
        assert_eq!(
            line(Selection::Previous.command(session)),
            "previous-window -t '$1'"
        );
        assert_eq!(
            line(Selection::Last.command(session)),
            "last-window -t '$1'"
        );
    }
}
