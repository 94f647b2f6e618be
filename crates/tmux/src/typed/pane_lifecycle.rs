//! Changes to the panes of one tmux server, as one caller: splitting, killing, respawning,
//! selecting, resizing, zooming, swapping, retitling and clearing.
//!
//! This module owns the command lines (and the pane rows a split or a selection prints, see
//! [`crate::ops::pane_row`]); callers get [`PaneRecord`]s and an [`OpError`] that says what
//! happened, not what to tell anyone about it. Which panes a caller may change, and which
//! one a relative selection lands on, is the caller's business.

use crate::ops::pane_row::PaneRecord;
use crate::typed::op_error::{OpError, first_failure, listed_after_change};
use crate::{BatchMode, Caller, CommandBuilder, PaneId, QuoteError, TmuxCommand, TmuxServer, ops};

/// How a new program starts in a pane (a split's, or a respawned one's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spawn {
    /// Its working directory (taken literally, never as a format).
    pub start_directory: Option<String>,
    /// A command for `sh -c` instead of the default program.
    pub shell: Option<String>,
    /// `NAME=value` assignments.
    pub environment: Vec<String>,
}

impl Spawn {
    /// Adds `-c`, `-e` and the command to a `split-window` / `respawn-pane` (after its
    /// target).
    fn apply(&self, mut command: CommandBuilder) -> CommandBuilder {
        if let Some(dir) = &self.start_directory {
            command = command.format_opt("-c", dir);
        }
        for assignment in &self.environment {
            command = command.opt("-e", assignment);
        }
        if let Some(shell) = &self.shell {
            command = command.end_of_options().arg(shell);
        }
        command
    }
}

/// Where a split puts the new pane, relative to the split one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitSide {
    /// Above the split pane.
    Above,
    /// Below the split pane.
    Below,
    /// Left of the split pane.
    Left,
    /// Right of the split pane.
    Right,
}

/// The size of a new pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitSize {
    /// A number of cells.
    Cells(u32),
    /// A percentage of the split pane.
    Percent(u32),
}

impl SplitSize {
    fn to_arg(self) -> String {
        match self {
            SplitSize::Cells(n) => n.to_string(),
            SplitSize::Percent(p) => format!("{p}%"),
        }
    }
}

/// A split: values already checked by the caller.
#[derive(Debug, Clone)]
pub struct Split {
    /// The pane to split (`%N`).
    pub pane: PaneId,
    /// Where the new pane goes.
    pub side: SplitSide,
    /// Default: half of the split pane.
    pub size: Option<SplitSize>,
    /// How the new pane's program starts.
    pub spawn: Spawn,
    /// Make the new pane active.
    pub select: bool,
}

impl Split {
    /// `split-window`, printing the new pane's row; `launch` is the argv of its program when
    /// [`Spawn::shell`] names none (default: tmux's default shell).
    fn command(&self, launch: Option<&[String]>) -> Result<TmuxCommand, QuoteError> {
        let mut command = TmuxCommand::new("split-window")
            .flag("-P")
            .opt("-F", PaneRecord::row_format());
        if !self.select {
            command = command.flag("-d");
        }
        command = match self.side {
            SplitSide::Below => command.flag("-v"),
            SplitSide::Above => command.flag("-v").flag("-b"),
            SplitSide::Right => command.flag("-h"),
            SplitSide::Left => command.flag("-h").flag("-b"),
        };
        if let Some(size) = self.size {
            command = command.opt("-l", size.to_arg());
        }
        let mut command = self.spawn.apply(command.target(self.pane));
        if self.spawn.shell.is_none()
            && let Some(argv) = launch
        {
            command = ops::shell::with_launch(command, argv);
        }
        command.build()
    }
}

/// Which pane of a window to make active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneSelection {
    /// This pane.
    Pane(PaneId),
    /// The pane above this one (tmux picks; none there leaves the active pane).
    Above(PaneId),
    /// The pane below this one.
    Below(PaneId),
    /// The pane left of this one.
    LeftOf(PaneId),
    /// The pane right of this one.
    RightOf(PaneId),
    /// The pane active before the current one, in this pane's window.
    LastIn(PaneId),
}

impl PaneSelection {
    fn command(self) -> CommandBuilder {
        let select = TmuxCommand::new("select-pane");
        match self {
            PaneSelection::Pane(pane) => select.target(pane),
            PaneSelection::Above(pane) => select.flag("-U").target(pane),
            PaneSelection::Below(pane) => select.flag("-D").target(pane),
            PaneSelection::LeftOf(pane) => select.flag("-L").target(pane),
            PaneSelection::RightOf(pane) => select.flag("-R").target(pane),
            PaneSelection::LastIn(pane) => select.flag("-l").target(pane),
        }
    }
}

/// The panes of one tmux server, changed as `caller` (the engine's fairness key).
#[derive(Clone)]
pub struct TmuxPaneLifecycle {
    server: TmuxServer,
    caller: Caller,
}

impl TmuxPaneLifecycle {
    /// The panes of `server`, changed as `caller`.
    pub fn new(server: TmuxServer, caller: Caller) -> Self {
        Self { server, caller }
    }

    async fn run(&self, command: CommandBuilder) -> Result<Vec<Vec<u8>>, OpError> {
        Ok(self.server.run(&self.caller, command.build()?).await?)
    }

    /// Splits a pane; the new pane's row (`None` when tmux printed none that parses).
    pub async fn split(
        &self,
        split: &Split,
        launch: Option<&[String]>,
    ) -> Result<Option<PaneRecord>, OpError> {
        let rows = self
            .server
            .run(&self.caller, split.command(launch)?)
            .await?;
        Ok(rows.first().and_then(|row| PaneRecord::parse(row)))
    }

    /// Kills a pane and its program.
    pub async fn kill(&self, pane: PaneId) -> Result<(), OpError> {
        self.run(TmuxCommand::new("kill-pane").target(pane)).await?;
        Ok(())
    }

    /// Restarts a pane's program as `spawn` says, killing the running one first if `kill`
    /// (else tmux respawns only a dead pane).
    pub async fn respawn(&self, pane: PaneId, kill: bool, spawn: &Spawn) -> Result<(), OpError> {
        let mut command = TmuxCommand::new("respawn-pane");
        if kill {
            command = command.flag("-k");
        }
        self.run(spawn.apply(command.target(pane))).await?;
        Ok(())
    }

    /// Makes a pane active, then lists the panes of `window_of`'s window on the same line: the
    /// window as the selection left it.
    pub async fn select(
        &self,
        selection: PaneSelection,
        window_of: PaneId,
    ) -> Result<Vec<PaneRecord>, OpError> {
        let list = TmuxCommand::new("list-panes")
            .target(window_of)
            .opt("-F", PaneRecord::row_format())
            .build()?;
        let outcomes = self
            .server
            .run_batch(
                &self.caller,
                vec![selection.command().build()?, list],
                BatchMode::StopOnError,
                None,
            )
            .await?;
        Ok(listed_after_change(&outcomes)?
            .iter()
            .filter_map(|row| PaneRecord::parse(row))
            .collect())
    }

    /// Zooms a pane to fill its window, or unzooms it (tmux toggles).
    pub async fn toggle_zoom(&self, pane: PaneId) -> Result<(), OpError> {
        self.run(TmuxCommand::new("resize-pane").flag("-Z").target(pane))
            .await?;
        Ok(())
    }

    /// Resizes a pane in cells (unzooming its window).
    pub async fn resize(
        &self,
        pane: PaneId,
        width: Option<u32>,
        height: Option<u32>,
    ) -> Result<(), OpError> {
        let mut command = TmuxCommand::new("resize-pane").target(pane);
        if let Some(width) = width {
            command = command.opt("-x", width.to_string());
        }
        if let Some(height) = height {
            command = command.opt("-y", height.to_string());
        }
        self.run(command).await?;
        Ok(())
    }

    /// Swaps the places of two panes, leaving the active pane as it was.
    pub async fn swap(&self, source: PaneId, target: PaneId) -> Result<(), OpError> {
        self.run(
            TmuxCommand::new("swap-pane")
                .flag("-d")
                .opt("-s", source.to_string())
                .target(target),
        )
        .await?;
        Ok(())
    }

    /// Sets a pane's title, taken literally.
    pub async fn set_title(&self, pane: PaneId, title: &str) -> Result<(), OpError> {
        // select-pane -T sets the title and returns before touching the active pane.
        self.run(
            TmuxCommand::new("select-pane")
                .target(pane)
                .format_opt("-T", title),
        )
        .await?;
        Ok(())
    }

    /// Clears a pane's screen and its scrollback history, on one line.
    pub async fn clear(&self, pane: PaneId) -> Result<(), OpError> {
        let commands = vec![
            TmuxCommand::new("send-keys")
                .flag("-R")
                .target(pane)
                .build()?,
            TmuxCommand::new("clear-history").target(pane).build()?,
        ];
        let outcomes = self
            .server
            .run_batch(&self.caller, commands, BatchMode::StopOnError, None)
            .await?;
        first_failure(&outcomes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(command: CommandBuilder) -> String {
        command.build().unwrap().text()
    }

    #[test]
    fn spawn_options_are_quoted_after_the_target() {
        let spawn = Spawn {
            start_directory: Some("/tmp/#dir".into()),
            shell: Some("echo hi".into()),
            environment: vec!["A_1=x y;#{z}".into()],
        };
        assert_eq!(
            line(spawn.apply(TmuxCommand::new("respawn-pane").target(PaneId(1)))),
            "respawn-pane -t '%1' -c '/tmp/##dir' -e 'A_1=x y;#{z}' -- 'echo hi'"
        );
    }

    #[test]
    fn splits_say_where_and_how_big() {
        let split = |side, size, shell: Option<&str>| Split {
            pane: PaneId(2),
            side,
            size,
            spawn: Spawn {
                shell: shell.map(str::to_owned),
                ..Spawn::default()
            },
            select: false,
        };
        let launch = ["/bin/zsh".to_owned()];
        let text = |split: Split, launch: Option<&[String]>| split.command(launch).unwrap().text();
        let left = text(
            split(SplitSide::Left, Some(SplitSize::Percent(30)), None),
            None,
        );
        assert!(left.starts_with("split-window -P -F "), "{left}");
        assert!(left.ends_with(" -d -h -b -l '30%' -t '%2'"), "{left}");
        let below = text(
            split(SplitSide::Below, Some(SplitSize::Cells(5)), None),
            Some(&launch),
        );
        assert!(
            below.ends_with(" -v -l '5' -t '%2' -- '/bin/zsh'"),
            "{below}"
        );
        let own = text(split(SplitSide::Above, None, Some("top")), Some(&launch));
        assert!(
            own.ends_with(" -v -b -t '%2' -- 'top'"),
            "a shell of the caller's replaces the launch: {own}"
        );
    }

    #[test]
    fn selections_carry_their_direction() {
        let pane = PaneId(7);
        let cases = [
            (PaneSelection::Pane(pane), "select-pane -t '%7'"),
            (PaneSelection::Above(pane), "select-pane -U -t '%7'"),
            (PaneSelection::Below(pane), "select-pane -D -t '%7'"),
            (PaneSelection::LeftOf(pane), "select-pane -L -t '%7'"),
            (PaneSelection::RightOf(pane), "select-pane -R -t '%7'"),
            (PaneSelection::LastIn(pane), "select-pane -l -t '%7'"),
        ];
        for (selection, expected) in cases {
            assert_eq!(line(selection.command()), expected);
        }
    }
}
