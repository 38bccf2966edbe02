//! Composes one frame: the layout description and the visible transcript rows into a cell
//! buffer. Top to bottom: the status row, the transcript, panels, the completion menu,
//! notices, a rule, the input; an overlay is drawn over the middle. Cost: the screen's cells
//! plus the visible blocks, whatever the transcript's length.

use super::layout::{Input, Layout, Overlay};
use super::style::{Color, Line, Span, Style};
use super::transcript::Transcript;
use super::width::{grapheme_width, str_width, truncate, wrap_line, wrap_text};
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::Rect;
use unicode_segmentation::UnicodeSegmentation;

/// Cells reserved at the right end of the status row for the spinner and elapsed time.
pub const BUSY_SLOT: u16 = 18;

/// What a composed frame is: the cells, where the cursor goes, and where the spinner is.
#[derive(Debug, Clone)]
pub struct Frame {
    pub buf: Buffer,
    pub cursor: Option<(u16, u16)>,
    /// The busy slot (x, y, width) when a spinner shows.
    pub busy_slot: Option<(u16, u16, u16)>,
    /// Rows the transcript got.
    pub transcript_rows: u16,
    /// Of those, the rows with transcript content (from row 1).
    pub transcript_used: u16,
}

/// Per-frame inputs that are not in the layout.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    /// Colours on (false under NO_COLOR).
    pub color: bool,
    /// The spinner text when busy (already formatted, see [`busy_text`]).
    pub busy: Option<String>,
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// `⠋ working 1m05s`: the spinner frame for `elapsed_ms` (10 frames a second) and the time.
pub fn busy_text(label: &str, elapsed_ms: u64) -> String {
    let frame = SPINNER[((elapsed_ms / 100) % 10) as usize];
    let s = elapsed_ms / 1000;
    let t = if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    };
    if label.is_empty() {
        format!("{frame} {t}")
    } else {
        format!("{frame} {label} {t}")
    }
}

fn dim() -> Style {
    Style::PLAIN.dim()
}

/// Draws `line` at (x, y), at most `max` cells; returns the x after it.
pub fn put_line(buf: &mut Buffer, x: u16, y: u16, line: &Line, max: u16, color: bool) -> u16 {
    let mut cx = x;
    let end = x.saturating_add(max).min(buf.area.right());
    for s in &line.spans {
        if cx >= end {
            break;
        }
        let (nx, _) = buf.set_stringn(
            cx,
            y,
            &s.text,
            (end - cx) as usize,
            s.style.to_ratatui(color),
        );
        cx = nx;
    }
    cx
}

fn fill(buf: &mut Buffer, area: Rect, style: Style, color: bool) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            buf[(x, y)].reset();
            buf[(x, y)].set_style(style.to_ratatui(color));
        }
    }
}

/// Wraps the input by grapheme (an editor wraps hard, so the cursor maps simply); returns the
/// rows and the cursor's (row, col).
pub fn input_rows(input: &Input, width: u16) -> (Vec<Line>, (usize, usize)) {
    let prompt_w = str_width(&input.prompt);
    let inner = (width as usize).saturating_sub(prompt_w).max(1);
    let pad = " ".repeat(prompt_w);
    let mut cursor = input.cursor.min(input.text.len());
    while !input.text.is_char_boundary(cursor) {
        cursor -= 1;
    }
    let mut rows: Vec<Line> = vec![Line::styled(input.prompt.clone(), Style::PLAIN.bold())];
    let mut col = 0usize;
    let mut at = None;
    for (off, g) in input.text.grapheme_indices(true) {
        if off == cursor {
            at = Some((rows.len() - 1, prompt_w + col));
        }
        if g == "\n" || g == "\r\n" {
            rows.push(Line::plain(pad.clone()));
            col = 0;
            continue;
        }
        let w = grapheme_width(g);
        if col + w > inner {
            rows.push(Line::plain(pad.clone()));
            col = 0;
            if off == cursor {
                at = Some((rows.len() - 1, prompt_w));
            }
        }
        if let Some(last) = rows.last_mut() {
            last.push(g, Style::PLAIN);
        }
        col += w;
    }
    let at = at.unwrap_or_else(|| {
        if col >= inner {
            rows.push(Line::plain(pad.clone()));
            (rows.len() - 1, prompt_w)
        } else {
            (rows.len() - 1, prompt_w + col)
        }
    });
    if input.text.is_empty() && !input.placeholder.is_empty() {
        if let Some(first) = rows.first_mut() {
            first.push(input.placeholder.clone(), dim());
        }
    }
    (rows, at)
}

/// Composes a frame of `w` x `h` cells.
pub fn compose(layout: &Layout, transcript: &mut Transcript, w: u16, h: u16, ctx: &Ctx) -> Frame {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    let color = ctx.color;
    if w == 0 || h == 0 {
        return Frame {
            buf,
            cursor: None,
            busy_slot: None,
            transcript_rows: 0,
            transcript_used: 0,
        };
    }
    // Status row.
    let mut busy_slot = None;
    let mut right_end = w;
    if let Some(text) = &ctx.busy {
        let slot = BUSY_SLOT.min(w / 2);
        let x = w - slot;
        let (t, tw) = truncate(text, slot as usize);
        let padded = format!("{}{}", " ".repeat(slot as usize - tw), t);
        buf.set_stringn(
            x,
            0,
            padded,
            slot as usize,
            Style::fg(Color::Cyan).to_ratatui(color),
        );
        busy_slot = Some((x, 0, slot));
        right_end = x;
    }
    let right: Line = join(&layout.status_right);
    let rw = right.width() as u16;
    if rw > 0 && rw + 1 < right_end {
        put_line(&mut buf, right_end - rw - 1, 0, &right, rw, color);
        right_end -= rw + 2;
    }
    let left = join(&layout.status);
    put_line(&mut buf, 0, 0, &left, right_end, color);

    // Bottom up: input, rule, notices, menu, panels.
    let (in_rows, (crow, ccol)) = input_rows(&layout.input, w);
    let max_in = (h / 3).max(1) as usize;
    let first_in = if crow >= max_in { crow + 1 - max_in } else { 0 };
    let shown_in = in_rows.len().min(max_in);
    let mut bottom = h;
    let in_top = bottom.saturating_sub(shown_in as u16);
    for (i, r) in in_rows.iter().skip(first_in).take(shown_in).enumerate() {
        let y = in_top + i as u16;
        if y >= 1 {
            put_line(&mut buf, 0, y, r, w, color);
        }
    }
    let mut cursor = {
        let y = in_top + (crow - first_in) as u16;
        (y >= 1).then_some((ccol.min(w as usize - 1) as u16, y))
    };
    bottom = in_top;
    // Rows left for everything above the input, keeping one for the transcript.
    let room = |bottom: u16| bottom.saturating_sub(2);
    if room(bottom) > 0 {
        bottom -= 1;
        buf.set_stringn(
            0,
            bottom,
            "─".repeat(w as usize),
            w as usize,
            dim().to_ratatui(color),
        );
    }
    let notices: Vec<&Line> = layout.notices.iter().take(3).collect();
    for n in notices.iter().rev() {
        if room(bottom) == 0 {
            break;
        }
        bottom -= 1;
        put_line(&mut buf, 0, bottom, n, w, color);
    }
    if let Some(menu) = &layout.menu {
        let max = (room(bottom) as usize).min(8);
        let sel = menu.selected.unwrap_or(0);
        let first = if sel >= max { sel + 1 - max } else { 0 };
        let items: Vec<(usize, &Line)> = menu
            .items
            .iter()
            .enumerate()
            .skip(first)
            .take(max)
            .collect();
        let top = bottom - items.len() as u16;
        for (row, (i, item)) in items.iter().enumerate() {
            let y = top + row as u16;
            let selected = menu.selected == Some(*i);
            let mut l = Line::styled(if selected { "› " } else { "  " }, Style::PLAIN);
            for s in &item.spans {
                let st = if selected { s.style.reverse() } else { s.style };
                l.push(s.text.clone(), st);
            }
            put_line(&mut buf, 0, y, &l, w, color);
        }
        bottom = top;
    }
    // Panels: each clamped to its share, all together to half the screen.
    let budget_all = (h / 2).min(room(bottom));
    let mut panel_rows: Vec<Line> = Vec::new();
    for p in &layout.panels {
        let left = budget_all as usize - panel_rows.len().min(budget_all as usize);
        let share = ((p.max_share.clamp(0.0, 1.0) * h as f32) as usize).max(2);
        let cap = share.min(left);
        if cap == 0 {
            break;
        }
        let mut rows = Vec::new();
        if let Some(t) = &p.title {
            let head = format!("── {t} ");
            let fill = (w as usize).saturating_sub(str_width(&head));
            rows.push(Line::styled(format!("{head}{}", "─".repeat(fill)), dim()));
        }
        for l in &p.lines {
            rows.extend(wrap_line(l, w as usize));
        }
        if rows.len() > cap {
            rows.truncate(cap.saturating_sub(1));
            rows.push(Line::styled("…", dim()));
            rows.truncate(cap);
        }
        panel_rows.extend(rows);
    }
    let top = bottom - panel_rows.len() as u16;
    for (i, l) in panel_rows.iter().enumerate() {
        put_line(&mut buf, 0, top + i as u16, l, w, color);
    }
    bottom = top;

    // The transcript between the status row and whatever is below.
    let th = bottom.saturating_sub(1);
    let rows = transcript.visible(w as usize, th as usize);
    let needle = transcript.search.as_ref().map(|s| s.needle.as_str());
    // Short transcripts sit at the top.
    for (i, r) in rows.iter().enumerate() {
        match needle {
            Some(n) => put_line(&mut buf, 0, 1 + i as u16, &highlight(r, n), w, color),
            None => put_line(&mut buf, 0, 1 + i as u16, r, w, color),
        };
    }
    if transcript.new_below > 0 && th > 0 {
        let mark = format!(" ↓ {} new ", transcript.new_below);
        let mw = str_width(&mark) as u16;
        if mw < w {
            buf.set_stringn(
                w - mw,
                th,
                mark,
                mw as usize,
                Style::PLAIN.reverse().to_ratatui(color),
            );
        }
    }
    if let Some(o) = &layout.overlay {
        cursor = overlay(&mut buf, o, color);
    }
    Frame {
        buf,
        cursor,
        busy_slot,
        transcript_rows: th,
        transcript_used: rows.len() as u16,
    }
}

/// `line` with every occurrence of `needle` (ASCII lower-case; ignoring ASCII case) shown
/// reversed (the `/find` matches on screen).
pub fn highlight(line: &Line, needle: &str) -> Line {
    let text = line.text();
    let hits: Vec<usize> = super::transcript::find_ci(&text, needle).collect();
    if hits.is_empty() {
        return line.clone();
    }
    let mut out = Line::default();
    let mut pos = 0;
    for s in &line.spans {
        let end = pos + s.text.len();
        let mut at = pos;
        while at < end {
            // The match covering `at`, or the next one starting inside this span.
            let inside = hits.iter().find(|&&h| h <= at && at < h + needle.len());
            let cut = match inside {
                Some(&h) => (h + needle.len()).min(end),
                None => hits
                    .iter()
                    .find(|&&h| h > at && h < end)
                    .copied()
                    .unwrap_or(end),
            };
            let style = if inside.is_some() {
                s.style.reverse()
            } else {
                s.style
            };
            out.push(&text[at..cut], style);
            at = cut;
        }
        pos = end;
    }
    out
}

fn join(items: &[Span]) -> Line {
    let mut l = Line::default();
    for (i, s) in items.iter().filter(|s| !s.text.is_empty()).enumerate() {
        if i > 0 {
            l.push("  ", Style::PLAIN);
        }
        l.push(s.text.clone(), s.style);
    }
    l
}

/// Draws a modal box in the middle; returns the cursor when it has an input.
fn overlay(buf: &mut Buffer, o: &Overlay, color: bool) -> Option<(u16, u16)> {
    let (w, h) = (buf.area.width, buf.area.height);
    if w < 6 || h < 4 {
        return None;
    }
    let bw = w.saturating_sub(4).clamp(6, 72);
    let inner = (bw - 4) as usize;
    let mut body: Vec<Line> = Vec::new();
    if !o.question.is_empty() {
        body.extend(wrap_text(&o.question, Style::PLAIN, inner));
    }
    let max_items = (h as usize).saturating_sub(body.len() + 6).max(1);
    let sel = o.selected.unwrap_or(0);
    let first = if sel >= max_items {
        sel + 1 - max_items
    } else {
        0
    };
    if !o.items.is_empty() && !body.is_empty() {
        body.push(Line::default());
    }
    for (i, item) in o.items.iter().enumerate().skip(first).take(max_items) {
        let selected = o.selected == Some(i);
        let mut l = Line::styled(if selected { "› " } else { "  " }, Style::PLAIN.bold());
        for s in &item.spans {
            l.push(
                s.text.clone(),
                if selected { s.style.reverse() } else { s.style },
            );
        }
        body.push(l);
    }
    let mut input_at = None;
    if let Some(input) = &o.input {
        body.push(Line::default());
        let (rows, (r, c)) = input_rows(input, inner as u16);
        let last = rows.len().saturating_sub(1);
        input_at = Some((body.len() + r.min(last), c));
        body.extend(rows.into_iter().take(3));
    }
    if !o.hint.is_empty() {
        body.push(Line::default());
        body.push(Line::styled(o.hint.clone(), dim()));
    }
    let max_body = (h as usize).saturating_sub(2);
    body.truncate(max_body);
    let bh = body.len() as u16 + 2;
    let x0 = (w - bw) / 2;
    let y0 = (h - bh) / 2;
    fill(buf, Rect::new(x0, y0, bw, bh), Style::PLAIN, color);
    let border = Style::PLAIN.bold();
    let title = if o.title.is_empty() {
        String::new()
    } else {
        format!(" {} ", o.title)
    };
    let (title, tw) = truncate(&title, bw as usize - 4);
    let top = format!("╭─{title}{}╮", "─".repeat(bw as usize - 3 - tw));
    buf.set_stringn(x0, y0, top, bw as usize, border.to_ratatui(color));
    for (i, l) in body.iter().enumerate() {
        let y = y0 + 1 + i as u16;
        buf.set_stringn(x0, y, "│", 1, border.to_ratatui(color));
        put_line(buf, x0 + 2, y, l, inner as u16, color);
        buf.set_stringn(x0 + bw - 1, y, "│", 1, border.to_ratatui(color));
    }
    let bottom = format!("╰{}╯", "─".repeat(bw as usize - 2));
    buf.set_stringn(
        x0,
        y0 + bh - 1,
        bottom,
        bw as usize,
        border.to_ratatui(color),
    );
    input_at
        .filter(|(r, _)| *r < body.len())
        .map(|(r, c)| (x0 + 2 + c as u16, y0 + 1 + r as u16))
}

/// The buffer's text, one string per row, trailing spaces trimmed (tests and goldens).
pub fn buffer_text(buf: &Buffer) -> Vec<String> {
    let mut out = Vec::new();
    for y in 0..buf.area.height {
        let mut s = String::new();
        let mut skip = 0;
        for x in 0..buf.area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            skip = str_width(sym).saturating_sub(1);
            s.push_str(sym);
        }
        out.push(s.trim_end().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::term::layout::{Menu, Panel};
    use crate::native::term::transcript::BlockSpec;

    #[test]
    fn lays_out_status_transcript_panels_input() {
        let mut t = Transcript::default();
        t.push(BlockSpec {
            text: Some("hello".into()),
            ..Default::default()
        });
        let layout = Layout {
            status: vec![Span::plain("mock:m1"), Span::plain("ctx 1%")],
            panels: vec![Panel {
                title: Some("todo".into()),
                lines: vec![Line::plain("[ ] one")],
                ..Default::default()
            }],
            input: Input {
                text: "typed".into(),
                cursor: 5,
                ..Default::default()
            },
            menu: Some(Menu {
                items: vec![Line::plain("/help")],
                selected: Some(0),
            }),
            ..Default::default()
        };
        let f = compose(
            &layout,
            &mut t,
            30,
            10,
            &Ctx {
                color: true,
                busy: Some(busy_text("", 12_300)),
            },
        );
        let text = buffer_text(&f.buf);
        assert_eq!(text[0], "mock:m1  ctx 1%          ⠸ 12s");
        assert_eq!(text[1], "hello");
        assert_eq!(text[5], "── todo ──────────────────────");
        assert_eq!(text[6], "[ ] one");
        assert_eq!(text[7], "› /help");
        assert_eq!(text[9], "> typed");
        assert_eq!(f.cursor, Some((7, 9)));
        assert_eq!(f.busy_slot, Some((15, 0, 15)));
    }

    #[test]
    fn input_wraps_with_cursor() {
        let input = Input {
            text: "abcdef\nxy".into(),
            cursor: 6,
            ..Default::default()
        };
        let (rows, at) = input_rows(&input, 6);
        let texts: Vec<String> = rows.iter().map(Line::text).collect();
        assert_eq!(texts, ["> abcd", "  ef", "  xy"]);
        assert_eq!(at, (1, 4));
    }

    #[test]
    fn tiny_and_odd_sizes_do_not_panic() {
        let mut t = Transcript::default();
        for i in 0..5 {
            t.push(BlockSpec {
                text: Some(format!("block {i} 日本語 with some words to wrap")),
                ..Default::default()
            });
        }
        let layout = Layout {
            status: vec![Span::plain("mock:model"), Span::plain("ctx 12k 9%")],
            status_right: vec![Span::plain("info text")],
            panels: vec![Panel {
                title: Some("a long panel title".into()),
                lines: vec![Line::plain("one"), Line::plain("two"), Line::plain("three")],
                max_share: 1.0,
            }],
            notices: vec![Line::plain("press Ctrl-C again to quit")],
            menu: Some(Menu {
                items: (0..20).map(|i| Line::plain(format!("/item{i}"))).collect(),
                selected: Some(15),
            }),
            input: Input {
                text: "日本語 input that is long enough to wrap\nand a second line".into(),
                cursor: 4,
                ..Default::default()
            },
            overlay: Some(Overlay {
                title: "A title longer than the box".into(),
                question: "A question that wraps over several rows of the box".into(),
                items: (0..30)
                    .map(|i| Line::plain(format!("choice {i}")))
                    .collect(),
                selected: Some(25),
                input: Some(Input::default()),
                hint: "enter select".into(),
            }),
            ..Default::default()
        };
        for w in [1u16, 2, 3, 5, 7, 10, 13, 20, 40] {
            for h in [1u16, 2, 3, 4, 5, 8, 12] {
                let ctx = Ctx {
                    color: true,
                    busy: Some(busy_text("working", 61_000)),
                };
                let f = compose(&layout, &mut t, w, h, &ctx);
                if let Some((x, y)) = f.cursor {
                    assert!(x < w && y < h, "cursor {x},{y} outside {w}x{h}");
                }
                t.scroll_up(3, w as usize, h as usize);
                let _ = compose(&Layout::default(), &mut t, w, h, &ctx);
                t.follow();
            }
        }
    }

    #[test]
    fn overlay_over_everything() {
        let mut t = Transcript::default();
        let layout = Layout {
            overlay: Some(Overlay {
                title: "Pick".into(),
                question: "Which one?".into(),
                items: vec![Line::plain("alpha"), Line::plain("beta")],
                selected: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        };
        let f = compose(&layout, &mut t, 30, 10, &Ctx::default());
        let text = buffer_text(&f.buf).join("\n");
        assert!(text.contains("╭─ Pick ─"), "{text}");
        assert!(text.contains("│ › beta"), "{text}");
        assert!(text.contains("│   alpha"), "{text}");
    }
}
