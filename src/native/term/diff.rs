//! Diff rows for `edit` and `write` results: a unified diff (the tools' `details.diff`) parsed
//! into hunks and laid out at a width, unified with one line-number column and a +/- sign, or
//! side by side (old left, new right) when the width is over [`SIDE_BY_SIDE_OVER`] columns.
//! Changed lines paired within a hunk (the i-th removed with the i-th added line) get their
//! changed words marked. Styles come by semantic name (`diff.add`, `diff.del`,
//! `diff.add.word`, `diff.del.word`, `diff.hunk`, `diff.lineno`, `diff.file`) so a theme maps
//! them; missing names take the defaults here.

use super::style::{Color, Line, Style};
use super::width::{clean, wrap_line};
use serde::Deserialize;
use similar::{ChangeTag, TextDiff};
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

/// Side by side above this many columns.
pub const SIDE_BY_SIDE_OVER: usize = 160;
/// Diff lines shown at most; the rest is counted in a last row.
pub const MAX_LINES: usize = 2000;
/// A pair of lines whose word diff is less similar than this is marked as a whole.
const WORD_RATIO: f32 = 0.4;

/// What Lua hands over: the unified diff text and styles by semantic name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiffSpec {
    pub text: String,
    pub styles: BTreeMap<String, Style>,
}

/// The styles a diff is drawn with.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffStyles {
    pub add: Style,
    pub del: Style,
    pub add_word: Style,
    pub del_word: Style,
    pub hunk: Style,
    pub lineno: Style,
    pub file: Style,
}

impl Default for DiffStyles {
    fn default() -> Self {
        DiffStyles {
            add: Style::fg(Color::Green),
            del: Style::fg(Color::Red),
            add_word: Style::fg(Color::Green).reverse(),
            del_word: Style::fg(Color::Red).reverse(),
            hunk: Style::fg(Color::Cyan),
            lineno: Style::PLAIN.dim(),
            file: Style::PLAIN.bold(),
        }
    }
}

impl DiffStyles {
    pub fn from_names(names: &BTreeMap<String, Style>) -> DiffStyles {
        let mut s = DiffStyles::default();
        for (name, slot) in [
            ("diff.add", &mut s.add),
            ("diff.del", &mut s.del),
            ("diff.add.word", &mut s.add_word),
            ("diff.del.word", &mut s.del_word),
            ("diff.hunk", &mut s.hunk),
            ("diff.lineno", &mut s.lineno),
            ("diff.file", &mut s.file),
        ] {
            if let Some(st) = names.get(name) {
                *slot = *st;
            }
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ctx,
    Add,
    Del,
}

/// One line of a hunk with its number (the old file's for removed lines, the new file's
/// otherwise) and the byte ranges of its changed words.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffLine {
    pub kind: Kind,
    pub old: usize,
    pub new: usize,
    pub text: String,
    pub words: Vec<Range<usize>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    File(String),
    Hunk(String),
    Line(DiffLine),
}

/// A parsed unified diff.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    pub items: Vec<Item>,
    pub files: usize,
    pub added: usize,
    pub removed: usize,
    max_no: usize,
}

fn hunk_start(spec: &str) -> (usize, usize) {
    let spec = spec.trim_start_matches(['-', '+']);
    let mut it = spec.splitn(2, ',');
    let start = it.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let len = it.next().map_or(1, |n| n.parse().unwrap_or(0));
    (start, len)
}

/// Parses a unified diff (several files allowed). Lines outside hunks other than file
/// headers are ignored.
pub fn parse(text: &str) -> Diff {
    let mut d = Diff::default();
    let (mut old, mut new, mut old_left, mut new_left) = (0usize, 0usize, 0usize, 0usize);
    for raw in text.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let in_hunk = old_left > 0 || new_left > 0;
        if !in_hunk {
            if let Some(path) = line.strip_prefix("+++ ") {
                let path = path.strip_prefix("b/").unwrap_or(path);
                d.items.push(Item::File(path.to_string()));
                d.files += 1;
                continue;
            }
            if line.starts_with("--- ") || line.is_empty() {
                continue;
            }
        }
        if let Some(rest) = line.strip_prefix("@@ ") {
            let mut parts = rest.split_whitespace();
            let (o, ol) = hunk_start(parts.next().unwrap_or(""));
            let (n, nl) = hunk_start(parts.next().unwrap_or(""));
            // An empty range names the line before it.
            old = if ol == 0 { o + 1 } else { o };
            new = if nl == 0 { n + 1 } else { n };
            old_left = ol;
            new_left = nl;
            d.items.push(Item::Hunk(line.to_string()));
            continue;
        }
        if !in_hunk {
            continue;
        }
        let (kind, body) = match line.as_bytes().first() {
            Some(b'+') => (Kind::Add, &line[1..]),
            Some(b'-') => (Kind::Del, &line[1..]),
            Some(b' ') => (Kind::Ctx, &line[1..]),
            Some(b'\\') => continue,
            _ => (Kind::Ctx, line),
        };
        let text = clean(body).into_owned();
        let (o, n) = (old, new);
        match kind {
            Kind::Add => {
                new += 1;
                new_left = new_left.saturating_sub(1);
                d.added += 1;
            }
            Kind::Del => {
                old += 1;
                old_left = old_left.saturating_sub(1);
                d.removed += 1;
            }
            Kind::Ctx => {
                old += 1;
                new += 1;
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
        }
        d.max_no = d.max_no.max(o).max(n);
        d.items.push(Item::Line(DiffLine {
            kind,
            old: o,
            new: n,
            text,
            words: Vec::new(),
        }));
    }
    mark_words(&mut d.items);
    d
}

/// Byte ranges of a line.
pub type Ranges = Vec<Range<usize>>;

/// The changed byte ranges of `old` and `new` by words; None when they share too little.
pub fn word_ranges(old: &str, new: &str) -> Option<(Ranges, Ranges)> {
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(5))
        .diff_words(old, new);
    if diff.ratio() < WORD_RATIO {
        return None;
    }
    let (mut o, mut n) = (0usize, 0usize);
    let (mut ro, mut rn): (Ranges, Ranges) = (Vec::new(), Vec::new());
    let push = |v: &mut Vec<Range<usize>>, r: Range<usize>| match v.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => v.push(r),
    };
    for c in diff.iter_all_changes() {
        let len = c.value().len();
        match c.tag() {
            ChangeTag::Equal => {
                o += len;
                n += len;
            }
            ChangeTag::Delete => {
                push(&mut ro, o..o + len);
                o += len;
            }
            ChangeTag::Insert => {
                push(&mut rn, n..n + len);
                n += len;
            }
        }
    }
    Some((ro, rn))
}

/// Pairs each run of removed lines with the added lines right after it and marks words.
fn mark_words(items: &mut [Item]) {
    let mut i = 0;
    while i < items.len() {
        let del_start = i;
        while matches!(&items[i..], [Item::Line(l), ..] if l.kind == Kind::Del) {
            i += 1;
        }
        let add_start = i;
        while matches!(&items[i..], [Item::Line(l), ..] if l.kind == Kind::Add) {
            i += 1;
        }
        let pairs = (add_start - del_start).min(i - add_start);
        for k in 0..pairs {
            let (a, b) = (del_start + k, add_start + k);
            let (Item::Line(dl), Item::Line(al)) = (&items[a], &items[b]) else {
                continue;
            };
            if let Some((wo, wn)) = word_ranges(&dl.text, &al.text) {
                if let Item::Line(l) = &mut items[a] {
                    l.words = wo;
                }
                if let Item::Line(l) = &mut items[b] {
                    l.words = wn;
                }
            }
        }
        if i == del_start {
            i += 1;
        }
    }
}

fn digits(n: usize) -> usize {
    n.max(1).to_string().len()
}

/// The line's text with its changed words in the word style.
fn content(l: &DiffLine, st: &DiffStyles) -> Line {
    let (base, word) = match l.kind {
        Kind::Add => (st.add, st.add_word),
        Kind::Del => (st.del, st.del_word),
        Kind::Ctx => (Style::PLAIN, Style::PLAIN),
    };
    let mut out = Line::default();
    let mut at = 0;
    for r in &l.words {
        let (Some(before), Some(w)) = (l.text.get(at..r.start), l.text.get(r.clone())) else {
            continue;
        };
        out.push(before, base);
        out.push(w, word);
        at = r.end;
    }
    out.push(l.text.get(at..).unwrap_or(""), base);
    out
}

/// `  12 + ` gutter (number, sign) and the wrapped content rows of one line at `width`.
fn side_rows(l: &DiffLine, w: usize, width: usize, st: &DiffStyles) -> Vec<Line> {
    let (no, sign, sign_st) = match l.kind {
        Kind::Add => (l.new, "+", st.add),
        Kind::Del => (l.old, "-", st.del),
        Kind::Ctx => (l.new, " ", st.lineno),
    };
    let gutter = w + 3;
    let body = content(l, st);
    let rows = wrap_line(&body, width.saturating_sub(gutter).max(1));
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut line = Line::default();
            if i == 0 {
                line.push(format!("{no:>w$} "), st.lineno);
                line.push(sign, sign_st);
                line.push(" ", Style::PLAIN);
            } else {
                line.push(" ".repeat(gutter), Style::PLAIN);
            }
            line.spans.extend(r.spans);
            line
        })
        .collect()
}

fn pad_to(mut l: Line, width: usize) -> Line {
    let w = l.width();
    if w < width {
        l.push(" ".repeat(width - w), Style::PLAIN);
    }
    l
}

/// The rows of `d` at `width`: unified, or side by side when wider than
/// [`SIDE_BY_SIDE_OVER`].
pub fn render(d: &Diff, width: usize, st: &DiffStyles) -> Vec<Line> {
    let w = digits(d.max_no);
    let side = width > SIDE_BY_SIDE_OVER;
    let mut out = Vec::new();
    let mut shown = 0;
    let total = d
        .items
        .iter()
        .filter(|i| matches!(i, Item::Line(_)))
        .count();
    let mut i = 0;
    while i < d.items.len() {
        if shown >= MAX_LINES {
            out.push(Line::styled(
                format!("… {} more diff lines", total - shown),
                st.lineno,
            ));
            break;
        }
        match &d.items[i] {
            Item::File(path) => {
                if d.files > 1 {
                    out.extend(wrap_line(&Line::styled(path.clone(), st.file), width));
                }
                i += 1;
            }
            Item::Hunk(h) => {
                out.extend(wrap_line(&Line::styled(h.clone(), st.hunk), width));
                i += 1;
            }
            Item::Line(l) if !side => {
                out.extend(side_rows(l, w, width, st));
                shown += 1;
                i += 1;
            }
            Item::Line(l) if l.kind == Kind::Ctx => {
                let half = (width - 1) / 2;
                let right = width - 1 - half;
                let left_l = DiffLine {
                    new: l.old,
                    ..l.clone()
                };
                zip_sides(
                    &mut out,
                    side_rows(&left_l, w, half, st),
                    side_rows(l, w, right, st),
                    half,
                    st,
                );
                shown += 1;
                i += 1;
            }
            Item::Line(_) => {
                // A change run: removed lines left, added lines right, row by row.
                let half = (width - 1) / 2;
                let right = width - 1 - half;
                let mut dels = Vec::new();
                let mut adds = Vec::new();
                while let Some(Item::Line(l)) = d.items.get(i) {
                    match l.kind {
                        Kind::Del if adds.is_empty() => dels.push(l),
                        Kind::Add => adds.push(l),
                        _ => break,
                    }
                    i += 1;
                }
                for k in 0..dels.len().max(adds.len()) {
                    let left = dels
                        .get(k)
                        .map(|l| side_rows(l, w, half, st))
                        .unwrap_or_default();
                    let rightr = adds
                        .get(k)
                        .map(|l| side_rows(l, w, right, st))
                        .unwrap_or_default();
                    zip_sides(&mut out, left, rightr, half, st);
                }
                shown += dels.len() + adds.len();
            }
        }
    }
    out
}

fn zip_sides(out: &mut Vec<Line>, left: Vec<Line>, right: Vec<Line>, half: usize, st: &DiffStyles) {
    for k in 0..left.len().max(right.len()) {
        let mut row = pad_to(left.get(k).cloned().unwrap_or_default(), half);
        row.push("│", st.lineno);
        if let Some(r) = right.get(k) {
            row.spans.extend(r.spans.iter().cloned());
        }
        out.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIT: &str = "--- a/src/x.rs\n+++ b/src/x.rs\n@@ -10,4 +10,4 @@\n fn main() {\n-    let count = 1;\n+    let count = 2;\n     run(count);\n }\n";

    fn texts(v: &[Line]) -> Vec<String> {
        v.iter().map(Line::text).collect()
    }

    #[test]
    fn parses_hunks_with_line_numbers() {
        let d = parse(EDIT);
        assert_eq!((d.files, d.added, d.removed), (1, 1, 1));
        let lines: Vec<(Kind, usize, usize)> = d
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Line(l) => Some((l.kind, l.old, l.new)),
                _ => None,
            })
            .collect();
        assert_eq!(
            lines,
            [
                (Kind::Ctx, 10, 10),
                (Kind::Del, 11, 11),
                (Kind::Add, 12, 11),
                (Kind::Ctx, 12, 12),
                (Kind::Ctx, 13, 13)
            ]
        );
    }

    #[test]
    fn unified_rows_mark_changed_words() {
        let st = DiffStyles::default();
        let rows = render(&parse(EDIT), 80, &st);
        assert_eq!(
            texts(&rows),
            [
                "@@ -10,4 +10,4 @@",
                "10   fn main() {",
                "11 -     let count = 1;",
                "11 +     let count = 2;",
                "12       run(count);",
                "13   }"
            ]
        );
        let word = |row: &Line, w: &str| row.spans.iter().find(|s| s.text == w).map(|s| s.style);
        assert_eq!(word(&rows[2], "1;"), Some(st.del_word));
        assert_eq!(word(&rows[3], "2;"), Some(st.add_word));
        assert!(rows[3]
            .spans
            .iter()
            .any(|s| s.style == st.add && s.text.contains("let count")));
        assert_eq!(rows[0].spans[0].style, st.hunk);
    }

    #[test]
    fn side_by_side_over_160_columns() {
        let st = DiffStyles::default();
        let rows = render(&parse(EDIT), 170, &st);
        let t = texts(&rows);
        assert_eq!(t.len(), 5, "{t:#?}");
        assert!(t[2].starts_with("11 -     let count = 1;"), "{}", t[2]);
        assert!(t[2].contains("│11 +     let count = 2;"), "{}", t[2]);
        assert_eq!(t[2].find('│'), Some(84));
        // Unified at 160.
        assert_eq!(render(&parse(EDIT), 160, &st).len(), 6);
    }

    #[test]
    fn new_files_several_files_and_the_cap() {
        let new: String = (1..=3).map(|i| format!("+line {i}\n")).collect();
        let text = format!(
            "--- a/a\n+++ b/a\n@@ -0,0 +1,3 @@\n{new}--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"
        );
        let d = parse(&text);
        let t = texts(&render(&d, 80, &DiffStyles::default()));
        assert_eq!(t[0], "a");
        assert_eq!(t[2], "1 + line 1");
        assert!(t.contains(&"b".to_string()));
        assert!(t.contains(&"1 - x".to_string()) && t.contains(&"1 + y".to_string()));
        let many: String = (0..MAX_LINES + 5).map(|i| format!("+{i}\n")).collect();
        let big = parse(&format!("@@ -0,0 +1,{} @@\n{many}", MAX_LINES + 5));
        let rows = render(&big, 80, &DiffStyles::default());
        assert_eq!(
            rows.last().map(Line::text).as_deref(),
            Some("… 5 more diff lines")
        );
    }
}
