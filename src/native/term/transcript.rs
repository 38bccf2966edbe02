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

    /// Lays the block out at `width`; returns its height in rows.
    fn layout(&mut self, width: usize) -> usize {
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
        self.height = h;
        h
    }

    /// Row `i` after [`Block::layout`] at the same width.
    fn row(&self, i: usize) -> Line {
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
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            blocks: Vec::new(),
            next_id: 1,
            view: View::Follow,
            new_below: 0,
            cached: VecDeque::new(),
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
        while i > 0 {
            i -= 1;
            let h = self.height_of(i, width);
            if h >= need {
                return (i, h - need);
            }
            need -= h;
        }
        (0, 0)
    }

    /// The rows on screen, top to bottom (fewer than `height` when the transcript is short).
    pub fn visible(&mut self, width: usize, height: usize) -> Vec<Line> {
        let (mut b, mut r) = match self.view {
            View::Follow => self.bottom_top(width, height),
            View::At { block, row } => (block, row),
        };
        let mut out = Vec::with_capacity(height);
        while out.len() < height && b < self.blocks.len() {
            let h = self.height_of(b, width);
            while r < h && out.len() < height {
                out.push(self.blocks[b].row(r));
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
