//! A pane's size and cursor in one row: what a terminal emulator (the live view) or a
//! recording's header needs to show the pane as tmux has it.
//!
//! Pure: builds the command and reads its row; runs nothing.

use std::num::NonZeroU16;

use crate::wire::command::TmuxCommand;
use crate::wire::ids::PaneId;
use crate::wire::quote::QuoteError;

/// What [`PaneShape::command`] prints: the server's pid first, so that a reader can tell a
/// restarted server (whose pane ids start over) from the one it linked to.
const FORMAT: &str = "#{pid} #{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag}";

/// The pane's size and cursor, as tmux reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneShape {
    /// The tmux server's process.
    pub server_pid: u32,
    /// Width in cells.
    pub cols: NonZeroU16,
    /// Height in cells.
    pub rows: NonZeroU16,
    /// Cursor column inside the visible screen (0-based).
    pub cursor_x: u16,
    /// Cursor row inside the visible screen (0-based).
    pub cursor_y: u16,
    /// Whether the cursor is shown (tmux's `cursor_flag`).
    pub cursor_visible: bool,
}

impl PaneShape {
    /// `display-message -p` of the shape of `pane`; its one row goes to [`Self::parse`].
    pub(crate) fn command(pane: PaneId) -> Result<TmuxCommand, QuoteError> {
        TmuxCommand::new("display-message")
            .flag("-p")
            .target(pane)
            .trusted_format(FORMAT)
            .build()
    }

    /// The shape in a row `display-message` printed with this format; `None` for anything else (a zero size
    /// included: no emulator has one).
    pub fn parse(line: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(line).ok()?;
        let mut fields = text.split(' ');
        let server_pid = fields.next()?.parse::<u32>().ok()?;
        let mut next = || fields.next()?.parse::<u16>().ok();
        let cols = NonZeroU16::new(next()?)?;
        let rows = NonZeroU16::new(next()?)?;
        let cursor_x = next()?;
        let cursor_y = next()?;
        let cursor_visible = next()? != 0;
        Some(Self {
            server_pid,
            cols,
            rows,
            cursor_x,
            cursor_y,
            cursor_visible,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_is_read_strictly() {
        let shape = PaneShape::parse(b"77 80 24 3 5 1").unwrap();
        assert_eq!(shape.server_pid, 77);
        assert_eq!((shape.cols.get(), shape.rows.get()), (80, 24));
        assert_eq!(
            (shape.cursor_x, shape.cursor_y, shape.cursor_visible),
            (3, 5, true)
        );
        for bad in [
            &b""[..],
            b"77 80 24",
            b"77 0 24 0 0 1",
            b"77 80 24 x 0 1",
            b"80 24 3 5 1",
            b"\xff",
        ] {
            assert_eq!(PaneShape::parse(bad), None);
        }
    }

    #[test]
    fn the_command_names_the_pane_and_the_fields() {
        let line = PaneShape::command(PaneId(3)).unwrap().text();
        assert!(line.starts_with("display-message -p -t "), "{line}");
        assert!(line.contains("%3"), "{line}");
        assert!(
            line.contains("pane_width") && line.contains("cursor_flag"),
            "{line}"
        );
    }
}
