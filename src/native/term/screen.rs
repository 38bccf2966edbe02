//! One object the binding drives: the transcript, the current layout, the writer and the
//! scheduler. Changes mark a frame due; [`Screen::paint`] composes and writes it;
//! [`Screen::tick`] rewrites only the spinner's cells.

use super::inline::Inline;
use super::layout::Layout;
use super::render::{busy_text, compose, Ctx, Frame};
use super::schedule::Scheduler;
use super::style::{Line, Style};
use super::transcript::Transcript;
use super::writer::Writer;
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::Rect;
use std::time::Instant;

#[derive(Debug)]
pub struct Screen {
    pub transcript: Transcript,
    pub sched: Scheduler,
    layout: Layout,
    writer: Writer,
    size: (u16, u16),
    color: bool,
    last: Option<Frame>,
    /// Inline mode (no alternate screen): the band writer.
    inline: Option<Inline>,
    /// Inline mode: the band's row in the composed frame for each of its rows.
    band_rows: Vec<u16>,
    /// Mouse mode: a drag in the transcript, (column, screen row) where it started and now.
    selection: Option<((u16, u16), (u16, u16))>,
}

impl Screen {
    pub fn new(width: u16, height: u16, color: bool) -> Screen {
        Screen {
            transcript: Transcript::default(),
            sched: Scheduler::default(),
            layout: Layout::default(),
            writer: Writer::new(width, height),
            size: (width, height),
            color,
            last: None,
            inline: None,
            band_rows: Vec::new(),
            selection: None,
        }
    }

    /// Mouse mode: a press starts a selection in the transcript, a drag extends it (shown
    /// reversed), the release ends it and returns its logical text (see
    /// [`super::transcript::Transcript::selection_text`]) when it is not empty.
    pub fn mouse(&mut self, kind: super::input::MouseKind, col: u16, row: u16) -> Option<String> {
        use super::input::MouseKind;
        let rows = self.last.as_ref().map_or(0, |f| f.transcript_used);
        let in_transcript = row >= 1 && row <= rows;
        let clamp = |r: u16| r.clamp(1, rows.max(1));
        match kind {
            MouseKind::Down => {
                self.selection = in_transcript.then_some(((col, row), (col, row)));
            }
            MouseKind::Drag => {
                if let Some((_, head)) = &mut self.selection {
                    *head = (col, clamp(row));
                }
            }
            MouseKind::Up => {
                let ((c0, r0), _) = self.selection.take()?;
                self.sched.request();
                let (c1, r1) = (col, clamp(row));
                let text = self.transcript.selection_text(
                    ((r0 - 1) as usize, c0 as usize),
                    ((r1 - 1) as usize, c1 as usize),
                    self.size.0 as usize,
                );
                return (!text.is_empty()).then_some(text);
            }
        }
        self.sched.request();
        None
    }

    /// Inline mode: finished rows go to the terminal's scrollback, only a bottom band is
    /// redrawn (see [`super::inline`]). `regions`: scroll regions feed the scrollback (not
    /// under Zellij).
    pub fn set_inline(&mut self, regions: bool) {
        self.inline = Some(Inline::new(self.size.1, regions));
    }

    pub fn is_inline(&self) -> bool {
        self.inline.is_some()
    }

    /// Inline mode, leaving: writes every row not yet in scrollback (all of them, live or
    /// not, when `all`; else none), erases the band and leaves the cursor below the last row.
    pub fn finish_inline(&mut self, all: bool, out: &mut Vec<u8>) {
        let w = self.size.0;
        let commits = if all {
            self.transcript.take_commits(w as usize, true)
        } else {
            Vec::new()
        };
        if let Some(il) = &mut self.inline {
            il.finish(&commits, w, self.color, out);
        }
        self.sched.request();
    }

    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// A new layout description (Lua calls this once per change).
    pub fn set_layout(&mut self, layout: Layout, now: Instant) {
        self.sched.set_spinning(layout.busy.is_some(), now);
        if layout != self.layout {
            self.layout = layout;
            self.sched.request();
        }
    }

    /// Something in the transcript changed.
    pub fn changed(&mut self) {
        self.sched.request();
    }

    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.writer.resize(width, height);
        if let Some(il) = &mut self.inline {
            il.resize(height);
        }
        self.sched.request();
    }

    /// Clear and repaint everything on the next frame (Ctrl-L, after a suspend).
    pub fn invalidate(&mut self) {
        self.writer.invalidate();
        if let Some(il) = &mut self.inline {
            il.invalidate();
        }
        self.sched.request();
    }

    /// Transcript rows of the last frame (a page for PgUp/PgDn).
    pub fn page(&self) -> usize {
        self.last
            .as_ref()
            .map_or(self.size.1.saturating_sub(4), |f| f.transcript_rows) as usize
    }

    pub fn scroll(&mut self, rows: isize) {
        let (w, h) = (self.size.0 as usize, self.page());
        if rows < 0 {
            self.transcript.scroll_up(rows.unsigned_abs(), w, h);
        } else {
            self.transcript.scroll_down(rows as usize, w, h);
        }
        self.sched.request();
    }

    fn busy(&self, now: Instant) -> Option<String> {
        let since = self.sched.spinning_since()?;
        let label = self.layout.busy.as_ref().map_or("", |b| b.label.as_str());
        Some(busy_text(
            label,
            now.duration_since(since).as_millis() as u64,
        ))
    }

    /// Composes and writes a frame (nothing is appended when nothing changed on screen).
    pub fn paint(&mut self, now: Instant, out: &mut Vec<u8>) {
        let ctx = Ctx {
            color: self.color,
            busy: self.busy(now),
        };
        // Inline: the rows that became final leave the transcript's view before composing.
        let commits = if self.inline.is_some() {
            self.transcript.take_commits(self.size.0 as usize, false)
        } else {
            Vec::new()
        };
        let frame = compose(
            &self.layout,
            &mut self.transcript,
            self.size.0,
            self.size.1,
            &ctx,
        );
        if self.inline.is_some() {
            self.paint_band(frame, &commits, out);
        } else {
            let mut frame = frame;
            if let Some(((c0, r0), (c1, r1))) = self.selection {
                let (a, b) = if (r0, c0) <= (r1, c1) {
                    ((r0, c0), (r1, c1))
                } else {
                    ((r1, c1), (r0, c0))
                };
                let w = self.size.0;
                for y in a.0..=b.0.min(frame.transcript_used) {
                    let x0 = if y == a.0 { a.1 } else { 0 };
                    let x1 = if y == b.0 { b.1 + 1 } else { w };
                    for x in x0..x1.min(w) {
                        let cell = &mut frame.buf[(x, y)];
                        cell.modifier
                            .toggle(ratatui_core::style::Modifier::REVERSED);
                    }
                }
            }
            self.writer.frame(&frame.buf, frame.cursor, out);
            self.last = Some(frame);
        }
        self.sched.painted(now);
    }

    /// Inline mode: the frame without the transcript rows that hold nothing (the band is the
    /// status row, the live transcript tail and everything below it), after the finished rows.
    fn paint_band(&mut self, frame: Frame, commits: &[Line], out: &mut Vec<u8>) {
        let (w, h) = self.size;
        let keep: Vec<u16> = if self.layout.overlay.is_some() {
            (0..h).collect()
        } else {
            let used = 1 + frame.transcript_used;
            (0..used.min(h))
                .chain((1 + frame.transcript_rows).min(h)..h)
                .collect()
        };
        let mut band = Buffer::empty(Rect::new(0, 0, w, keep.len() as u16));
        for (i, &y) in keep.iter().enumerate() {
            for x in 0..w {
                band[(x, i as u16)] = frame.buf[(x, y)].clone();
            }
        }
        let cursor = frame
            .cursor
            .and_then(|(x, y)| keep.iter().position(|&k| k == y).map(|i| (x, i as u16)));
        if let Some(il) = &mut self.inline {
            il.frame(commits, &band, cursor, self.color, out);
        }
        self.band_rows = keep;
        self.last = Some(frame);
    }

    /// Rewrites the spinner's cells only.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.inline.is_some() {
            // The band is small: compose it again (the spinner's row is the only change).
            self.sched.request();
            return self.paint(now, out);
        }
        self.sched.ticked(now);
        let Some(text) = self.busy(now) else {
            return;
        };
        let Some(frame) = &mut self.last else {
            return;
        };
        let Some((x, y, w)) = frame.busy_slot else {
            return;
        };
        let (t, tw) = super::width::truncate(&text, w as usize);
        let padded = format!("{}{}", " ".repeat(w as usize - tw), t);
        frame.buf.set_stringn(
            x,
            y,
            padded,
            w as usize,
            Style::fg(super::style::Color::Cyan).to_ratatui(self.color),
        );
        self.writer.frame(&frame.buf, frame.cursor, out);
    }

    /// The text on screen as last painted, one string per row (tests).
    pub fn text(&self) -> Vec<String> {
        self.last
            .as_ref()
            .map(|f| super::render::buffer_text(&f.buf))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::term::layout::Busy;
    use crate::native::term::schedule::Next;
    use crate::native::term::style::Span;
    use crate::native::term::transcript::BlockSpec;
    use std::time::Duration;

    #[test]
    fn spinner_tick_writes_only_its_cells_and_idle_writes_nothing() {
        let t0 = Instant::now();
        let mut s = Screen::new(40, 8, true);
        s.transcript.push(BlockSpec {
            text: Some("x".repeat(30)),
            ..Default::default()
        });
        s.set_layout(
            Layout {
                status: vec![Span::plain("mock:model")],
                busy: Some(Busy::default()),
                ..Default::default()
            },
            t0,
        );
        let mut out = Vec::new();
        s.paint(t0, &mut out);
        let mut p = crate::native::term::vt(8, 40);
        p.process(&out);
        assert!(p.screen().contents().starts_with("mock:model"));
        assert_eq!(s.sched.next(t0), Next::At(t0 + Duration::from_millis(100)));
        let t1 = t0 + Duration::from_millis(100);
        let mut tick = Vec::new();
        s.tick(t1, &mut tick);
        // One spinner glyph changed: one cursor move, one SGR, one glyph, framing.
        assert!(tick.len() < 60, "{}", String::from_utf8_lossy(&tick));
        p.process(&tick);
        assert!(p
            .screen()
            .contents()
            .lines()
            .next()
            .is_some_and(|l| l.ends_with("⠙ 0s")));
        // Not busy and nothing changed: no timer, no bytes.
        s.set_layout(
            Layout {
                status: vec![Span::plain("mock:model")],
                ..Default::default()
            },
            t1,
        );
        let mut out = Vec::new();
        s.paint(t1, &mut out);
        assert_eq!(s.sched.next(t1 + Duration::from_secs(10)), Next::Idle);
        let mut nothing = Vec::new();
        s.paint(t1 + Duration::from_secs(1), &mut nothing);
        assert!(nothing.is_empty());
    }

    #[test]
    fn resize_rewraps_without_losing_or_doubling_lines() {
        let t0 = Instant::now();
        let mut s = Screen::new(30, 12, false);
        for i in 0..5 {
            s.transcript.push(BlockSpec {
                text: Some(format!("line {i} with some words")),
                ..Default::default()
            });
        }
        let mut p = crate::native::term::vt(12, 30);
        let mut out = Vec::new();
        s.paint(t0, &mut out);
        p.process(&out);
        for (w, h) in [(12u16, 16u16), (50, 10), (30, 12)] {
            s.resize(w, h);
            p.set_size(crate::native::term::nz(h), crate::native::term::nz(w));
            let mut out = Vec::new();
            s.paint(t0, &mut out);
            p.process(&out);
            let shown = p.screen().contents();
            let joined = shown.split_whitespace().collect::<Vec<_>>().join(" ");
            for i in 0..5 {
                assert_eq!(joined.matches(&format!("line {i} ")).count(), 1, "{shown}");
            }
        }
    }
}
