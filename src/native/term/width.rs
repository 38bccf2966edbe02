//! Display width and wrapping by grapheme clusters: a wide character (CJK, most emoji) takes
//! two cells and is never split; words move to the next row whole unless longer than a row,
//! and then they break between grapheme clusters.

use super::style::{Line, Style};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Cells one grapheme cluster takes. Control characters take none (they are not drawn).
pub fn grapheme_width(g: &str) -> usize {
    if g.chars().any(char::is_control) {
        return 0;
    }
    UnicodeWidthStr::width(g).min(2)
}

/// Cells a string takes on one row.
pub fn str_width(s: &str) -> usize {
    if s.is_ascii() {
        return s.bytes().filter(|b| !b.is_ascii_control()).count();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// The longest prefix of `s` that fits in `max` cells, and its width.
pub fn truncate(s: &str, max: usize) -> (&str, usize) {
    let mut w = 0;
    for (i, g) in s.grapheme_indices(true) {
        let gw = grapheme_width(g);
        if w + gw > max {
            return (&s[..i], w);
        }
        w += gw;
    }
    (s, w)
}

/// Tabs become spaces (4) and other control characters are dropped, so every remaining
/// grapheme has a known width.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control()) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

struct Cell<'a> {
    g: &'a str,
    w: usize,
    style: Style,
    space: bool,
}

/// Wraps one logical line (no newlines) to rows of at most `width` cells. An empty line gives
/// one empty row. Spaces at a break are dropped.
pub fn wrap_line(line: &Line, width: usize) -> Vec<Line> {
    let width = width.max(1);
    // Fast path: it fits.
    if line.width() <= width {
        return vec![line.clone()];
    }
    let mut rows: Vec<Line> = Vec::new();
    let mut row: Vec<Cell> = Vec::new();
    let mut row_w = 0usize;
    // Index in `row` of the last space (a break opportunity).
    let mut last_space: Option<usize> = None;
    let flush = |row: &mut Vec<Cell>, rows: &mut Vec<Line>| {
        while row.last().is_some_and(|c| c.space) {
            row.pop();
        }
        let mut l = Line::default();
        for c in row.drain(..) {
            l.push(c.g, c.style);
        }
        rows.push(l);
    };
    for span in &line.spans {
        for g in span.text.graphemes(true) {
            let w = grapheme_width(g);
            if w == 0 {
                continue;
            }
            let space = g == " ";
            if row_w + w > width {
                if space {
                    flush(&mut row, &mut rows);
                    row_w = 0;
                    last_space = None;
                    continue;
                }
                match last_space {
                    Some(i) if i > 0 => {
                        let rest: Vec<Cell> = row.split_off(i + 1);
                        flush(&mut row, &mut rows);
                        row = rest;
                        row_w = row.iter().map(|c| c.w).sum();
                    }
                    _ => {
                        flush(&mut row, &mut rows);
                        row_w = 0;
                    }
                }
                last_space = None;
                if row_w + w > width && !row.is_empty() {
                    flush(&mut row, &mut rows);
                    row_w = 0;
                }
            }
            if space && row.is_empty() && !rows.is_empty() {
                // A space that would start a continuation row.
                continue;
            }
            if space {
                last_space = Some(row.len());
            }
            row.push(Cell {
                g,
                w,
                style: span.style,
                space,
            });
            row_w += w;
        }
    }
    if !row.is_empty() || rows.is_empty() {
        flush(&mut row, &mut rows);
    }
    rows
}

/// Wraps with a first-row prefix and a continuation prefix (list bullets, quote bars, the
/// input prompt): the text gets `width - prefix width` cells.
pub fn wrap_prefixed(line: &Line, first: &Line, cont: &Line, width: usize) -> Vec<Line> {
    let pw = first.width().max(cont.width());
    let inner = width.saturating_sub(pw).max(1);
    wrap_line(line, inner)
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut out = if i == 0 { first.clone() } else { cont.clone() };
            for s in r.spans {
                out.push(s.text, s.style);
            }
            out
        })
        .collect()
}

/// Wraps text that may contain newlines, in one style.
pub fn wrap_text(text: &str, style: Style, width: usize) -> Vec<Line> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n')
        .flat_map(|l| wrap_line(&Line::styled(clean(l).into_owned(), style), width))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Line]) -> Vec<String> {
        rows.iter().map(Line::text).collect()
    }

    #[test]
    fn widths_of_wide_and_combining() {
        assert_eq!(str_width("abc"), 3);
        assert_eq!(str_width("日本"), 4);
        assert_eq!(str_width("e\u{301}"), 1);
        assert_eq!(str_width("👍"), 2);
        assert_eq!(truncate("日本語", 5), ("日本", 4));
    }

    #[test]
    fn wraps_at_words() {
        let rows = wrap_line(&Line::plain("the quick brown fox jumps"), 10);
        assert_eq!(texts(&rows), ["the quick", "brown fox", "jumps"]);
        for r in &rows {
            assert!(r.width() <= 10);
        }
    }

    #[test]
    fn breaks_long_words_and_keeps_wide_chars_whole() {
        let rows = wrap_line(&Line::plain("abcdefghijkl"), 5);
        assert_eq!(texts(&rows), ["abcde", "fghij", "kl"]);
        let rows = wrap_line(&Line::plain("日本語のテキスト"), 5);
        assert_eq!(texts(&rows), ["日本", "語の", "テキ", "スト"]);
        let rows = wrap_line(&Line::plain("ae\u{301}e\u{301}e\u{301}"), 2);
        assert_eq!(texts(&rows), ["ae\u{301}", "e\u{301}e\u{301}"]);
    }

    #[test]
    fn keeps_styles_across_breaks() {
        let mut l = Line::default();
        l.push("hello ", Style::PLAIN);
        l.push("bold world", Style::PLAIN.bold());
        let rows = wrap_line(&l, 8);
        assert_eq!(texts(&rows), ["hello", "bold", "world"]);
        assert!(rows[1].spans[0].style.bold);
    }

    #[test]
    fn prefixes_and_text() {
        let rows = wrap_prefixed(
            &Line::plain("one two three"),
            &Line::plain("- "),
            &Line::plain("  "),
            8,
        );
        assert_eq!(texts(&rows), ["- one", "  two", "  three"]);
        let rows = wrap_text("a\tb\n\nc\n", Style::PLAIN, 20);
        assert_eq!(texts(&rows), ["a    b", "", "c"]);
    }
}
