//! A screen as HTML: one `<span>` per run of cells with the same colours and attributes, the
//! cursor drawn as an inverted cell. Every character of the pane is HTML-escaped: what a
//! program prints is the attacker's, and reaches the page as text, never as markup.
//!
//! Colours are written as `style` attributes the renderer computes from numbers alone (the
//! xterm palette for indexed colours), so no byte of the pane reaches an attribute.

use std::fmt::Write as _;

use vt100::{Color, Screen};

/// How one cell looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Look {
    fg: Option<(u8, u8, u8)>,
    bg: Option<(u8, u8, u8)>,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
    cursor: bool,
}

impl Look {
    fn is_plain(&self) -> bool {
        *self == Look::default()
    }

    /// Opens a span for this look.
    fn open(&self, out: &mut String) {
        let mut classes = Vec::new();
        for (on, class) in [
            (self.bold, "b"),
            (self.dim, "d"),
            (self.italic, "i"),
            (self.underline, "u"),
            (self.cursor, "cur"),
        ] {
            if on {
                classes.push(class);
            }
        }
        // Inverse swaps the colours; the page's defaults stand in for "default".
        let (fg, bg) = if self.inverse {
            (self.bg.or(Some(DEFAULT_BG)), self.fg.or(Some(DEFAULT_FG)))
        } else {
            (self.fg, self.bg)
        };
        out.push_str("<span");
        if !classes.is_empty() {
            let _ = write!(out, " class=\"{}\"", classes.join(" "));
        }
        let mut style = String::new();
        if let Some((r, g, b)) = fg {
            let _ = write!(style, "color:#{r:02x}{g:02x}{b:02x};");
        }
        if let Some((r, g, b)) = bg {
            let _ = write!(style, "background:#{r:02x}{g:02x}{b:02x};");
        }
        if !style.is_empty() {
            let _ = write!(out, " style=\"{style}\"");
        }
        out.push('>');
    }
}

/// The page's default foreground and background (what `inverse` swaps in for "default").
const DEFAULT_FG: (u8, u8, u8) = (0xd0, 0xd0, 0xd0);
const DEFAULT_BG: (u8, u8, u8) = (0x10, 0x10, 0x10);

/// The screen as HTML rows separated by `\n`, for a `<pre>`: every row and every cell, so the
/// page shows the pane at its size.
pub(crate) fn screen_html(screen: &Screen) -> String {
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    let (cursor_row, cursor_col) = screen.cursor_position();
    let show_cursor = !screen.hide_cursor();
    let mut out = String::with_capacity(usize::from(rows) * usize::from(cols) * 2);
    for row in 0..rows {
        if row > 0 {
            out.push('\n');
        }
        let mut line = Vec::with_capacity(usize::from(cols));
        for col in 0..cols {
            let Some(cell) = screen.cell(row, col) else {
                continue;
            };
            if cell.is_wide_continuation() {
                continue;
            }
            let look = Look {
                fg: rgb(cell.fgcolor()),
                bg: rgb(cell.bgcolor()),
                bold: cell.bold(),
                dim: cell.dim(),
                italic: cell.italic(),
                underline: cell.underline(),
                inverse: cell.inverse(),
                cursor: show_cursor && row == cursor_row && col == cursor_col,
            };
            let text = if cell.has_contents() {
                cell.contents()
            } else {
                " "
            };
            line.push((look, text));
        }
        // Every cell, trailing blanks too: the page is as wide as the pane.
        push_runs(&line, &mut out);
    }
    out
}

/// Writes cells as runs of equal looks.
fn push_runs(cells: &[(Look, &str)], out: &mut String) {
    let mut current: Option<Look> = None;
    for (look, text) in cells {
        if current != Some(*look) {
            if current.is_some_and(|c| !c.is_plain()) {
                out.push_str("</span>");
            }
            if !look.is_plain() {
                look.open(out);
            }
            current = Some(*look);
        }
        escape_into(text, out);
    }
    if current.is_some_and(|c| !c.is_plain()) {
        out.push_str("</span>");
    }
}

/// HTML-escapes `text` (element content and quoted attribute values alike).
pub(crate) fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters never reach a cell's contents, but a stray one is shown as
            // the replacement character rather than passed to the page.
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// A colour as RGB; `None` for the terminal's default.
fn rgb(color: Color) -> Option<(u8, u8, u8)> {
    match color {
        Color::Default => None,
        Color::Rgb(r, g, b) => Some((r, g, b)),
        Color::Idx(i) => Some(xterm_palette(i)),
    }
}

/// The xterm 256-colour palette.
fn xterm_palette(index: u8) -> (u8, u8, u8) {
    const BASE: [(u8, u8, u8); 16] = [
        (0x00, 0x00, 0x00),
        (0xcd, 0x00, 0x00),
        (0x00, 0xcd, 0x00),
        (0xcd, 0xcd, 0x00),
        (0x00, 0x00, 0xee),
        (0xcd, 0x00, 0xcd),
        (0x00, 0xcd, 0xcd),
        (0xe5, 0xe5, 0xe5),
        (0x7f, 0x7f, 0x7f),
        (0xff, 0x00, 0x00),
        (0x00, 0xff, 0x00),
        (0xff, 0xff, 0x00),
        (0x5c, 0x5c, 0xff),
        (0xff, 0x00, 0xff),
        (0x00, 0xff, 0xff),
        (0xff, 0xff, 0xff),
    ];
    match index {
        0..=15 => BASE[usize::from(index)],
        16..=231 => {
            let i = index - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            (level(i / 36), level((i / 6) % 6), level(i % 6))
        }
        _ => {
            let v = 8 + (index - 232) * 10;
            (v, v, v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The HTML with each row's trailing blanks cut, to compare with short literals.
    fn trimmed(html: &str) -> String {
        html.split('\n')
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn screen(bytes: &[u8]) -> vt100::Parser {
        let rows = std::num::NonZeroU16::new(4).unwrap();
        let cols = std::num::NonZeroU16::new(40).unwrap();
        let mut parser = vt100::Parser::new(rows, cols, 0);
        parser.process(bytes);
        parser
    }

    #[test]
    fn markup_printed_in_the_pane_is_text() {
        let parser = screen(b"<script>alert('x')</script>&\"");
        let html = screen_html(parser.screen());
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.starts_with("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"),
            "{html}"
        );
    }

    #[test]
    fn colours_and_attributes_become_spans() {
        let parser = screen(b"\x1b[1;31mred\x1b[0m plain \x1b[38;2;1;2;3;48;5;21mrgb\x1b[0m");
        let html = screen_html(parser.screen());
        assert!(
            html.starts_with("<span class=\"b\" style=\"color:#cd0000;\">red</span> plain "),
            "{html}"
        );
        assert!(
            html.contains("<span style=\"color:#010203;background:#0000ff;\">rgb</span>"),
            "{html}"
        );
    }

    #[test]
    fn the_cursor_is_drawn_where_it_is() {
        let parser = screen(b"ab\r\ncd\x1b[1;2H");
        let html = screen_html(parser.screen());
        assert_eq!(trimmed(&html), "a<span class=\"cur\">b</span>\ncd\n\n");
        assert_eq!(
            html.split('\n').nth(1).map(str::len),
            Some(40),
            "rows are the pane's width"
        );
        let hidden = screen(b"ab\x1b[?25l");
        assert!(!screen_html(hidden.screen()).contains("cur"));
    }

    #[test]
    fn inverse_swaps_default_colours() {
        let parser = screen(b"\x1b[7mx\x1b[0m\x1b[?25l");
        assert_eq!(
            trimmed(&screen_html(parser.screen())),
            "<span style=\"color:#101010;background:#d0d0d0;\">x</span>\n\n\n"
        );
    }

    #[test]
    fn the_palette_matches_xterm() {
        assert_eq!(xterm_palette(16), (0, 0, 0));
        assert_eq!(xterm_palette(21), (0, 0, 0xff));
        assert_eq!(xterm_palette(196), (0xff, 0, 0));
        assert_eq!(xterm_palette(232), (8, 8, 8));
        assert_eq!(xterm_palette(255), (0xee, 0xee, 0xee));
    }
}
