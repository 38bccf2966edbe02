//! Inline mode's writer: no alternate screen. Finished transcript rows are written once, above
//! a bottom band (the live tail, panels, notices, input, status), and scroll into the
//! terminal's own scrollback; only the band is ever rewritten, and never with `CSI 3J`.
//!
//! Positions are relative: the band starts where the cursor was when the UI opened and the
//! writer only knows the cursor's row inside the band, so no cursor-position query (which
//! would wait on the terminal) is needed. Rows are pushed into scrollback by plain newlines
//! at the bottom of the screen. Once the band has reached the bottom of the screen its
//! absolute row is known, and finished rows are then inserted above it through a scroll
//! region (`DECSTBM`) without touching the band at all; terminals whose scroll regions do not
//! feed the scrollback (Zellij) keep the plain-newline path, which rewrites the band below
//! the new rows instead.

use super::render::put_line;
use super::style::Line;
use super::writer::{put_cell, Pen, SYNC_BEGIN, SYNC_END};
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::Rect;
use std::io::Write;

#[derive(Debug)]
pub struct Inline {
    /// The band as last written; None when the terminal's copy is unknown (write it all).
    band: Option<Buffer>,
    /// The cursor's row inside the band after the last write.
    cur_row: u16,
    cursor: Option<(u16, u16)>,
    /// Scroll regions may be used (false under Zellij).
    regions: bool,
    /// Screen height.
    height: u16,
    /// The cursor's absolute row when known (it was driven to the bottom row by newlines
    /// since the last resize), else a lower bound of it.
    row: u16,
    exact: bool,
}

impl Inline {
    pub fn new(height: u16, regions: bool) -> Inline {
        Inline {
            band: None,
            cur_row: 0,
            cursor: None,
            regions,
            height: height.max(1),
            row: 0,
            exact: false,
        }
    }

    /// After a resize the terminal may have moved rows (and the cursor) around; the band is
    /// redrawn from the cursor's band row, and the absolute row is unknown again.
    pub fn resize(&mut self, height: u16) {
        self.height = height.max(1);
        self.band = None;
        self.exact = false;
        self.row = 0;
    }

    /// The terminal's content is unknown (Ctrl-L, after a suspend): rewrite the band.
    pub fn invalidate(&mut self) {
        self.band = None;
    }

    fn newline(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\r\n");
        if self.row + 1 >= self.height {
            self.row = self.height - 1;
            self.exact = true;
        } else {
            self.row += 1;
        }
    }

    fn up(&mut self, n: u16, out: &mut Vec<u8>) {
        if n > 0 {
            let _ = write!(out, "\x1b[{n}A");
            self.row = self.row.saturating_sub(n);
        }
    }

    fn down(&mut self, n: u16, out: &mut Vec<u8>) {
        if n > 0 {
            let _ = write!(out, "\x1b[{n}B");
            self.row = (self.row + n).min(self.height - 1);
        }
    }

    /// Writes `commits` (finished rows, once) and brings the band up to date with `band`
    /// (its rows are the band's rows); `cursor` is in band coordinates. Appends nothing when
    /// nothing changed.
    pub fn frame(
        &mut self,
        commits: &[Line],
        band: &Buffer,
        cursor: Option<(u16, u16)>,
        color: bool,
        out: &mut Vec<u8>,
    ) {
        if commits.is_empty() && self.band.as_ref() == Some(band) && cursor == self.cursor {
            return;
        }
        let w = band.area.width;
        out.extend_from_slice(SYNC_BEGIN);
        out.extend_from_slice(b"\x1b[?25l");
        let cur = self.cur_row;
        self.up(cur, out);
        out.push(b'\r');
        if !commits.is_empty() {
            let old_h = self.band.as_ref().map_or(0, |b| b.area.height);
            let top = self.row;
            // Only while the band ends on the last row: otherwise the free rows below it take
            // the new rows (plain newlines move the band down).
            let at_bottom = top + old_h >= self.height;
            if self.regions && self.exact && self.band.is_some() && top > 0 && at_bottom {
                // The band sits at the bottom: scroll the rows above it up and write each
                // finished row into the freed last row of that region.
                let _ = write!(out, "\x1b[1;{top}r\x1b[{top};1H");
                for l in commits {
                    out.extend_from_slice(b"\n\r\x1b[K");
                    line_bytes(l, w, color, out);
                }
                let _ = write!(out, "\x1b[r\x1b[{};1H", top + 1);
            } else {
                for l in commits {
                    out.extend_from_slice(b"\x1b[K");
                    line_bytes(l, w, color, out);
                    self.newline(out);
                }
                self.band = None;
            }
        }
        let n = band.area.height;
        let same = self.band.as_ref().is_some_and(|b| b.area == band.area);
        let mut at = 0u16;
        if same {
            let old = self.band.take();
            for y in 0..n {
                let changed = old.as_ref().is_none_or(|o| !row_eq(o, band, y));
                if changed {
                    if y > at {
                        self.down(y - at, out);
                        at = y;
                    }
                    out.extend_from_slice(b"\r\x1b[K");
                    row_bytes(band, y, out);
                }
            }
        } else {
            out.extend_from_slice(b"\x1b[J");
            for y in 0..n {
                if y > 0 {
                    self.newline(out);
                }
                out.extend_from_slice(b"\r\x1b[K");
                row_bytes(band, y, out);
            }
            at = n.saturating_sub(1);
        }
        out.extend_from_slice(b"\x1b[0m");
        let (cx, cy) = cursor.unwrap_or((0, n.saturating_sub(1)));
        let cy = cy.min(n.saturating_sub(1));
        if cy < at {
            self.up(at - cy, out);
        } else {
            self.down(cy - at, out);
        }
        let _ = write!(out, "\x1b[{}G", cx + 1);
        if cursor.is_some() {
            out.extend_from_slice(b"\x1b[?25h");
        }
        out.extend_from_slice(SYNC_END);
        self.cur_row = cy;
        self.cursor = cursor;
        self.band = Some(band.clone());
    }

    /// Erases the band and leaves the cursor where it started (below the last finished row),
    /// then writes `commits` there (exit: everything left; suspend: nothing).
    pub fn finish(&mut self, commits: &[Line], width: u16, color: bool, out: &mut Vec<u8>) {
        let cur = self.cur_row;
        self.up(cur, out);
        out.extend_from_slice(b"\r\x1b[J");
        for l in commits {
            line_bytes(l, width, color, out);
            out.extend_from_slice(b"\x1b[0m");
            self.newline(out);
        }
        out.extend_from_slice(b"\x1b[0m\x1b[?25h");
        self.cur_row = 0;
        self.cursor = None;
        self.band = None;
    }
}

fn row_eq(a: &Buffer, b: &Buffer, y: u16) -> bool {
    (0..a.area.width).all(|x| a[(x, y)] == b[(x, y)])
}

/// Row `y` of `buf` as bytes (styles and text; trailing blank cells left out).
fn row_bytes(buf: &Buffer, y: u16, out: &mut Vec<u8>) {
    let w = buf.area.width;
    let blank = ratatui_core::buffer::Cell::EMPTY;
    let end = (0..w)
        .rev()
        .find(|&x| buf[(x, y)] != blank)
        .map_or(0, |x| x + 1);
    let mut style: Pen = None;
    let mut skip = 0usize;
    for x in 0..end {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        skip = put_cell(&buf[(x, y)], &mut style, out).saturating_sub(1);
    }
    out.extend_from_slice(b"\x1b[0m");
}

/// A styled line (at most `width` cells) as bytes.
fn line_bytes(line: &Line, width: u16, color: bool, out: &mut Vec<u8>) {
    let mut buf = Buffer::empty(Rect::new(0, 0, width.max(1), 1));
    put_line(&mut buf, 0, 0, line, width.max(1), color);
    row_bytes(&buf, 0, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::term::style::Style;

    fn band(rows: &[&str], w: u16) -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, w, rows.len() as u16));
        for (i, r) in rows.iter().enumerate() {
            b.set_string(0, i as u16, r, Style::PLAIN.to_ratatui(false));
        }
        b
    }

    fn vt(h: u16, w: u16) -> vt100::Parser {
        vt100::Parser::new(crate::native::term::nz(h), crate::native::term::nz(w), 1000)
    }

    /// Everything the emulator holds: scrollback, then the screen.
    fn all_rows(p: &mut vt100::Parser) -> Vec<String> {
        let (rows, cols) = p.screen().size();
        p.screen_mut().set_scrollback(usize::MAX);
        let back = p.screen().scrollback();
        let mut out = Vec::new();
        // Scrollback pages, oldest first.
        let mut off = back;
        while off > 0 {
            p.screen_mut().set_scrollback(off);
            let page: Vec<String> = p.screen().rows(0, cols.get()).collect();
            let take = (off).min(rows.get() as usize);
            out.extend(page.into_iter().take(take));
            off -= take;
        }
        p.screen_mut().set_scrollback(0);
        out.extend(p.screen().rows(0, cols.get()));
        out
    }

    #[test]
    fn commits_scroll_into_scrollback_once_and_the_band_is_redrawn() {
        for regions in [true, false] {
            let mut p = vt(6, 20);
            p.process(b"$ fen --inline\r\n");
            let mut il = Inline::new(6, regions);
            let mut out = Vec::new();
            il.frame(
                &[],
                &band(&["status", "> "], 20),
                Some((2, 1)),
                false,
                &mut out,
            );
            for i in 0..12 {
                let l = Line::plain(format!("row {i}"));
                il.frame(
                    &[l],
                    &band(&["status", "> x"], 20),
                    Some((3, 1)),
                    false,
                    &mut out,
                );
            }
            // Idle: nothing.
            let mut none = Vec::new();
            il.frame(
                &[],
                &band(&["status", "> x"], 20),
                Some((3, 1)),
                false,
                &mut none,
            );
            assert!(none.is_empty());
            p.process(&out);
            let rows = all_rows(&mut p);
            let text = rows.join("\n");
            for i in 0..12 {
                let n = rows
                    .iter()
                    .filter(|r| r.trim_end() == format!("row {i}"))
                    .count();
                assert_eq!(n, 1, "regions {regions}: row {i}\n{text}");
            }
            assert_eq!(
                rows.iter().filter(|r| r.starts_with("status")).count(),
                1,
                "{text}"
            );
            assert!(rows[0].starts_with("$ fen"), "{text}");
            assert_eq!(p.screen().contents().lines().last(), Some("> x"));
            let uses_region = out.windows(5).any(|w| w == b"\x1b[1;4");
            assert_eq!(uses_region, regions, "{}", String::from_utf8_lossy(&out));
            let mut end = Vec::new();
            il.finish(&[Line::plain("last")], 20, false, &mut end);
            p.process(&end);
            let rows = all_rows(&mut p);
            assert!(!rows.iter().any(|r| r.starts_with("status")));
            assert_eq!(rows.iter().filter(|r| r.trim_end() == "last").count(), 1);
        }
    }
}
