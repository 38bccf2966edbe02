//! Finding where an `old_string` sits in a file: exact first, then a fixed, ordered set of
//! fallbacks, each more lenient than the one before. The first strategy that finds anything
//! decides; it must find exactly one match unless `replace_all` is set.
//!
//! Order: [`Strategy::Exact`], [`Strategy::LineEndings`] (CRLF vs LF),
//! [`Strategy::TrailingWhitespace`], [`Strategy::Indentation`] (uniform indent shift, and
//! `new_string` is re-indented by the same shift), [`Strategy::Unicode`] (curly quotes, dashes,
//! odd spaces), [`Strategy::BlockAnchor`] (first/last line anchors, similar middle).
//!
//! The first three and Unicode search a *normalised view* of the file that remembers where every
//! byte came from, so a match maps back to an exact byte span of the original; the other two
//! compare whole lines.

use std::cell::OnceCell;
use std::time::Duration;

use memchr::memmem;
use similar::{Algorithm, TextDiff};

use super::error::EditError;
use super::{Edit, Strategy};

/// Minimum similarity of the middle lines for a block-anchor match (docs/tools.md says so).
const BLOCK_ANCHOR_THRESHOLD: f32 = 0.8;
/// Minimum number of lines of `old_string` for a block-anchor match.
const BLOCK_ANCHOR_MIN_LINES: usize = 3;
/// Upper bound on one similarity computation (guards pathological inputs).
const SIMILARITY_TIMEOUT: Duration = Duration::from_millis(50);

/// One place to replace: a byte span of the (BOM-less) text and what goes there.
#[derive(Debug, Clone)]
pub(crate) struct Match {
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

/// All matches of one edit and the strategy that found them.
#[derive(Debug)]
pub(crate) struct Found {
    pub strategy: Strategy,
    pub matches: Vec<Match>,
}

/// One line of a text: `start..content_end` is the text, `content_end..end` the line ending.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub start: usize,
    pub content_end: usize,
    pub end: usize,
}

/// Splits `text` into lines; a final line without a newline is included, an empty tail is not.
pub(crate) fn split_lines(text: &str) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', bytes) {
        let content_end = if nl > start && bytes[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        lines.push(Line {
            start,
            content_end,
            end: nl + 1,
        });
        start = nl + 1;
    }
    if start < bytes.len() {
        lines.push(Line {
            start,
            content_end: bytes.len(),
            end: bytes.len(),
        });
    }
    lines
}

/// The file text plus lazily built indexes and views, shared by all edits of one file.
pub(crate) struct Haystack<'a> {
    pub text: &'a str,
    lines: OnceCell<Vec<Line>>,
    eol: OnceCell<Option<Eol>>,
    has_cr: OnceCell<bool>,
    views: [OnceCell<View>; 3],
}

impl<'a> Haystack<'a> {
    pub fn new(text: &'a str) -> Self {
        Haystack {
            text,
            lines: OnceCell::new(),
            eol: OnceCell::new(),
            has_cr: OnceCell::new(),
            views: [OnceCell::new(), OnceCell::new(), OnceCell::new()],
        }
    }

    pub fn lines(&self) -> &[Line] {
        self.lines.get_or_init(|| split_lines(self.text))
    }

    pub fn line_text(&self, index: usize) -> &'a str {
        let line = self.lines()[index];
        &self.text[line.start..line.content_end]
    }

    /// 1-based line number of byte `pos`.
    pub fn line_of(&self, pos: usize) -> usize {
        self.lines().partition_point(|l| l.end <= pos) + 1
    }

    /// 1-based line span of `start..end` (an end right after a newline stays on that line).
    pub fn line_span(&self, start: usize, end: usize) -> (usize, usize) {
        (
            self.line_of(start),
            self.line_of(end.saturating_sub(1).max(start)),
        )
    }

    pub fn has_cr(&self) -> bool {
        *self
            .has_cr
            .get_or_init(|| memchr::memchr(b'\r', self.text.as_bytes()).is_some())
    }

    /// The file's dominant line ending, `None` when it has no line endings.
    fn dominant_eol(&self) -> Option<Eol> {
        *self.eol.get_or_init(|| {
            let bytes = self.text.as_bytes();
            let lf = memchr::memchr_iter(b'\n', bytes).count();
            if lf == 0 {
                return None;
            }
            let crlf = memmem::find_iter(bytes, b"\r\n").count();
            Some(if crlf * 2 > lf { Eol::Crlf } else { Eol::Lf })
        })
    }

    fn view(&self, level: Level) -> &View {
        self.views[level as usize].get_or_init(|| View::build(self.text, level))
    }
}

/// A line-ending style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Lf,
    Crlf,
}

/// Finds `edit.old_string` in `hay`. `number` is the 1-based edit number for errors.
pub(crate) fn find(hay: &Haystack, edit: &Edit, number: usize) -> Result<Found, EditError> {
    let old = edit.old_string.as_str();
    let cx = Ctx { hay, edit, number };

    let spans = overlapping_occurrences(hay.text, old);
    if !spans.is_empty() {
        let spans = spans.into_iter().map(|s| (s, s + old.len()));
        return cx.finish(Strategy::Exact, spans.map(|(s, e)| (s, e, None)).collect());
    }
    if hay.has_cr() || old.contains('\r') {
        if let Some(found) = cx.in_view(Level::LineEndings, Strategy::LineEndings) {
            return found;
        }
    }
    if let Some(found) = cx.in_view(Level::TrailingWhitespace, Strategy::TrailingWhitespace) {
        return found;
    }
    if let Some(found) = cx.indentation() {
        return found;
    }
    if !(hay.text.is_ascii() && old.is_ascii()) {
        if let Some(found) = cx.in_view(Level::Unicode, Strategy::Unicode) {
            return found;
        }
    }
    if let Some(found) = cx.block_anchor() {
        return found;
    }
    Err(EditError::NotFound {
        edit: number,
        closest: super::diagnose::closest(hay, old),
        crlf_hint: hay.dominant_eol() == Some(Eol::Crlf) && has_bare_lf(old),
    })
}

/// Start of every occurrence of `needle`, overlapping ones included ("aa" in "aaa" is 2).
pub(crate) fn overlapping_occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let finder = memmem::Finder::new(needle.as_bytes());
    let bytes = haystack.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = finder.find(&bytes[from..]) {
        found.push(from + pos);
        // A match of valid UTF-8 in valid UTF-8 starts on a char boundary, so stepping one
        // byte can only find further real matches.
        from += pos + 1;
    }
    found
}

/// The context of matching one edit.
struct Ctx<'h, 'a> {
    hay: &'h Haystack<'a>,
    edit: &'h Edit,
    number: usize,
}

/// A candidate: byte span plus, for line strategies, the indent shift to apply to `new_string`.
type Span = (usize, usize, Option<Shift>);

impl Ctx<'_, '_> {
    /// Turns the spans one strategy found into matches, enforcing uniqueness / non-overlap.
    fn finish(&self, strategy: Strategy, mut spans: Vec<Span>) -> Result<Found, EditError> {
        spans.sort_by_key(|s| s.0);
        if spans.len() > 1 {
            let lines = || spans.iter().map(|s| self.hay.line_of(s.0)).collect();
            if !self.edit.replace_all {
                return Err(EditError::Ambiguous {
                    edit: self.number,
                    strategy,
                    lines: lines(),
                });
            }
            if spans.windows(2).any(|w| w[1].0 < w[0].1) {
                return Err(EditError::OverlappingOccurrences {
                    edit: self.number,
                    lines: lines(),
                });
            }
        }
        let matches = spans
            .into_iter()
            .map(|(start, end, shift)| {
                let new = match &shift {
                    Some(shift) => reindent(&self.edit.new_string, shift),
                    None => self.edit.new_string.clone(),
                };
                let region = &self.hay.text[start..end];
                Match {
                    start,
                    end,
                    replacement: adapt_eol(new, region, self.hay),
                }
            })
            .collect();
        Ok(Found { strategy, matches })
    }

    /// Searches the normalised old string in the normalised view at `level`.
    fn in_view(&self, level: Level, strategy: Strategy) -> Option<Result<Found, EditError>> {
        let needle = View::build(&self.edit.old_string, level).text;
        if needle.is_empty() {
            return None;
        }
        let view = self.hay.view(level);
        let starts = overlapping_occurrences(&view.text, &needle);
        if starts.is_empty() {
            return None;
        }
        let spans = starts
            .into_iter()
            .map(|k| (view.map_start(k), view.map_end(k + needle.len()), None))
            .collect();
        Some(self.finish(strategy, spans))
    }

    /// Whole-line match where every line differs by one uniform indentation shift.
    fn indentation(&self) -> Option<Result<Found, EditError>> {
        let old = OldLines::new(&self.edit.old_string);
        let k0 = old.lines.iter().position(|l| !l.trim().is_empty())?;
        let anchor = old.lines[k0].trim();
        let n = old.lines.len();
        let file_lines = self.hay.lines();
        let mut spans = Vec::new();
        for i in 0..file_lines.len().saturating_sub(n - 1) {
            let file_anchor = self.hay.line_text(i + k0);
            if file_anchor.trim() != anchor {
                continue;
            }
            let Some(shift) = indent_shift(leading_ws(old.lines[k0]), leading_ws(file_anchor))
            else {
                continue;
            };
            let fits =
                (0..n).all(|k| shifted_equal(old.lines[k], self.hay.line_text(i + k), &shift));
            if fits {
                spans.push(self.line_span(i, i + n - 1, old.trailing_newline, shift));
            }
        }
        (!spans.is_empty()).then(|| self.finish(Strategy::Indentation, spans))
    }

    /// First and last lines equal after trimming, middle lines similar enough.
    fn block_anchor(&self) -> Option<Result<Found, EditError>> {
        let old = OldLines::new(&self.edit.old_string);
        let n = old.lines.len();
        if n < BLOCK_ANCHOR_MIN_LINES {
            return None;
        }
        let (first, last) = (old.lines[0].trim(), old.lines[n - 1].trim());
        if first.is_empty() || last.is_empty() {
            return None;
        }
        let old_middle = trimmed_join(old.lines[1..n - 1].iter().copied());
        // Let the model have dropped or added a few lines.
        let slack = (n / 4).max(1);
        let (min_len, max_len) = ((n - slack).max(BLOCK_ANCHOR_MIN_LINES), n + slack);
        let count = self.hay.lines().len();
        let mut spans = Vec::new();
        let mut mismatched = None;
        for i in 0..count {
            if self.hay.line_text(i).trim() != first {
                continue;
            }
            let mut best: Option<(f32, usize)> = None;
            for len in min_len..=max_len {
                let j = i + len - 1;
                if j >= count {
                    break;
                }
                if self.hay.line_text(j).trim() != last {
                    continue;
                }
                let middle = trimmed_join((i + 1..j).map(|k| self.hay.line_text(k)));
                let score = similarity(&old_middle, &middle, BLOCK_ANCHOR_THRESHOLD);
                if score >= BLOCK_ANCHOR_THRESHOLD && best.is_none_or(|(s, _)| score > s) {
                    best = Some((score, j));
                }
            }
            if let Some((_, j)) = best {
                match self.block_shift(&old, i, j) {
                    Some(shift) => spans.push(self.line_span(i, j, old.trailing_newline, shift)),
                    None if mismatched.is_none() => mismatched = Some((i, j)),
                    None => {}
                }
            }
        }
        // A loose match whose lines moved by different amounts cannot be re-indented by one
        // shift without changing the file's relative indentation: refuse rather than guess.
        if let Some((i, j)) = mismatched {
            if spans.is_empty() || self.edit.replace_all {
                return Some(Err(EditError::IndentationMismatch {
                    edit: self.number,
                    start_line: i + 1,
                    end_line: j + 1,
                }));
            }
            let (s, e, _) = self.line_span(i, j, old.trailing_newline, Shift::None);
            spans.push((s, e, None));
        }
        (!spans.is_empty()).then(|| self.finish(Strategy::BlockAnchor, spans))
    }

    /// The one indentation shift from `old` to file lines `i..=j` of a block-anchor match,
    /// judged on the lines that can be paired: the first, the last, and every line between
    /// when the block has as many lines as `old`. `None` when they moved by different amounts.
    fn block_shift(&self, old: &OldLines, i: usize, j: usize) -> Option<Shift> {
        let n = old.lines.len();
        let mut pairs = vec![(old.lines[0], self.hay.line_text(i))];
        if j + 1 - i == n {
            pairs.extend((1..n - 1).map(|k| (old.lines[k], self.hay.line_text(i + k))));
        }
        pairs.push((old.lines[n - 1], self.hay.line_text(j)));
        let mut shift = None;
        for (o, f) in pairs {
            if o.trim().is_empty() || f.trim().is_empty() {
                continue;
            }
            let this = indent_shift(leading_ws(o), leading_ws(f))?;
            match &shift {
                None => shift = Some(this),
                Some(s) if *s == this => {}
                Some(_) => return None,
            }
        }
        Some(shift.unwrap_or(Shift::None))
    }

    /// Byte span of file lines `first..=last`, with the last line ending when `old` had one.
    fn line_span(&self, first: usize, last: usize, with_newline: bool, shift: Shift) -> Span {
        let lines = self.hay.lines();
        let end = if with_newline {
            lines[last].end
        } else {
            lines[last].content_end
        };
        (lines[first].start, end, Some(shift))
    }
}

/// `old_string` split into lines (CR stripped), remembering a final newline.
pub(crate) struct OldLines<'a> {
    pub lines: Vec<&'a str>,
    pub trailing_newline: bool,
}

impl<'a> OldLines<'a> {
    pub fn new(old: &'a str) -> Self {
        let body = old.strip_suffix('\n');
        let trailing_newline = body.is_some();
        let body = body.map_or(old, |b| b.strip_suffix('\r').unwrap_or(b));
        let lines = body
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        OldLines {
            lines,
            trailing_newline,
        }
    }
}

/// Similarity ratio (0..=1) of two strings, by characters; 0 when it cannot reach `floor`.
pub(crate) fn similarity(a: &str, b: &str, floor: f32) -> f32 {
    if a == b {
        return 1.0;
    }
    let (la, lb) = (a.len(), b.len());
    // The ratio can never exceed 2*min/(sum): skip the diff when that bound already fails.
    let bound = 2.0 * la.min(lb) as f32 / (la + lb) as f32;
    if bound < floor {
        return 0.0;
    }
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(SIMILARITY_TIMEOUT)
        .diff_chars(a, b)
        .ratio()
}

fn trimmed_join<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(str::trim).collect::<Vec<_>>().join("\n")
}

/// Leading spaces and tabs.
pub(crate) fn leading_ws(line: &str) -> &str {
    let rest = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - rest.len()]
}

/// A uniform indentation change from `old_string` to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shift {
    /// Same indentation.
    None,
    /// The file has this prefix in front of every non-blank line.
    Add(String),
    /// The file lacks this prefix that every non-blank old line has.
    Remove(String),
}

/// The shift turning indent `old` into indent `file`, if one is a suffix-extension of the other.
fn indent_shift(old: &str, file: &str) -> Option<Shift> {
    if old == file {
        Some(Shift::None)
    } else if file.len() > old.len() && file.ends_with(old) {
        Some(Shift::Add(file[..file.len() - old.len()].to_string()))
    } else if old.len() > file.len() && old.ends_with(file) {
        Some(Shift::Remove(old[..old.len() - file.len()].to_string()))
    } else {
        None
    }
}

/// Does the old line, shifted, equal the file line (ignoring trailing whitespace)?
fn shifted_equal(old: &str, file: &str, shift: &Shift) -> bool {
    let (old, file) = (old.trim_end(), file.trim_end());
    if old.is_empty() || file.is_empty() {
        return old.is_empty() && file.is_empty();
    }
    match shift {
        Shift::None => old == file,
        Shift::Add(p) => file.strip_prefix(p.as_str()) == Some(old),
        Shift::Remove(p) => old.strip_prefix(p.as_str()) == Some(file),
    }
}

/// Applies `shift` to every non-blank line of `new`, so its indentation follows the file's.
pub(crate) fn reindent(new: &str, shift: &Shift) -> String {
    if *shift == Shift::None {
        return new.to_string();
    }
    let mut out = String::with_capacity(new.len() + 64);
    for line in new.split_inclusive('\n') {
        if line.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        match shift {
            Shift::None => out.push_str(line),
            Shift::Add(p) => {
                out.push_str(p);
                out.push_str(line);
            }
            Shift::Remove(p) => {
                // A line indented less than the removed prefix loses what it has of it.
                let ws = leading_ws(line);
                let common = ws
                    .bytes()
                    .zip(p.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                out.push_str(&line[common..]);
            }
        }
    }
    out
}

/// True when `s` has a `\n` not preceded by `\r`.
pub(crate) fn has_bare_lf(s: &str) -> bool {
    let bytes = s.as_bytes();
    memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r')
}

/// Gives `new` the line endings of the region it replaces (or of the file, when the region has
/// no line break). A region that mixes both styles keeps `new` as written.
fn adapt_eol(new: String, region: &str, hay: &Haystack) -> String {
    if !new.contains('\n') {
        return new;
    }
    let has_crlf = region.contains("\r\n");
    let has_lf = has_bare_lf(region);
    let style = match (has_crlf, has_lf) {
        (true, true) => None,
        (true, false) => Some(Eol::Crlf),
        (false, true) => Some(Eol::Lf),
        (false, false) => hay.dominant_eol(),
    };
    match style {
        Some(Eol::Crlf) => to_crlf(&new),
        Some(Eol::Lf) => new.replace("\r\n", "\n"),
        None => new,
    }
}

fn to_crlf(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut prev = '\0';
    for ch in s.chars() {
        if ch == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(ch);
        prev = ch;
    }
    out
}

/// How much a [`View`] normalises; each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// CRLF -> LF.
    LineEndings = 0,
    /// ... and trailing whitespace of every line removed.
    TrailingWhitespace = 1,
    /// ... and typographic quotes, dashes and spaces folded to ASCII.
    Unicode = 2,
}

/// A run of the view: `norm..norm+norm_len` came from `orig..orig+orig_len`. Identity runs map
/// byte for byte; atomic runs (one replaced character) map as a whole.
#[derive(Debug, Clone, Copy)]
struct Seg {
    norm: usize,
    orig: usize,
    norm_len: usize,
    orig_len: usize,
    atomic: bool,
}

/// A normalised copy of a text with a map back to original byte offsets.
#[derive(Debug, Default)]
struct View {
    text: String,
    segs: Vec<Seg>,
}

impl View {
    fn build(source: &str, level: Level) -> View {
        let mut view = View {
            text: String::with_capacity(source.len()),
            segs: Vec::new(),
        };
        for line in split_lines(source) {
            let content = &source[line.start..line.content_end];
            let kept = if level >= Level::TrailingWhitespace {
                content.trim_end()
            } else {
                content
            };
            if level >= Level::Unicode {
                view.push_unicode_folded(kept, line.start);
            } else {
                view.copy(kept, line.start);
            }
            let eol = &source[line.content_end..line.end];
            if eol == "\r\n" && level >= Level::LineEndings {
                view.copy("\n", line.content_end + 1);
            } else {
                view.copy(eol, line.content_end);
            }
        }
        view
    }

    /// Appends `s`, which sits at `orig` in the source, as an identity run.
    fn copy(&mut self, s: &str, orig: usize) {
        if s.is_empty() {
            return;
        }
        let norm = self.text.len();
        self.text.push_str(s);
        if let Some(last) = self.segs.last_mut() {
            if !last.atomic
                && last.norm + last.norm_len == norm
                && last.orig + last.orig_len == orig
            {
                last.norm_len += s.len();
                last.orig_len += s.len();
                return;
            }
        }
        self.segs.push(Seg {
            norm,
            orig,
            norm_len: s.len(),
            orig_len: s.len(),
            atomic: false,
        });
    }

    /// Appends `with` in place of the `orig_len` source bytes at `orig`.
    fn replace(&mut self, orig: usize, orig_len: usize, with: &str) {
        self.segs.push(Seg {
            norm: self.text.len(),
            orig,
            norm_len: with.len(),
            orig_len,
            atomic: true,
        });
        self.text.push_str(with);
    }

    fn push_unicode_folded(&mut self, s: &str, orig: usize) {
        let mut run_start = 0;
        for (i, ch) in s.char_indices() {
            if let Some(ascii) = fold_unicode(ch) {
                self.copy(&s[run_start..i], orig + run_start);
                self.replace(orig + i, ch.len_utf8(), ascii);
                run_start = i + ch.len_utf8();
            }
        }
        self.copy(&s[run_start..], orig + run_start);
    }

    fn seg_at(&self, k: usize) -> Seg {
        let idx = self.segs.partition_point(|s| s.norm <= k).saturating_sub(1);
        self.segs[idx]
    }

    /// Original offset of view byte `k` (start of a match).
    fn map_start(&self, k: usize) -> usize {
        let seg = self.seg_at(k);
        if seg.atomic {
            seg.orig
        } else {
            seg.orig + (k - seg.norm)
        }
    }

    /// Original offset just after view byte `k - 1` (end of a match).
    fn map_end(&self, k: usize) -> usize {
        let seg = self.seg_at(k - 1);
        if seg.atomic {
            seg.orig + seg.orig_len
        } else {
            seg.orig + (k - seg.norm)
        }
    }
}

/// ASCII stand-in for typographic characters models and editors swap in.
fn fold_unicode(ch: char) -> Option<&'static str> {
    Some(match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => "-",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        '\u{2026}' => "...",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_maps_back_through_deletions_and_replacements() {
        let src = "a \u{201C}q\u{201D}  \r\nb\u{2014}c\n";
        let view = View::build(src, Level::Unicode);
        assert_eq!(view.text, "a \"q\"\nb-c\n");
        let k = view.text.find("\"q\"").unwrap();
        assert_eq!(
            &src[view.map_start(k)..view.map_end(k + 3)],
            "\u{201C}q\u{201D}"
        );
        let k = view.text.find("\"\nb").unwrap();
        assert_eq!(
            &src[view.map_start(k)..view.map_end(k + 3)],
            "\u{201D}  \r\nb"
        );
    }

    #[test]
    fn overlapping_occurrences_are_counted() {
        assert_eq!(overlapping_occurrences("aaa", "aa"), vec![0, 1]);
        assert_eq!(overlapping_occurrences("abc", "d"), Vec::<usize>::new());
    }

    #[test]
    fn reindent_adds_and_removes_prefix() {
        let add = Shift::Add("    ".into());
        assert_eq!(reindent("a\n\n  b\n", &add), "    a\n\n      b\n");
        let remove = Shift::Remove("    ".into());
        assert_eq!(reindent("    a\n  b\n", &remove), "a\nb\n");
    }

    #[test]
    fn crlf_conversion_keeps_existing_crlf() {
        assert_eq!(to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
    }
}
