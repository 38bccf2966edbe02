//! Writes frames: diffs the new cell buffer against the last one written and emits only the
//! changed cells, inside synchronized output (DEC 2026) so the terminal shows whole frames.
//! The screen is cleared only when the terminal's content is unknown (start, resize, resume,
//! Ctrl-L); a frame with nothing changed writes no byte at all.

use ratatui_core::buffer::{Buffer, Cell};
use ratatui_core::layout::Rect;
use ratatui_core::style::{Color, Modifier};
use std::io::Write;

pub const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
pub const SYNC_END: &[u8] = b"\x1b[?2026l";

#[derive(Debug)]
pub struct Writer {
    front: Buffer,
    /// The next frame clears and repaints everything.
    full: bool,
    cursor: Option<(u16, u16)>,
}

impl Writer {
    pub fn new(width: u16, height: u16) -> Writer {
        Writer {
            front: Buffer::empty(Rect::new(0, 0, width, height)),
            full: true,
            cursor: None,
        }
    }

    /// The terminal's content is unknown: clear and repaint on the next frame.
    pub fn invalidate(&mut self) {
        self.full = true;
    }

    pub fn resize(&mut self, width: u16, height: u16) {
        self.front = Buffer::empty(Rect::new(0, 0, width, height));
        self.full = true;
    }

    pub fn size(&self) -> (u16, u16) {
        (self.front.area.width, self.front.area.height)
    }

    /// The last buffer written.
    pub fn front(&self) -> &Buffer {
        &self.front
    }

    /// Appends the bytes that turn the screen from the last frame into `back` to `out`
    /// (nothing when nothing changed). `back` must have the writer's size.
    pub fn frame(&mut self, back: &Buffer, cursor: Option<(u16, u16)>, out: &mut Vec<u8>) {
        if back.area != self.front.area {
            self.resize(back.area.width, back.area.height);
        }
        let full = std::mem::take(&mut self.full);
        if full {
            self.front = Buffer::empty(back.area);
        }
        let diff = self.front.diff(back);
        if diff.is_empty() && !full && cursor == self.cursor {
            return;
        }
        out.extend_from_slice(SYNC_BEGIN);
        out.extend_from_slice(b"\x1b[?25l");
        if full {
            out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
        }
        let mut at: Option<(u16, u16)> = None;
        let mut style: Pen = None;
        for (x, y, cell) in diff {
            if at != Some((x, y)) {
                let _ = write!(out, "\x1b[{};{}H", y + 1, x + 1);
            }
            let w = put_cell(cell, &mut style, out).max(1) as u16;
            at = Some((x + w, y));
        }
        out.extend_from_slice(b"\x1b[0m");
        if let Some((x, y)) = cursor {
            let _ = write!(out, "\x1b[{};{}H\x1b[?25h", y + 1, x + 1);
        }
        out.extend_from_slice(SYNC_END);
        self.front = back.clone();
        self.cursor = cursor;
    }
}

/// The style currently set on the terminal (fg, bg, attributes), to skip repeating it.
pub(crate) type Pen = Option<(Color, Color, Modifier)>;

/// Writes one cell (its style first when it differs from `pen`); returns its display width
/// (0 for the trailing half of a wide character's symbol).
pub(crate) fn put_cell(cell: &Cell, pen: &mut Pen, out: &mut Vec<u8>) -> usize {
    let s = (cell.fg, cell.bg, cell.modifier);
    if *pen != Some(s) {
        sgr(cell, out);
        *pen = Some(s);
    }
    let sym = cell.symbol();
    out.extend_from_slice(if sym.is_empty() { b" " } else { sym.as_bytes() });
    super::width::str_width(sym)
}

fn sgr(cell: &Cell, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x1b[0");
    for (bit, code) in [
        (Modifier::BOLD, ";1"),
        (Modifier::DIM, ";2"),
        (Modifier::ITALIC, ";3"),
        (Modifier::UNDERLINED, ";4"),
        (Modifier::REVERSED, ";7"),
        (Modifier::CROSSED_OUT, ";9"),
    ] {
        if cell.modifier.contains(bit) {
            out.extend_from_slice(code.as_bytes());
        }
    }
    colour(cell.fg, 30, out);
    colour(cell.bg, 40, out);
    out.push(b'm');
}

fn colour(c: Color, base: u8, out: &mut Vec<u8>) {
    let n = match c {
        Color::Reset => return,
        Color::Black => base,
        Color::Red => base + 1,
        Color::Green => base + 2,
        Color::Yellow => base + 3,
        Color::Blue => base + 4,
        Color::Magenta => base + 5,
        Color::Cyan => base + 6,
        Color::Gray => base + 7,
        Color::DarkGray => base + 60,
        Color::LightRed => base + 61,
        Color::LightGreen => base + 62,
        Color::LightYellow => base + 63,
        Color::LightBlue => base + 64,
        Color::LightMagenta => base + 65,
        Color::LightCyan => base + 66,
        Color::White => base + 67,
        Color::Indexed(i) => {
            let _ = write!(out, ";{};5;{i}", base + 8);
            return;
        }
        Color::Rgb(r, g, b) => {
            let _ = write!(out, ";{};2;{r};{g};{b}", base + 8);
            return;
        }
    };
    let _ = write!(out, ";{n}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::term::style::{Color as C, Style};

    fn screen(bytes: &[u8], w: u16, h: u16) -> vt100::Parser {
        let mut p = crate::native::term::vt(h, w);
        p.process(bytes);
        p
    }

    #[test]
    fn diffs_in_synchronized_output_and_writes_nothing_when_unchanged() {
        let mut w = Writer::new(20, 3);
        let mut back = Buffer::empty(Rect::new(0, 0, 20, 3));
        back.set_string(
            0,
            0,
            "hello 日本",
            Style::fg(C::Red).bold().to_ratatui(true),
        );
        back.set_string(0, 2, "bottom", Style::PLAIN.to_ratatui(true));
        let mut out = Vec::new();
        w.frame(&back, Some((3, 2)), &mut out);
        assert!(out.starts_with(SYNC_BEGIN) && out.ends_with(SYNC_END));
        let mut p = screen(&out, 20, 3);
        assert_eq!(p.screen().contents(), "hello 日本\n\nbottom");
        let cell = p.screen().cell(0, 0).map(|c| (c.fgcolor(), c.bold()));
        assert_eq!(cell, Some((vt100::Color::Idx(1), true)));
        assert_eq!(p.screen().cursor_position(), (2, 3));

        // The same frame again: not a byte.
        let mut again = Vec::new();
        w.frame(&back, Some((3, 2)), &mut again);
        assert!(again.is_empty());

        // One changed cell: a short write, no clear.
        back.set_string(1, 2, "O", Style::PLAIN.to_ratatui(true));
        let mut small = Vec::new();
        w.frame(&back, Some((3, 2)), &mut small);
        assert!(!small.windows(4).any(|x| x == b"\x1b[2J"));
        assert!(small.len() < 50, "{}", String::from_utf8_lossy(&small));
        p.process(&small);
        assert_eq!(p.screen().contents(), "hello 日本\n\nbOttom");

        // A wide char replaced by narrow ones.
        back.set_string(6, 0, "abcd", Style::fg(C::Red).bold().to_ratatui(true));
        let mut out = Vec::new();
        w.frame(&back, Some((3, 2)), &mut out);
        p.process(&out);
        assert_eq!(p.screen().contents(), "hello abcd\n\nbOttom");
    }

    #[test]
    fn invalidate_clears_once() {
        let mut w = Writer::new(10, 2);
        let mut back = Buffer::empty(Rect::new(0, 0, 10, 2));
        back.set_string(0, 0, "x", Style::PLAIN.to_ratatui(false));
        let mut out = Vec::new();
        w.frame(&back, None, &mut out);
        assert!(out.windows(4).any(|x| x == b"\x1b[2J"));
        let mut p = screen(b"garbage everywhere", 10, 2);
        w.invalidate();
        let mut out = Vec::new();
        w.frame(&back, None, &mut out);
        p.process(&out);
        assert_eq!(p.screen().contents(), "x");
    }
}
