//! Markdown to styled lines (pulldown-cmark): headings, emphasis, inline code, fenced code,
//! lists, quotes, links, tables, rules. [`MdDoc`] is the incremental form used for streaming
//! answers: text before the last confirmed block boundary (a blank line outside a code fence,
//! followed by an unindented line) is parsed once and its rows are wrapped once per width;
//! each delta re-parses and re-wraps only the unfinished tail. Fenced code with a language is
//! highlighted through [`super::highlight`] (asynchronously: a block shows plain until its
//! lines are ready, then the document re-parses once per batch that lands).

use super::highlight;
use super::palette;
use super::style::{Line, Style};
use super::width::{clean, wrap_prefixed};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// One logical line: a body with the prefix of its first row and of its continuation rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MdLine {
    pub first: Line,
    pub cont: Line,
    pub body: Line,
}

impl MdLine {
    pub fn wrap(&self, width: usize) -> Vec<Line> {
        wrap_prefixed(&self.body, &self.first, &self.cont, width)
    }
}

/// The markdown styles, from the [`palette`](super::palette) (themable).
pub mod theme {
    use super::super::palette::{get, Role};
    use super::*;
    pub fn heading(level: HeadingLevel) -> Style {
        let s = get(Role::Heading);
        if level == HeadingLevel::H1 {
            s.underline()
        } else {
            s
        }
    }
    pub fn code() -> Style {
        get(Role::InlineCode)
    }
    pub fn code_block() -> Style {
        get(Role::CodeBlock)
    }
    pub fn gutter() -> Style {
        get(Role::Gutter)
    }
    pub fn link() -> Style {
        get(Role::Link)
    }
    pub fn bullet() -> Style {
        get(Role::Bullet)
    }
}

enum Container {
    Quote,
    Item { bullet: String, used: bool },
}

struct Table {
    rows: Vec<Vec<Line>>,
    head_rows: usize,
    in_head: bool,
}

struct Builder {
    out: Vec<MdLine>,
    containers: Vec<Container>,
    lists: Vec<Option<u64>>,
    styles: Vec<Style>,
    cur: Option<Line>,
    code: Option<String>,
    /// The fence's info string of the open code block.
    code_lang: String,
    /// A code block waits for its highlighted lines.
    pending: bool,
    link: Vec<String>,
    table: Option<Table>,
    cell: Option<Line>,
    /// A blank separator is due before the next block's first line.
    gap: bool,
    /// The separator's quote bar, fixed when the gap was set.
    gap_bar: Line,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            out: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            styles: vec![Style::PLAIN],
            cur: None,
            code: None,
            code_lang: String::new(),
            pending: false,
            link: Vec::new(),
            table: None,
            cell: None,
            gap: false,
            gap_bar: Line::default(),
        }
    }

    fn set_gap(&mut self) {
        if self.gap {
            // The outermost pending gap decides the bar.
            return;
        }
        self.gap = true;
        self.gap_bar = Line::default();
        if self
            .containers
            .iter()
            .any(|c| matches!(c, Container::Quote))
        {
            self.gap_bar.push("│", theme::gutter());
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(Style::PLAIN)
    }

    fn push_style(&mut self, s: Style) {
        let top = self.style().patch(s);
        self.styles.push(top);
    }

    fn prefixes(&mut self) -> (Line, Line) {
        let mut first = Line::default();
        let mut cont = Line::default();
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push("│ ", theme::gutter());
                    cont.push("│ ", theme::gutter());
                }
                Container::Item { bullet, used } => {
                    let pad = " ".repeat(super::width::str_width(bullet));
                    if *used {
                        first.push(pad.clone(), Style::PLAIN);
                    } else {
                        first.push(bullet.clone(), theme::bullet());
                        *used = true;
                    }
                    cont.push(pad, Style::PLAIN);
                }
            }
        }
        (first, cont)
    }

    fn emit(&mut self, body: Line) {
        if self.gap && !self.out.is_empty() {
            // The separator keeps quote bars but not bullets.
            let bar = std::mem::take(&mut self.gap_bar);
            self.out.push(MdLine {
                first: bar.clone(),
                cont: bar,
                body: Line::default(),
            });
        }
        self.gap = false;
        let (first, cont) = self.prefixes();
        self.out.push(MdLine { first, cont, body });
    }

    fn text(&mut self, t: &str) {
        let style = self.style();
        if let Some(cell) = &mut self.cell {
            cell.push(clean(t).into_owned(), style);
            return;
        }
        if let Some(code) = &mut self.code {
            code.push_str(t);
            return;
        }
        self.cur
            .get_or_insert_with(Line::default)
            .push(clean(t).into_owned(), style);
    }

    fn flush(&mut self) {
        if let Some(l) = self.cur.take() {
            self.emit(l);
        }
    }

    fn block_start(&mut self) {
        self.flush();
        if !self.out.is_empty() {
            self.set_gap();
        }
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let s = self.style().patch(theme::code());
                if let Some(cell) = &mut self.cell {
                    cell.push(clean(&t).into_owned(), s);
                } else {
                    self.cur
                        .get_or_insert_with(Line::default)
                        .push(clean(&t).into_owned(), s);
                }
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => {
                let l = self.cur.take().unwrap_or_default();
                self.emit(l);
            }
            Event::Rule => {
                self.block_start();
                self.emit(Line::styled("───", theme::gutter()));
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
            Event::FootnoteReference(t) => self.text(&format!("[^{t}]")),
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph => {
                let keep = self.cur.is_none()
                    && matches!(
                        self.containers.last(),
                        Some(Container::Item { used: false, .. })
                    );
                if !keep {
                    self.block_start();
                }
            }
            Tag::Heading { level, .. } => {
                self.block_start();
                self.push_style(theme::heading(level));
                let hashes = "#".repeat(level as usize);
                self.text(&format!("{hashes} "));
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                self.code_lang.clear();
                if let CodeBlockKind::Fenced(lang) = &kind {
                    if !lang.is_empty() {
                        self.emit(Line::styled(format!("```{lang}"), theme::gutter()));
                        self.code_lang = lang.to_string();
                    }
                }
                self.code = Some(String::new());
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n += 1;
                        b
                    }
                    _ => "• ".to_string(),
                };
                self.containers.push(Container::Item {
                    bullet,
                    used: false,
                });
            }
            Tag::Emphasis => self.push_style(Style::PLAIN.italic()),
            Tag::Strong => self.push_style(Style::PLAIN.bold()),
            Tag::Strikethrough => self.push_style(Style {
                strike: true,
                ..Style::PLAIN
            }),
            Tag::Link { dest_url, .. } => {
                self.push_style(theme::link());
                self.link.push(dest_url.to_string());
            }
            Tag::Image { dest_url, .. } => {
                self.push_style(theme::link());
                self.link.push(dest_url.to_string());
                self.text("image: ");
            }
            Tag::Table(_) => {
                self.block_start();
                self.table = Some(Table {
                    rows: Vec::new(),
                    head_rows: 0,
                    in_head: false,
                });
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.cell = Some(Line::default()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.set_gap();
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                let code = code.strip_suffix('\n').unwrap_or(&code).to_string();
                let hl = highlight::lookup(&self.code_lang, &code);
                self.pending |= hl.pending();
                for (i, l) in code.split('\n').enumerate() {
                    let mut body = Line::styled("  ", Style::PLAIN);
                    match hl.line(i) {
                        Some(spans) => {
                            for s in spans {
                                body.push(s.text.clone(), s.style);
                            }
                        }
                        None => body.push(clean(l).into_owned(), theme::code_block()),
                    }
                    self.emit(body);
                }
                self.set_gap();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.set_gap();
                }
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item { used: false, .. }) = self.containers.last() {
                    // An empty item still shows its bullet.
                    self.emit(Line::default());
                }
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.link.pop() {
                    let shown = self.cur.as_ref().map(Line::text).unwrap_or_default();
                    if !url.is_empty() && !shown.ends_with(&url) {
                        self.text("");
                        let s = theme::gutter();
                        self.cur
                            .get_or_insert_with(Line::default)
                            .push(format!(" ({url})"), s);
                    }
                }
            }
            TagEnd::TableCell => {
                let cell = self.cell.take().unwrap_or_default();
                if let Some(t) = &mut self.table {
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = false;
                    t.head_rows = t.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(t);
                }
                self.set_gap();
            }
            _ => {}
        }
    }

    fn table_lines(&mut self, t: Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; cols];
        for row in &t.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(c.width());
            }
        }
        let sep = theme::gutter();
        for (ri, row) in t.rows.iter().enumerate() {
            let mut line = Line::default();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    line.push(" │ ", sep);
                }
                let cell = row.get(i).cloned().unwrap_or_default();
                let pad = w - cell.width();
                let head = ri < t.head_rows;
                for s in cell.spans {
                    let st = if head { s.style.bold() } else { s.style };
                    line.push(s.text, st);
                }
                line.push(" ".repeat(pad), Style::PLAIN);
            }
            self.emit(line);
            if ri + 1 == t.head_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.emit(Line::styled(rule.join("─┼─"), sep));
            }
        }
    }
}

/// Parses a markdown text into logical lines (no wrapping).
pub fn parse(text: &str) -> Vec<MdLine> {
    parse_doc(text).0
}

/// [`parse`], and whether a code block still waits for highlighting.
pub fn parse_doc(text: &str) -> (Vec<MdLine>, bool) {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let mut b = Builder::new();
    for ev in Parser::new_ext(text, opts) {
        b.event(ev);
    }
    b.flush();
    (b.out, b.pending)
}

/// Parses and wraps in one go (tests, one-off rendering).
pub fn render(text: &str, width: usize) -> Vec<Line> {
    parse(text).iter().flat_map(|l| l.wrap(width)).collect()
}

fn fence_of(line: &str) -> Option<(u8, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let c = *t.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = t.bytes().take_while(|&b| b == c).count();
    (n >= 3).then_some((c, n))
}

/// A markdown text that grows by deltas; see the module doc.
#[derive(Debug, Default)]
pub struct MdDoc {
    text: String,
    /// Bytes of `text` parsed into `stable`.
    stable_len: usize,
    stable: Vec<MdLine>,
    /// Where each chunk parsed into `stable` ends (to parse them again the same way).
    chunks: Vec<usize>,
    /// The highlight generation `stable` was parsed at, when a code block in it was pending.
    stable_pending: Option<u64>,
    /// The palette epoch `stable` was parsed at (a new theme parses it again).
    epoch: u64,
    /// Scanning state: where the next unscanned line starts and the open fence there.
    scan: usize,
    fence: Option<(u8, usize)>,
    /// A blank line outside a fence was seen; the next unindented line confirms a boundary.
    blank: bool,
    /// Wrapped rows of `stable` for one width, extended as `stable` grows.
    wrapped: Vec<Line>,
    wrapped_width: usize,
    wrapped_lines: usize,
    /// The row in `wrapped` where each stable line starts.
    starts: Vec<usize>,
    /// Wrapped rows of the tail, for (tail version, width).
    tail: Vec<Line>,
    tail_key: Option<(usize, usize, Option<u64>)>,
}

impl MdDoc {
    pub fn new(text: &str) -> MdDoc {
        let mut d = MdDoc {
            epoch: palette::epoch(),
            ..MdDoc::default()
        };
        d.push(text);
        d
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends a delta; parses whatever became stable.
    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        let mut boundary = None;
        while let Some(nl) = self.text[self.scan..].find('\n') {
            let line = &self.text[self.scan..self.scan + nl];
            let start = self.scan;
            self.scan += nl + 1;
            if let Some((c, n)) = self.fence {
                if fence_of(line).is_some_and(|(c2, n2)| c2 == c && n2 >= n)
                    && line
                        .trim_start()
                        .trim_start_matches(c as char)
                        .trim()
                        .is_empty()
                {
                    self.fence = None;
                }
                continue;
            }
            if line.trim().is_empty() {
                self.blank = true;
                continue;
            }
            if self.blank && !line.starts_with([' ', '\t']) {
                boundary = Some(start);
            }
            self.blank = false;
            if let Some(f) = fence_of(line) {
                self.fence = Some(f);
            }
        }
        // A blank line and the first character of an unindented line: the boundary is known
        // before that line ends.
        if self.blank
            && self.fence.is_none()
            && self.text[self.scan..].starts_with(|c: char| !c.is_whitespace())
        {
            boundary = Some(self.scan);
        }
        if let Some(b) = boundary {
            if b > self.stable_len {
                let gen = highlight::generation();
                let (chunk, pending) = parse_doc(&self.text[self.stable_len..b]);
                if !chunk.is_empty() && !self.stable.is_empty() {
                    self.stable.push(MdLine::default());
                }
                self.stable.extend(chunk);
                self.stable_len = b;
                self.chunks.push(b);
                if pending && self.stable_pending.is_none() {
                    self.stable_pending = Some(gen);
                }
            }
        }
    }

    /// Replaces the whole text.
    pub fn set(&mut self, text: &str) {
        *self = MdDoc::new(text);
    }

    /// The tail's lines, and whether a code block in it waits for highlighting.
    fn tail_lines(&self) -> (Vec<MdLine>, bool) {
        let tail = &self.text[self.stable_len..];
        let (mut lines, pending) = parse_doc(tail);
        if !lines.is_empty() && !self.stable.is_empty() {
            lines.insert(0, MdLine::default());
        }
        (lines, pending)
    }

    /// Parses the stable chunks again (highlighted lines landed), exactly as they were cut.
    fn reparse_stable(&mut self) {
        let gen = highlight::generation();
        let mut stable = Vec::with_capacity(self.stable.len());
        let mut pending = false;
        let mut from = 0;
        for &end in &self.chunks {
            let (chunk, p) = parse_doc(&self.text[from..end]);
            pending |= p;
            if !chunk.is_empty() && !stable.is_empty() {
                stable.push(MdLine::default());
            }
            stable.extend(chunk);
            from = end;
        }
        self.stable = stable;
        self.stable_pending = pending.then_some(gen);
        self.wrapped.clear();
        self.wrapped_lines = 0;
    }

    /// Brings the wrapped rows up to date for `width`; returns the row count.
    pub fn layout(&mut self, width: usize) -> usize {
        let gen = highlight::generation();
        let epoch = palette::epoch();
        if self.epoch != epoch {
            // A new theme: everything is drawn again in its styles.
            self.epoch = epoch;
            self.reparse_stable();
            self.tail_key = None;
        } else if self.stable_pending.is_some_and(|g| g != gen) {
            self.reparse_stable();
        }
        if self.wrapped_width != width {
            self.wrapped.clear();
            self.starts.clear();
            self.wrapped_lines = 0;
            self.wrapped_width = width;
            self.tail_key = None;
        }
        for l in &self.stable[self.wrapped_lines..] {
            self.starts.push(self.wrapped.len());
            self.wrapped.extend(l.wrap(width));
        }
        self.wrapped_lines = self.stable.len();
        // The generation is part of the key only while the tail waits for highlighting.
        let stale = self.tail_key.is_none_or(|(len, w, g)| {
            len != self.text.len() || w != width || g.is_some_and(|g| g != gen)
        });
        if stale {
            let (lines, pending) = self.tail_lines();
            self.tail = lines.iter().flat_map(|l| l.wrap(width)).collect();
            // Read before parsing: a batch landing meanwhile makes it stale again.
            self.tail_key = Some((self.text.len(), width, pending.then_some(gen)));
        }
        self.wrapped.len() + self.tail.len()
    }

    /// Row `i` after [`MdDoc::layout`] for the same width.
    pub fn row(&self, i: usize) -> Option<&Line> {
        if i < self.wrapped.len() {
            self.wrapped.get(i)
        } else {
            self.tail.get(i - self.wrapped.len())
        }
    }

    /// Every logical line, the unfinished tail's too (selection maps rows back to them).
    pub fn lines(&self) -> Vec<MdLine> {
        let mut out = self.stable.clone();
        out.extend(self.tail_lines().0);
        out
    }

    /// Whether a code block waits for its highlighting, as of the last [`MdDoc::layout`]: in
    /// the lines parsed for good (`stable_only`) or anywhere.
    pub fn highlight_pending(&self, stable_only: bool) -> bool {
        self.stable_pending.is_some()
            || (!stable_only
                && self
                    .tail_key
                    .is_some_and(|(_, _, pending)| pending.is_some()))
    }

    /// Logical lines parsed for good (before the last block boundary).
    pub fn stable_lines(&self) -> usize {
        self.stable.len()
    }

    /// The row where stable line `line` starts (the row count of the stable part for
    /// `line >= stable_lines()`), after [`MdDoc::layout`].
    pub fn row_offset(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.wrapped.len())
    }

    /// Drops the wrap caches (memory), keeping the parse.
    pub fn shrink(&mut self) {
        self.wrapped = Vec::new();
        self.starts = Vec::new();
        self.wrapped_lines = 0;
        self.wrapped_width = 0;
        self.tail = Vec::new();
        self.tail_key = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::style::Color;
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn headings_emphasis_code() {
        let l = render("# Title\n\nsome *it* and **bold** and `code`.", 80);
        assert_eq!(texts(&l), ["# Title", "", "some it and bold and code."]);
        assert!(l[0].spans[0].style.bold && l[0].spans[0].style.underline);
        let it = l[2].spans.iter().find(|s| s.text == "it").map(|s| s.style);
        assert_eq!(it.map(|s| s.italic), Some(true));
        let b = l[2]
            .spans
            .iter()
            .find(|s| s.text == "bold")
            .map(|s| s.style);
        assert_eq!(b.map(|s| s.bold), Some(true));
        let c = l[2]
            .spans
            .iter()
            .find(|s| s.text == "code")
            .map(|s| s.style);
        assert_eq!(c, Some(theme::code()));
    }

    #[test]
    fn lists_quotes_fences_links() {
        let md = "- one\n- two words that wrap\n  1. nested\n\n> quoted\n\n```rust\nfn x() {}\n```\n\n[site](http://x.y)";
        let l = render(md, 14);
        assert_eq!(
            texts(&l),
            [
                "• one",
                "• two words",
                "  that wrap",
                "  1. nested",
                "",
                "│ quoted",
                "",
                "```rust",
                "  fn x() {}",
                "",
                "site",
                "(http://x.y)"
            ]
        );
    }

    #[test]
    fn tables() {
        let l = render("| a | bb |\n|---|---|\n| ccc | d |", 40);
        assert_eq!(texts(&l), ["a   │ bb", "────┼───", "ccc │ d "]);
    }

    #[test]
    fn streaming_equals_whole_and_parses_only_the_tail() {
        let md =
            "# H\n\npara one\nstill one\n\n```\ncode\n\nmore code\n```\n\n- a\n- b\n\nlast *words*";
        let whole = {
            let mut d = MdDoc::new(md);
            d.layout(30);
            (0..d.layout(30))
                .filter_map(|i| d.row(i).cloned())
                .collect::<Vec<_>>()
        };
        let mut d = MdDoc::default();
        for ch in md.chars() {
            d.push(&ch.to_string());
            d.layout(30);
        }
        let n = d.layout(30);
        let streamed: Vec<Line> = (0..n).filter_map(|i| d.row(i).cloned()).collect();
        assert_eq!(texts(&streamed), texts(&whole));
        // The blank line inside the fence was not a boundary; the stable part ends before
        // the last paragraph.
        assert!(d.stable_len > 0 && d.text()[d.stable_len..].starts_with("last"));
        assert_eq!(texts(&whole)[0], "# H");
        assert!(texts(&whole).contains(&"  more code".to_string()));
    }

    #[test]
    fn code_blocks_take_their_highlighting_when_it_lands() {
        let md = "intro\n\n```rust\nfn lands() { let q = 1; }\n```\n\nafter\n\nmore";
        let mut d = MdDoc::new(md);
        let n = d.layout(60);
        let code_row = (0..n)
            .find(|&i| d.row(i).is_some_and(|r| r.text().contains("fn lands")))
            .unwrap();
        let fn_style = |d: &MdDoc| {
            d.row(code_row)
                .and_then(|r| r.spans.iter().find(|s| s.text == "fn").map(|s| s.style))
        };
        // The block sits in the stable part; it re-renders once its lines land.
        highlight::wait_done(
            "rust",
            "fn lands() { let q = 1; }",
            std::time::Duration::from_secs(20),
        );
        assert_eq!(d.layout(60), n);
        assert_eq!(fn_style(&d), Some(Style::fg(Color::Magenta)));
        // Unnamed fences stay plain, in the code colour.
        let plain = render("```\nfn x() {}\n```", 40);
        assert_eq!(plain[0].spans[1].style, theme::code_block());
    }
}
