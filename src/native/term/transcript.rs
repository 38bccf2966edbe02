//! The transcript: an append-mostly list of blocks (user messages, answers, thinking, tool
//! rows, notices), each rendering to rows at a width with its own cache, and a view that is
//! either following the bottom or anchored at a (block, row) top. Painting and scrolling walk
//! only the blocks on screen (plus the distance scrolled), never the whole transcript, so a
//! keystroke costs the same with 10 blocks or 100,000. Appending below an anchored view does
//! not move it; the count of blocks added below is kept for the `↓ N new` marker.

use super::diff::{self, Diff, DiffSpec, DiffStyles};
use super::markdown::MdDoc;
use super::style::{Line, Style};
use super::width::{wrap_line, wrap_text};
use super::TermError;
use serde::Deserialize;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What Lua says about a block when it adds or changes one. Every field but `text` is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlockSpec {
    /// Free-form kind (`user`, `assistant`, `thinking`, `tool`, `notice`, ...): for Lua's
    /// bookkeeping and tests; rendering is driven by the other fields.
    pub kind: Option<String>,
    /// Rows shown above the body, folded or not (a tool row, a thinking summary).
    pub head: Option<Line>,
    /// The body text.
    pub text: Option<String>,
    /// Render the body as markdown.
    pub markdown: Option<bool>,
    /// The body is this unified diff (`edit`/`write` results), drawn by [`super::diff`].
    pub diff: Option<DiffSpec>,
    /// Style patched over the body (and head).
    pub style: Option<Style>,
    /// Hide the body, show only the head.
    pub folded: Option<bool>,
    /// Prefix of the body's first row and of its continuation rows (`> ` for the user).
    pub prefix: Option<Line>,
    pub cont: Option<Line>,
    /// A blank row before the block.
    pub gap: Option<bool>,
    /// Still changing (a streaming answer, a running tool). In inline mode a live block stays
    /// in the redrawn band (only the finished lines of a streaming answer go to scrollback)
    /// until an update says `live = false`; other blocks are final once pushed.
    pub live: Option<bool>,
}

#[derive(Debug)]
enum Body {
    Plain(String),
    Md(MdDoc),
    Diff {
        text: String,
        diff: Diff,
        styles: DiffStyles,
    },
}

fn diff_body(spec: DiffSpec) -> Body {
    Body::Diff {
        diff: diff::parse(&spec.text),
        styles: DiffStyles::from_names(&spec.styles),
        text: spec.text,
    }
}

#[derive(Debug)]
pub struct Block {
    pub id: u64,
    pub kind: String,
    head: Option<Line>,
    body: Body,
    style: Style,
    folded: bool,
    prefix: Line,
    cont: Line,
    gap: bool,
    live: bool,
    /// Inline mode: the head and the first `n` stable markdown lines are in scrollback.
    skip: Option<usize>,
    version: u64,
    /// Rows of the gap + head (+ plain body), for (width, version).
    rows: Vec<Line>,
    key: Option<(usize, u64)>,
    height: usize,
}

impl Block {
    fn new(id: u64, spec: BlockSpec) -> Block {
        let text = spec.text.unwrap_or_default();
        let body = if let Some(d) = spec.diff {
            diff_body(d)
        } else if spec.markdown.unwrap_or(false) {
            Body::Md(MdDoc::new(&text))
        } else {
            Body::Plain(text)
        };
        Block {
            id,
            kind: spec.kind.unwrap_or_default(),
            head: spec.head,
            body,
            style: spec.style.unwrap_or_default(),
            folded: spec.folded.unwrap_or(false),
            prefix: spec.prefix.unwrap_or_default(),
            cont: spec.cont.unwrap_or_default(),
            gap: spec.gap.unwrap_or(false),
            live: spec.live.unwrap_or(false),
            skip: None,
            version: 0,
            rows: Vec::new(),
            key: None,
            height: 0,
        }
    }

    fn update(&mut self, spec: BlockSpec) {
        if let Some(k) = spec.kind {
            self.kind = k;
        }
        if let Some(h) = spec.head {
            self.head = Some(h);
        }
        if let Some(md) = spec.markdown {
            let text = self.text().to_string();
            self.body = if md {
                Body::Md(MdDoc::new(&text))
            } else {
                Body::Plain(text)
            };
        }
        if let Some(t) = spec.text {
            match &mut self.body {
                Body::Plain(s) => *s = t,
                Body::Md(d) => d.set(&t),
                Body::Diff { .. } => self.body = Body::Plain(t),
            }
        }
        if let Some(d) = spec.diff {
            self.body = diff_body(d);
        }
        if let Some(s) = spec.style {
            self.style = s;
        }
        if let Some(f) = spec.folded {
            self.folded = f;
        }
        if let Some(p) = spec.prefix {
            self.prefix = p;
        }
        if let Some(c) = spec.cont {
            self.cont = c;
        }
        if let Some(g) = spec.gap {
            self.gap = g;
        }
        if let Some(l) = spec.live {
            self.live = l;
        }
        self.version += 1;
    }

    fn append(&mut self, delta: &str) {
        match &mut self.body {
            Body::Plain(s) => s.push_str(delta),
            Body::Md(d) => d.push(delta),
            Body::Diff { text, diff, .. } => {
                text.push_str(delta);
                *diff = diff::parse(text);
            }
        }
        self.version += 1;
    }

    pub fn text(&self) -> &str {
        match &self.body {
            Body::Plain(s) => s,
            Body::Md(d) => d.text(),
            Body::Diff { text, .. } => text,
        }
    }

    fn body_shown(&self) -> bool {
        !self.folded && !self.text().is_empty()
    }

    /// Lays the block out at `width`; returns its height in rows (without the rows already
    /// committed to scrollback in inline mode).
    fn layout(&mut self, width: usize) -> usize {
        let total = self.total(width);
        let h = total - self.offset().min(total);
        self.height = h;
        h
    }

    /// Rows committed to scrollback before the first row shown (after a layout).
    fn offset(&self) -> usize {
        match (self.skip, &self.body) {
            (Some(k), Body::Md(d)) => self.rows.len() + d.row_offset(k),
            (Some(_), _) => self.rows.len(),
            (None, _) => 0,
        }
    }

    /// Every row of the block at `width`, committed or not.
    fn total(&mut self, width: usize) -> usize {
        if self.key != Some((width, self.version)) {
            let mut rows = Vec::new();
            if self.gap {
                rows.push(Line::default());
            }
            if let Some(h) = &self.head {
                rows.extend(wrap_line(&h.clone().patched(self.style), width));
            }
            if let (true, Body::Plain(text)) = (self.body_shown(), &self.body) {
                let pw = self.prefix.width().max(self.cont.width());
                for (i, r) in wrap_text(text, self.style, width.saturating_sub(pw).max(1))
                    .into_iter()
                    .enumerate()
                {
                    let p = if i == 0 { &self.prefix } else { &self.cont };
                    let mut l = p.clone();
                    l.spans.extend(r.spans);
                    rows.push(l);
                }
            }
            if let (true, Body::Diff { diff, styles, .. }) = (self.body_shown(), &self.body) {
                rows.extend(diff::render(diff, width, styles));
            }
            self.rows = rows;
            self.key = Some((width, self.version));
        }
        let mut h = self.rows.len();
        if self.body_shown() {
            if let Body::Md(d) = &mut self.body {
                let pw = self.prefix.width().max(self.cont.width());
                h += d.layout(width.saturating_sub(pw).max(1));
            }
        }
        h
    }

    /// Where each row (from the first shown) comes from: its logical line (numbered within
    /// the block), that line's text, the cells of decoration before the row's text (prefixes,
    /// bullets, gutters) and the row's text. Wrapping is redone for this block only.
    pub fn sources(&self, width: usize) -> Vec<RowSource> {
        let mut out = Vec::new();
        let mut line = 0;
        let mut add = |text: &str, rows: Vec<(usize, String)>| {
            let text: std::rc::Rc<str> = text.into();
            for (decor, chunk) in rows {
                out.push(RowSource {
                    line,
                    text: text.clone(),
                    decor,
                    chunk,
                });
            }
            line += 1;
        };
        if self.gap {
            add("", vec![(0, String::new())]);
        }
        if let Some(h) = &self.head {
            let rows = wrap_line(h, width).iter().map(|r| (0, r.text())).collect();
            add(&h.text(), rows);
        }
        if self.body_shown() {
            let pw = self.prefix.width().max(self.cont.width());
            let inner = width.saturating_sub(pw).max(1);
            let mut first = true;
            let decor = |first: &mut bool| {
                let d = if *first {
                    self.prefix.width()
                } else {
                    self.cont.width()
                };
                *first = false;
                d
            };
            match &self.body {
                Body::Plain(text) => {
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    for l in text.split('\n') {
                        let l = super::width::clean(l).into_owned();
                        let rows = wrap_line(&Line::plain(l.clone()), inner)
                            .iter()
                            .map(|r| (decor(&mut first), r.text()))
                            .collect();
                        add(&l, rows);
                    }
                }
                Body::Md(d) => {
                    for ml in d.lines() {
                        let mw = ml.first.width().max(ml.cont.width());
                        let rows = wrap_line(&ml.body, inner.saturating_sub(mw).max(1))
                            .iter()
                            .enumerate()
                            .map(|(i, r)| {
                                let m = if i == 0 {
                                    ml.first.width()
                                } else {
                                    ml.cont.width()
                                };
                                (decor(&mut first) + m, r.text())
                            })
                            .collect();
                        add(&ml.body.text(), rows);
                    }
                }
                Body::Diff { diff, styles, .. } => {
                    // A diff row is its own line (its number and sign are part of the text).
                    for r in diff::render(diff, width, styles) {
                        let t = r.text();
                        add(&t, vec![(0, t.clone())]);
                    }
                }
            }
        }
        let skip = self.offset();
        out.into_iter().skip(skip).collect()
    }

    /// Row `i` after [`Block::layout`] at the same width.
    fn row(&self, i: usize) -> Line {
        self.row_abs(i + self.offset())
    }

    /// Row `i` counting the committed rows too.
    fn row_abs(&self, i: usize) -> Line {
        if i < self.rows.len() {
            return self.rows[i].clone();
        }
        if let Body::Md(d) = &self.body {
            let j = i - self.rows.len();
            let p = if j == 0 { &self.prefix } else { &self.cont };
            if let Some(r) = d.row(j) {
                let mut l = p.clone();
                l.spans.extend(r.clone().patched(self.style).spans);
                return l;
            }
        }
        Line::default()
    }

    fn shrink(&mut self) {
        self.rows = Vec::new();
        self.key = None;
        if let Body::Md(d) = &mut self.body {
            d.shrink();
        }
    }
}

/// A search over the transcript (`/find`): the blocks holding the needle, found from their
/// text, and the match shown last (index into `hits`, matching row of that block).
#[derive(Debug, Clone)]
pub struct Search {
    /// Lower-cased (ASCII).
    pub needle: String,
    pub hits: Vec<usize>,
    pub at: Option<(usize, usize)>,
    pub total: usize,
}

/// Occurrences of `needle` (already ASCII lower-case) in `hay`, ignoring ASCII case.
pub fn count_ci(hay: &str, needle: &str) -> usize {
    find_ci(hay, needle).count()
}

/// Byte offsets of the occurrences of `needle` (ASCII lower-case) in `hay`, ignoring ASCII
/// case, not overlapping.
pub fn find_ci<'a>(hay: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if n.is_empty() {
            return None;
        }
        while i + n.len() <= h.len() {
            if h[i..i + n.len()].eq_ignore_ascii_case(n) {
                let at = i;
                i += n.len();
                return Some(at);
            }
            i += 1;
        }
        None
    })
}

/// Where a row on screen comes from (see [`Block::sources`]).
#[derive(Debug, Clone)]
pub struct RowSource {
    pub line: usize,
    pub text: std::rc::Rc<str>,
    pub decor: usize,
    pub chunk: String,
}

/// Where the transcript view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The last rows are on screen; new output scrolls.
    Follow,
    /// The top row on screen is row `row` of the block at index `block`.
    At { block: usize, row: usize },
}

/// Blocks laid out and kept in memory at most (the rest re-lay out when scrolled to).
const CACHE_BLOCKS: usize = 2048;

#[derive(Debug)]
pub struct Transcript {
    blocks: Vec<Block>,
    next_id: u64,
    pub view: View,
    /// Blocks added while the view was anchored.
    pub new_below: usize,
    cached: VecDeque<u64>,
    /// The (block index, row) of each row of the last [`Transcript::visible`] (selection).
    pub shown: Vec<(usize, usize)>,
    /// The active search (`/find`), if any.
    pub search: Option<Search>,
    /// Inline mode: blocks before this index are in the terminal's scrollback (and the block
    /// at it may be partly, see [`Transcript::take_commits`]); the view starts after them.
    pub committed: usize,
    /// Inline mode: the (block, stable lines) held back from scrollback while its code is
    /// highlighted, and since when (see [`HIGHLIGHT_HOLD`]).
    hold: Option<((usize, usize), Instant)>,
}

/// Inline mode: how long rows whose code block is still being highlighted wait before they go
/// to scrollback plain (rows there are never rewritten). Highlighting landing (or failing)
/// wakes the painter, so the wait ends as soon as it is over.
pub const HIGHLIGHT_HOLD: Duration = Duration::from_millis(500);

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            blocks: Vec::new(),
            next_id: 1,
            view: View::Follow,
            new_below: 0,
            cached: VecDeque::new(),
            shown: Vec::new(),
            search: None,
            committed: 0,
            hold: None,
        }
    }
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    fn index(&self, id: u64) -> Result<usize, TermError> {
        // Ids grow with position, so a binary search finds them.
        self.blocks
            .binary_search_by_key(&id, |b| b.id)
            .map_err(|_| TermError::NoBlock(id))
    }

    /// The logical text between two positions of the last view: (shown row, column) from
    /// `a` to `b` inclusive, in either order. Wrapped rows are joined back into their lines,
    /// decorations (prefixes, bullets, gutters) are left out, lines end with "\n".
    pub fn selection_text(&self, a: (usize, usize), b: (usize, usize), width: usize) -> String {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        let mut out = String::new();
        let mut sources: Option<(usize, Vec<RowSource>)> = None;
        // The logical line (block, line) of the last piece, and where it ended in that line.
        let mut last: Option<(usize, usize, usize)> = None;
        for row in a.0..=b.0.min(self.shown.len().saturating_sub(1)) {
            let Some(&(bi, r)) = self.shown.get(row) else {
                break;
            };
            if sources.as_ref().is_none_or(|(i, _)| *i != bi) {
                sources = Some((bi, self.blocks[bi].sources(width)));
            }
            let Some(src) = sources.as_ref().and_then(|(_, s)| s.get(r)) else {
                continue;
            };
            let from_col = if row == a.0 { a.1 } else { 0 };
            let to_col = if row == b.0 { b.1 + 1 } else { usize::MAX };
            let cut = |col: usize| {
                let cells = col.saturating_sub(src.decor);
                let mut w = 0;
                for (i, ch) in src.chunk.char_indices() {
                    if w >= cells {
                        return i;
                    }
                    w += super::width::str_width(&ch.to_string()).max(1);
                }
                src.chunk.len()
            };
            let (c0, c1) = (cut(from_col), cut(to_col));
            // The chunk's place in its line: after the last piece of the same line.
            let same = matches!(last, Some((lb, ll, _)) if lb == bi && ll == src.line);
            let from = if same { last.map_or(0, |l| l.2) } else { 0 };
            let start = src.text[from.min(src.text.len())..]
                .find(src.chunk.as_str())
                .map_or(from, |i| from + i);
            if last.is_some() && !same {
                out.push('\n');
            }
            let (s0, s1) = (start + c0, (start + c1).min(src.text.len()));
            if same {
                // The spaces the wrap dropped between the pieces.
                let prev_end = last.map_or(0, |l| l.2);
                if c0 == 0 && prev_end < start {
                    out.push_str(&src.text[prev_end..start]);
                }
            }
            if s0 < s1 {
                out.push_str(&src.text[s0..s1]);
            }
            last = Some((bi, src.line, start + src.chunk.len()));
        }
        out
    }

    pub fn block(&self, id: u64) -> Result<&Block, TermError> {
        Ok(&self.blocks[self.index(id)?])
    }

    /// Adds a block at the end; returns its id.
    pub fn push(&mut self, spec: BlockSpec) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.blocks.push(Block::new(id, spec));
        if matches!(self.view, View::At { .. }) {
            self.new_below += 1;
        }
        id
    }

    pub fn update(&mut self, id: u64, spec: BlockSpec) -> Result<(), TermError> {
        let i = self.index(id)?;
        self.blocks[i].update(spec);
        Ok(())
    }

    pub fn append(&mut self, id: u64, delta: &str) -> Result<(), TermError> {
        let i = self.index(id)?;
        self.blocks[i].append(delta);
        Ok(())
    }

    /// Folds or unfolds every block of a kind (Ctrl-T for thinking, Ctrl-O for tools).
    pub fn fold_kind(&mut self, kind: &str, folded: bool) {
        for b in self.blocks.iter_mut().filter(|b| b.kind == kind) {
            if b.folded != folded {
                b.folded = folded;
                b.version += 1;
            }
        }
    }

    pub fn clear(&mut self) {
        self.committed = 0;
        self.search = None;
        self.blocks.clear();
        self.cached.clear();
        self.view = View::Follow;
        self.new_below = 0;
    }

    fn height_of(&mut self, i: usize, width: usize) -> usize {
        let b = &mut self.blocks[i];
        let was = b.key.is_some();
        let h = b.layout(width);
        if !was {
            let id = b.id;
            self.cached.push_back(id);
            self.evict();
        }
        h
    }

    fn evict(&mut self) {
        while self.cached.len() > CACHE_BLOCKS {
            let Some(id) = self.cached.pop_front() else {
                break;
            };
            if let Ok(i) = self.index(id) {
                self.blocks[i].shrink();
            }
        }
    }

    /// The (block, row) of the top row when following the bottom with `height` rows.
    fn bottom_top(&mut self, width: usize, height: usize) -> (usize, usize) {
        let mut need = height;
        let mut i = self.blocks.len();
        while i > self.committed {
            i -= 1;
            let h = self.height_of(i, width);
            if h >= need {
                return (i, h - need);
            }
            need -= h;
        }
        (self.committed, 0)
    }

    /// Inline mode: the rows that became final since the last call, in order, each to be
    /// written to scrollback once. A block is final when it and every block before it are no
    /// longer live; of a live streaming answer, the head and the markdown lines before its
    /// last block boundary are final (they never re-wrap: a later width applies to the rest).
    /// `all` takes everything, live or not (exit, suspend).
    pub fn take_commits(&mut self, width: usize, all: bool) -> Vec<Line> {
        let mut out = Vec::new();
        while self.committed < self.blocks.len() {
            let i = self.committed;
            let total = {
                self.height_of(i, width);
                self.blocks[i].total(width)
            };
            let b = &self.blocks[i];
            // Code still being highlighted holds its rows back a moment (scrollback is final).
            let (waiting, waiting_stable) = match &b.body {
                Body::Md(d) if !all => (d.highlight_pending(false), d.highlight_pending(true)),
                _ => (false, false),
            };
            if !b.live || all {
                if waiting && self.held((i, usize::MAX)) {
                    break;
                }
                let b = &mut self.blocks[i];
                let from = b.offset().min(total);
                out.extend((from..total).map(|r| b.row_abs(r)));
                self.committed += 1;
                continue;
            }
            if let (Body::Md(d), false) = (&b.body, b.folded) {
                let k = d.stable_lines();
                if k > b.skip.unwrap_or(0) {
                    if waiting_stable && self.held((i, k)) {
                        break;
                    }
                    let b = &mut self.blocks[i];
                    let from = b.offset().min(total);
                    b.skip = Some(k);
                    let to = b.offset().min(total);
                    out.extend((from..to).map(|r| b.row_abs(r)));
                    b.layout(width);
                }
            }
            break;
        }
        out
    }

    /// Whether the rows of `key` (block, stable lines) still wait for their highlighting:
    /// the first ask starts the [`HIGHLIGHT_HOLD`] clock.
    fn held(&mut self, key: (usize, usize)) -> bool {
        let since = match self.hold {
            Some((k, since)) if k == key => since,
            _ => self.hold.insert((key, Instant::now())).1,
        };
        since.elapsed() < HIGHLIGHT_HOLD
    }

    /// The rows on screen, top to bottom (fewer than `height` when the transcript is short).
    pub fn visible(&mut self, width: usize, height: usize) -> Vec<Line> {
        let (mut b, mut r) = match self.view {
            View::Follow => self.bottom_top(width, height),
            View::At { block, row } => (block, row),
        };
        let mut out = Vec::with_capacity(height);
        self.shown.clear();
        while out.len() < height && b < self.blocks.len() {
            let h = self.height_of(b, width);
            while r < h && out.len() < height {
                out.push(self.blocks[b].row(r));
                self.shown.push((b, r));
                r += 1;
            }
            b += 1;
            r = 0;
        }
        if out.len() < height && matches!(self.view, View::At { .. }) {
            // Scrolled past the end (the transcript was re-wrapped narrower, or cleared).
            self.follow();
            return self.visible(width, height);
        }
        out
    }

    pub fn follow(&mut self) {
        self.view = View::Follow;
        self.new_below = 0;
    }

    pub fn top(&mut self) {
        if !self.blocks.is_empty() {
            self.view = View::At { block: 0, row: 0 };
        }
    }

    /// Anchors the view a few rows above row `row` of block `i` (a jump: Ctrl-G, `/jump`,
    /// `/find`).
    fn show(&mut self, i: usize, row: usize, width: usize, height: usize) {
        self.view = View::At { block: i, row };
        self.scroll_up(2.min(height / 4), width, height);
        // A view whose rows would run past the end follows the bottom instead.
        self.scroll_down(0, width, height);
    }

    /// Jumps to the block with id `id`; false when there is none.
    pub fn jump(&mut self, id: u64, width: usize, height: usize) -> bool {
        match self.index(id) {
            Ok(i) => {
                self.show(i, 0, width, height);
                true
            }
            Err(_) => false,
        }
    }

    /// Starts a search for `needle` (ASCII case-insensitive) over every block's own text and
    /// head: no block is rendered for it. Returns how many times it occurs.
    pub fn find(&mut self, needle: &str) -> usize {
        let needle = needle.to_ascii_lowercase();
        if needle.is_empty() {
            self.search = None;
            return 0;
        }
        let mut hits = Vec::new();
        let mut total = 0;
        for (i, b) in self.blocks.iter().enumerate() {
            let mut n = count_ci(b.text(), &needle);
            if let Some(h) = &b.head {
                n += count_ci(&h.text(), &needle);
            }
            if n > 0 {
                hits.push(i);
                total += n;
            }
        }
        self.search = Some(Search {
            needle,
            hits,
            at: None,
            total,
        });
        total
    }

    /// Moves to the next (`forward`) or previous match, wrapping around, and shows it.
    /// Returns the match's (row-wise) position among the blocks with matches: (block
    /// number, blocks with matches), or None when nothing matches.
    pub fn find_step(
        &mut self,
        forward: bool,
        width: usize,
        height: usize,
    ) -> Option<(usize, usize)> {
        let s = self.search.as_ref()?;
        if s.hits.is_empty() {
            return None;
        }
        let needle = s.needle.clone();
        let n = s.hits.len();
        // Matching rows of the current block, then the neighbouring blocks with matches.
        let (mut hi, mut ri) = match s.at {
            Some((h, r)) => (h, r as isize + if forward { 1 } else { -1 }),
            None => {
                // From the view: the first block with a match at or after the top (forward),
                // or before it.
                let top = match self.view {
                    View::At { block, .. } => block,
                    View::Follow => self.blocks.len(),
                };
                let h = if forward {
                    s.hits.iter().position(|&b| b >= top).unwrap_or(0)
                } else {
                    s.hits.iter().rposition(|&b| b < top).unwrap_or(n - 1)
                };
                (h, if forward { 0 } else { isize::MAX })
            }
        };
        for _ in 0..=n {
            let b = self.search.as_ref()?.hits[hi];
            let rows = self.match_rows(b, width, &needle);
            let count = rows.len().max(1) as isize;
            if ri == isize::MAX {
                ri = count - 1;
            }
            if ri >= 0 && ri < count {
                let row = rows.get(ri as usize).copied().unwrap_or(0);
                if let Some(s) = &mut self.search {
                    s.at = Some((hi, ri as usize));
                }
                self.show(b, row, width, height);
                return Some((hi + 1, n));
            }
            if forward {
                hi = (hi + 1) % n;
                ri = 0;
            } else {
                hi = (hi + n - 1) % n;
                ri = isize::MAX;
            }
        }
        None
    }

    /// Rows of block `i` whose text holds `needle` (only this block is laid out).
    fn match_rows(&mut self, i: usize, width: usize, needle: &str) -> Vec<usize> {
        let h = self.height_of(i, width);
        (0..h)
            .filter(|&r| count_ci(&self.blocks[i].row(r).text(), needle) > 0)
            .collect()
    }

    /// Scrolls up `n` rows (toward the start).
    pub fn scroll_up(&mut self, n: usize, width: usize, height: usize) {
        let (mut b, mut r) = match self.view {
            View::Follow => self.bottom_top(width, height),
            View::At { block, row } => (block, row),
        };
        let mut n = n;
        loop {
            if r >= n {
                r -= n;
                break;
            }
            n -= r;
            if b == 0 {
                r = 0;
                break;
            }
            b -= 1;
            r = self.height_of(b, width);
        }
        if self.view == View::Follow && (b, r) == self.bottom_top(width, height) {
            return;
        }
        self.view = View::At { block: b, row: r };
    }

    /// Scrolls down `n` rows; reaching the bottom follows again.
    pub fn scroll_down(&mut self, n: usize, width: usize, height: usize) {
        let View::At {
            block: mut b,
            row: mut r,
        } = self.view
        else {
            return;
        };
        let mut n = n;
        while n > 0 && b < self.blocks.len() {
            let h = self.height_of(b, width);
            if r + n < h {
                r += n;
                n = 0;
            } else {
                n -= h - r;
                b += 1;
                r = 0;
            }
        }
        // Follow once fewer than a screen of rows remain below the top.
        let mut below = 0;
        let mut i = b;
        let mut first = r;
        while i < self.blocks.len() && below < height {
            below += self.height_of(i, width) - first;
            first = 0;
            i += 1;
        }
        if below <= height {
            self.follow();
        } else {
            self.view = View::At { block: b, row: r };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> BlockSpec {
        BlockSpec {
            text: Some(text.into()),
            ..Default::default()
        }
    }

    fn texts(v: &[Line]) -> Vec<String> {
        v.iter().map(Line::text).collect()
    }

    #[test]
    fn follows_the_bottom_and_wraps() {
        let mut t = Transcript::default();
        t.push(plain("one\ntwo"));
        t.push(plain("three four five"));
        assert_eq!(texts(&t.visible(6, 3)), ["three", "four", "five"]);
        assert_eq!(
            texts(&t.visible(6, 10)),
            ["one", "two", "three", "four", "five"]
        );
    }

    #[test]
    fn anchored_view_stays_when_output_arrives() {
        let mut t = Transcript::default();
        for i in 0..10 {
            t.push(plain(&format!("line {i}")));
        }
        t.scroll_up(3, 20, 4);
        assert_eq!(
            texts(&t.visible(20, 4)),
            ["line 3", "line 4", "line 5", "line 6"]
        );
        let id = t.push(plain("new"));
        t.append(id, " more").ok();
        assert_eq!(
            texts(&t.visible(20, 4)),
            ["line 3", "line 4", "line 5", "line 6"]
        );
        assert_eq!(t.new_below, 1);
        t.scroll_down(100, 20, 4);
        assert_eq!(t.view, View::Follow);
        assert_eq!(t.new_below, 0);
        assert_eq!(
            texts(&t.visible(20, 4)),
            ["line 7", "line 8", "line 9", "new more"]
        );
        t.top();
        assert_eq!(texts(&t.visible(20, 2)), ["line 0", "line 1"]);
        t.scroll_up(5, 20, 2);
        assert_eq!(texts(&t.visible(20, 2)), ["line 0", "line 1"]);
    }

    #[test]
    fn folding_heads_prefixes_and_markdown() {
        let mut t = Transcript::default();
        let id = t.push(BlockSpec {
            kind: Some("tool".into()),
            head: Some(Line::plain("tool> ok read a.txt (2 lines, 4B)")),
            text: Some("a\nb".into()),
            folded: Some(true),
            ..Default::default()
        });
        assert_eq!(
            texts(&t.visible(80, 5)),
            ["tool> ok read a.txt (2 lines, 4B)"]
        );
        t.fold_kind("tool", false);
        assert_eq!(texts(&t.visible(80, 5)).len(), 3);
        t.update(
            id,
            BlockSpec {
                folded: Some(true),
                ..Default::default()
            },
        )
        .ok();
        let md = t.push(BlockSpec {
            markdown: Some(true),
            prefix: Some(Line::plain("● ")),
            cont: Some(Line::plain("  ")),
            gap: Some(true),
            ..Default::default()
        });
        t.append(md, "**hi** there\n\nsecond").ok();
        assert_eq!(
            texts(&t.visible(80, 10)),
            [
                "tool> ok read a.txt (2 lines, 4B)",
                "",
                "● hi there",
                "  ",
                "  second"
            ]
        );
        assert!(t.update(999, BlockSpec::default()).is_err());
    }

    #[test]
    fn painting_touches_only_visible_blocks() {
        let mut t = Transcript::default();
        for i in 0..20_000 {
            t.push(plain(&format!("message {i}")));
        }
        let rows = t.visible(40, 10);
        assert_eq!(
            rows.last().map(Line::text).as_deref(),
            Some("message 19999")
        );
        let laid_out = t.blocks.iter().filter(|b| b.key.is_some()).count();
        assert_eq!(laid_out, 10);
    }

    #[test]
    fn a_diff_body_folds_and_renders_at_the_width() {
        let mut t = Transcript::default();
        t.push(BlockSpec {
            kind: Some("tool".into()),
            head: Some(Line::plain("tool> ok edit a.txt")),
            diff: Some(DiffSpec {
                text: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n".into(),
                ..Default::default()
            }),
            folded: Some(true),
            ..Default::default()
        });
        assert_eq!(texts(&t.visible(80, 10)), ["tool> ok edit a.txt"]);
        t.fold_kind("tool", false);
        assert_eq!(
            texts(&t.visible(80, 10)),
            ["tool> ok edit a.txt", "@@ -1 +1 @@", "1 - old", "1 + new"]
        );
        assert_eq!(t.visible(170, 10).len(), 3);
    }
}

#[cfg(test)]
mod nav_tests {
    use super::*;

    fn plain(text: &str) -> BlockSpec {
        BlockSpec {
            text: Some(text.into()),
            ..Default::default()
        }
    }

    #[test]
    fn jump_and_find_show_the_block() {
        let mut t = Transcript::default();
        let mut ids = Vec::new();
        for q in ["first question", "second question"] {
            ids.push(t.push(plain(q)));
            let rows: Vec<String> = (0..40).map(|i| format!("row {i}")).collect();
            t.push(plain(&rows.join("\n")));
        }
        assert!(t.jump(ids[1], 40, 10));
        let rows: Vec<String> = t.visible(40, 10).iter().map(Line::text).collect();
        assert!(rows.contains(&"second question".to_string()), "{rows:?}");
        assert_eq!(t.find("QUESTION"), 2);
        t.follow();
        assert_eq!(t.find_step(false, 40, 10), Some((2, 2)));
        let rows: Vec<String> = t.visible(40, 10).iter().map(Line::text).collect();
        assert!(rows.contains(&"second question".to_string()), "{rows:?}");
        assert_eq!(t.find_step(true, 40, 10), Some((1, 2)));
        let rows: Vec<String> = t.visible(40, 10).iter().map(Line::text).collect();
        assert!(rows.contains(&"first question".to_string()), "{rows:?}");
    }

    #[test]
    fn inline_commits_finished_paragraphs_once_and_live_blocks_at_the_end() {
        let mut t = Transcript::default();
        t.push(plain("question"));
        let md = t.push(BlockSpec {
            markdown: Some(true),
            live: Some(true),
            gap: Some(true),
            ..Default::default()
        });
        let texts = |v: Vec<Line>| v.iter().map(Line::text).collect::<Vec<_>>();
        assert_eq!(texts(t.take_commits(20, false)), ["question"]);
        t.append(md, "first paragraph\n\nsecond").ok();
        // The first paragraph is final (a boundary follows); "second" may still grow.
        assert_eq!(texts(t.take_commits(20, false)), ["", "first paragraph"]);
        assert!(t.take_commits(20, false).is_empty());
        let shown: Vec<String> = t.visible(20, 10).iter().map(Line::text).collect();
        assert_eq!(shown, ["", "second"]);
        t.append(md, " grows and wraps here").ok();
        // A narrower width re-wraps only what is not written yet.
        assert!(t.take_commits(10, false).is_empty());
        t.update(
            md,
            BlockSpec {
                live: Some(false),
                ..Default::default()
            },
        )
        .ok();
        let rest = texts(t.take_commits(10, false));
        assert_eq!(rest.join("|"), "|second|grows and|wraps here");
        assert!(t.visible(10, 5).is_empty());
        // A live tool row holds back what follows it until it is final.
        let tool = t.push(BlockSpec {
            live: Some(true),
            text: Some("run".into()),
            ..Default::default()
        });
        t.push(plain("notice"));
        assert!(t.take_commits(20, false).is_empty());
        t.update(
            tool,
            BlockSpec {
                live: Some(false),
                text: Some("ok".into()),
                ..Default::default()
            },
        )
        .ok();
        assert_eq!(texts(t.take_commits(20, false)), ["ok", "notice"]);
    }
}
