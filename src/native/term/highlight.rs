//! Syntax highlighting of fenced code blocks, off the UI thread, by one of two engines:
//! [`treesitter`] for the languages answers show most (a grammar and its own highlight
//! query: fast enough for a 5,000-line block in tens of milliseconds) and [`textmate`]
//! (syntect with bat's broad syntax set) for every other language. Neither is loaded at
//! start-up: a worker thread loads what a block needs on the first block asking for it.
//! [`lookup`] never blocks: it answers the lines highlighted so far (a block that only grew
//! since, as while an answer streams, keeps its highlighted prefix) and queues the rest; the
//! worker publishes its progress as it goes, bumps [`generation`] and calls the waker, so the
//! screen repaints. Blocks over [`MAX_BYTES`] or [`MAX_LINES`] stay plain, as does everything
//! while [`set_enabled`] is off (`NO_COLOR`).

mod textmate;
mod treesitter;

use super::palette;
use super::style::Span;
use super::width::clean;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Code blocks larger than this stay plain.
pub const MAX_BYTES: usize = 512 * 1024;
/// Code blocks with more lines than this stay plain.
pub const MAX_LINES: usize = 10_000;
/// Highlighted text kept for lookups (oldest dropped first).
const CACHE_BYTES: usize = 16 * 1024 * 1024;
/// The worker publishes its progress at most this often on a long block.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// What [`lookup`] knows about a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Shown plain for good: too large, disabled, no or an unknown language.
    Plain,
    /// The first `.1` lines are highlighted (maybe none); the rest is queued.
    Pending(Arc<Vec<Vec<Span>>>, usize),
    /// Every line highlighted.
    Done(Arc<Vec<Vec<Span>>>),
}

impl Lookup {
    /// Highlighted spans of line `i`, if any.
    pub fn line(&self, i: usize) -> Option<&Vec<Span>> {
        match self {
            Lookup::Plain => None,
            Lookup::Pending(l, n) => l.get(i).filter(|_| i < *n),
            Lookup::Done(l) => l.get(i),
        }
    }
    pub fn pending(&self) -> bool {
        matches!(self, Lookup::Pending(..))
    }
}

type Waker = Arc<dyn Fn() + Send + Sync>;

/// What an engine keeps to go on from when a block grows.
enum Resume {
    /// The TextMate states after the last line and before it.
    TextMate {
        after: Box<textmate::States>,
        before_last: Box<textmate::States>,
    },
    /// The tree-sitter tree of the whole text, for an incremental parse.
    TreeSitter(tree_sitter::Tree),
    /// Nothing: a block too much for tree-sitter in a language syntect does not know, shown
    /// as plain code (and again from scratch if it grows).
    Plain,
}

/// A highlighted prefix of some block: its text (whole lines, each ending in `\n`), one span
/// list per line, and what to go on from. While an answer streams, the last line of a block
/// is often unfinished: a block that grew past it still uses every line but that one.
struct Entry {
    lang: String,
    text: String,
    lines: Arc<Vec<Vec<Span>>>,
    resume: Resume,
    /// Where the last line starts.
    last_start: usize,
}

impl Entry {
    /// (bytes, lines) of `text` this entry covers, if it covers a prefix of it.
    fn covers(&self, text: &str) -> Option<(usize, usize)> {
        if text.starts_with(self.text.as_str()) {
            return Some((self.text.len(), self.lines.len()));
        }
        let head = self.text.get(..self.last_start)?;
        (!self.lines.is_empty() && text.starts_with(head))
            .then(|| (self.last_start, self.lines.len() - 1))
    }
}

#[derive(Default)]
struct State {
    entries: VecDeque<Entry>,
    bytes: usize,
    unknown: HashSet<String>,
    queue: VecDeque<(String, String)>,
    worker: bool,
    waker: Option<Waker>,
    /// The palette epoch the entries were drawn in (a new theme drops them).
    epoch: u64,
}

struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

static SHARED: OnceLock<Shared> = OnceLock::new();
static GENERATION: AtomicU64 = AtomicU64::new(0);
static ENABLED: AtomicBool = AtomicBool::new(true);
static LOADED: AtomicBool = AtomicBool::new(false);

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| Shared {
        state: Mutex::new(State::default()),
        cv: Condvar::new(),
    })
}

fn lock() -> MutexGuard<'static, State> {
    // A panic on the worker while holding the lock leaves plain code, not a dead UI.
    shared().state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bumped whenever highlighted lines land; a document holding pending blocks re-renders
/// when it changed.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Highlighting on or off (off under `NO_COLOR`: nothing is loaded, blocks stay plain).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Release);
}

/// Whether any syntax asset (the TextMate syntax set or a tree-sitter query) has been
/// loaded (start-up must not load them).
pub fn loaded() -> bool {
    LOADED.load(Ordering::Acquire)
}

fn mark_loaded() {
    LOADED.store(true, Ordering::Release);
}

/// Called (from the worker thread) whenever highlighted lines land.
pub fn set_waker(w: Option<Waker>) {
    lock().waker = w;
}

/// The language token of a fence's info string: `rust,ignore` and `python title=x` name
/// `rust` and `python`.
pub fn lang_token(info: &str) -> &str {
    info.split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .next()
        .unwrap_or("")
        .trim()
}

/// The highlighted lines of `code` (lines separated by `\n`, no trailing newline) in `lang`,
/// as far as they are known; queues the rest. Never blocks on highlighting.
pub fn lookup(lang: &str, code: &str) -> Lookup {
    let lang = lang_token(lang).to_ascii_lowercase();
    if lang.is_empty()
        || !ENABLED.load(Ordering::Acquire)
        || code.len() > MAX_BYTES
        || memchr::memchr_iter(b'\n', code.as_bytes()).count() >= MAX_LINES
    {
        return Lookup::Plain;
    }
    let mut text = String::with_capacity(code.len() + 1);
    text.push_str(code);
    text.push('\n');
    let total = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    let mut st = lock();
    if st.unknown.contains(&lang) {
        return Lookup::Plain;
    }
    let epoch = palette::epoch();
    if st.epoch != epoch {
        // A new theme: every block is highlighted again in its styles.
        st.entries.clear();
        st.bytes = 0;
        st.epoch = epoch;
    }
    if let Some((i, _, n)) = best(&st, &lang, &text) {
        let e = &st.entries[i];
        if n >= total {
            return Lookup::Done(if e.lines.len() == total {
                e.lines.clone()
            } else {
                Arc::new(e.lines[..total].to_vec())
            });
        }
        let prefix = e.lines.clone();
        enqueue(&mut st, lang, text);
        return Lookup::Pending(prefix, n);
    }
    enqueue(&mut st, lang, text);
    Lookup::Pending(Arc::new(Vec::new()), 0)
}

/// The entry covering the longest prefix of `text`: (index, bytes, lines).
fn best(st: &State, lang: &str, text: &str) -> Option<(usize, usize, usize)> {
    st.entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.lang == lang)
        .filter_map(|(i, e)| e.covers(text).map(|(b, n)| (i, b, n)))
        .max_by_key(|&(_, b, _)| b)
}

fn enqueue(st: &mut State, lang: String, text: String) {
    if st.queue.iter().any(|(l, t)| *l == lang && *t == text) {
        return;
    }
    // A block that grew (streaming) replaces its queued shorter self.
    st.queue
        .retain(|(l, t)| !(*l == lang && text.starts_with(t.as_str())));
    st.queue.push_back((lang, text));
    if !st.worker {
        st.worker = true;
        let spawned = std::thread::Builder::new()
            .name("fen-highlight".into())
            .spawn(worker);
        if spawned.is_err() {
            // No thread, no highlighting: everything stays plain.
            st.worker = false;
            st.queue.clear();
            ENABLED.store(false, Ordering::Release);
            return;
        }
    }
    shared().cv.notify_one();
}

fn worker() {
    // The lowest CPU priority for this thread only (Linux threads have their own nice value):
    // on a busy machine the UI thread's frames go first.
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no memory preconditions; a failure only leaves the
    // priority as it was.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
    loop {
        let (lang, text) = {
            let mut st = lock();
            loop {
                if let Some(r) = st.queue.pop_front() {
                    break r;
                }
                st = shared().cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A panic in an engine leaves that language plain, not the worker dead.
        let done = std::panic::catch_unwind(|| highlight_request(&lang, &text));
        if done.is_err() {
            forget_language(&lang);
        }
    }
}

/// Blocks in `lang` stay plain from now on; the screen is woken (a block waiting for its
/// highlighting shows plain now).
fn forget_language(lang: &str) {
    let waker = {
        let mut st = lock();
        st.unknown.insert(lang.to_string());
        st.queue.retain(|(l, _)| l != lang);
        GENERATION.fetch_add(1, Ordering::AcqRel);
        st.waker.clone()
    };
    if let Some(w) = waker {
        w();
    }
}

/// Highlights `text` in `lang` with the engine that covers it, going on from the longest
/// highlighted prefix. A block tree-sitter could not do within its budget goes to the
/// TextMate engine, and stays there as it grows.
fn highlight_request(lang: &str, text: &str) {
    // The styles this pass draws in (a theme changing meanwhile drops its result).
    let styles = (palette::epoch(), palette::snapshot());
    if let Some(g) = treesitter::grammar(lang) {
        if tree_sitter_request(g, lang, text, styles) {
            return;
        }
    }
    textmate_request(lang, text, styles)
}

/// The palette epoch and styles a pass draws in.
type Styles = (u64, palette::Palette);

/// The whole block at once (tens of milliseconds even for a long one), parsed incrementally
/// from the previous tree when the block grew. False when the TextMate engine should take the
/// block: it had it before, or this pass ran past [`treesitter::BUDGET`].
fn tree_sitter_request(g: &treesitter::Compiled, lang: &str, text: &str, styles: Styles) -> bool {
    // The previous entry's parts, copied out so the lock is not held while parsing.
    let previous = {
        let st = lock();
        match best(&st, lang, text) {
            Some((i, bytes, n)) => {
                let e = &st.entries[i];
                match &e.resume {
                    Resume::TreeSitter(tree) => Some(Some((
                        tree.clone(),
                        e.text.clone(),
                        e.lines.clone(),
                        (bytes, n),
                    ))),
                    Resume::TextMate { .. } | Resume::Plain => None,
                }
            }
            None => Some(None),
        }
    };
    let Some(previous) = previous else {
        return false;
    };
    if previous
        .as_ref()
        .is_some_and(|(_, old, _, _)| old.as_str() == text)
    {
        return true;
    }
    let started = Instant::now();
    let deadline = started + treesitter::BUDGET;
    let result = match &previous {
        Some((tree, old, lines, kept)) => treesitter::highlight(
            g,
            text,
            Some(treesitter::Previous {
                tree,
                text: old,
                lines,
                kept: *kept,
            }),
            &styles.1,
            deadline,
        ),
        None => treesitter::highlight(g, text, None, &styles.1, deadline),
    };
    let Some((lines, tree)) = result else {
        return false;
    };
    let last_start = last_line_start(text);
    publish(
        lang,
        text,
        lines,
        Resume::TreeSitter(tree),
        last_start,
        styles.0,
    );
    // A block growing while an answer streams: its error-recovering parse often changes from
    // the top, so a pass can cost the whole block. Resting as long as the pass took keeps
    // this thread under half a core; the deltas arriving meanwhile coalesce into one pass.
    if previous.is_some() {
        std::thread::sleep(started.elapsed().min(Duration::from_millis(50)));
    }
    true
}

/// Where the last line of `text` (ending in `\n`) starts.
fn last_line_start(text: &str) -> usize {
    let body = &text.as_bytes()[..text.len().saturating_sub(1)];
    memchr::memrchr(b'\n', body).map_or(0, |i| i + 1)
}

/// Line by line from the longest known prefix's state, publishing progress as it goes.
fn textmate_request(lang: &str, text: &str, styles: Styles) {
    let (mut done, mut lines, from) = {
        let st = lock();
        match best(&st, lang, text) {
            Some((i, bytes, n)) => {
                let e = &st.entries[i];
                if bytes == text.len() {
                    return;
                }
                let from = match &e.resume {
                    Resume::TextMate { after, .. } if n == e.lines.len() => Some((**after).clone()),
                    Resume::TextMate { before_last, .. } => Some((**before_last).clone()),
                    Resume::TreeSitter(_) | Resume::Plain => None,
                };
                match from {
                    Some(from) => (text[..bytes].to_string(), e.lines[..n].to_vec(), Some(from)),
                    None => (String::new(), Vec::new(), None),
                }
            }
            None => (String::new(), Vec::new(), None),
        }
    };
    let Some(mut run) = textmate::Run::new(lang, from, styles.1) else {
        if treesitter::covers(lang) {
            // Too much for tree-sitter and no TextMate syntax: this block shows as plain code.
            let plain = palette::get(palette::Role::CodeBlock);
            let lines = text
                .split_inclusive('\n')
                .map(|l| vec![Span::new(clean(l.trim_end_matches('\n')), plain)])
                .collect();
            let resume = Resume::Plain;
            return publish(lang, text, lines, resume, last_line_start(text), styles.0);
        }
        return forget_language(lang);
    };
    let mut last = Instant::now();
    // Each batch makes the UI thread parse its document again: publish when the highlighted
    // lines at least doubled (O(log n) re-parses for a long block) and PUBLISH_EVERY passed.
    let mut published = lines.len().max(32);
    // The first batch (a screenful) goes out at once.
    let mut first = true;
    let rest = &text[done.len()..];
    let mut it = rest.split_inclusive('\n').peekable();
    while let Some(line) = it.next() {
        let before_last = run.state();
        lines.push(run.line(line));
        done.push_str(line);
        let due = lines.len() >= 2 * published && (first || last.elapsed() >= PUBLISH_EVERY);
        if it.peek().is_none() || due {
            first = false;
            let resume = Resume::TextMate {
                after: Box::new(run.state()),
                before_last: Box::new(before_last),
            };
            let last_start = done.len() - line.len();
            publish(lang, &done, lines.clone(), resume, last_start, styles.0);
            published = lines.len();
            last = Instant::now();
        }
    }
}

/// Stores the highlighted prefix `text` (replacing the shorter entry it extends) and wakes
/// the screen; drops it when drawn in a palette `epoch` that is no longer current.
fn publish(
    lang: &str,
    text: &str,
    lines: Vec<Vec<Span>>,
    resume: Resume,
    last_start: usize,
    epoch: u64,
) {
    // Built before taking the lock: the UI thread's lookups never wait for a copy.
    let entry = Entry {
        lang: lang.to_string(),
        text: text.to_string(),
        lines: Arc::new(lines),
        resume,
        last_start,
    };
    let waker = {
        let mut st = lock();
        if epoch != palette::epoch() {
            return;
        }
        if let Some((i, _, _)) = best(&st, lang, text) {
            if let Some(e) = st.entries.remove(i) {
                st.bytes -= e.text.len();
            }
        }
        st.bytes += text.len();
        st.entries.push_back(entry);
        while st.bytes > CACHE_BYTES && st.entries.len() > 1 {
            if let Some(e) = st.entries.pop_front() {
                st.bytes -= e.text.len();
            }
        }
        GENERATION.fetch_add(1, Ordering::AcqRel);
        st.waker.clone()
    };
    if let Some(w) = waker {
        w();
    }
}

/// Which engine highlights `lang` (a fence's info string): "tree-sitter", "textmate" or
/// None for a language neither knows (loads the TextMate syntax set to find out).
pub fn engine(lang: &str) -> Option<&'static str> {
    let lang = lang_token(lang).to_ascii_lowercase();
    if treesitter::covers(&lang) {
        return Some("tree-sitter");
    }
    textmate::Run::new(&lang, None, palette::snapshot()).map(|_| "textmate")
}

/// Highlights `code` synchronously on this thread with the engine `lookup` would use
/// (benchmarks and tests; loads the assets). None for an unknown language.
pub fn highlight_now(lang: &str, code: &str) -> Option<Vec<Vec<Span>>> {
    let lang = lang_token(lang).to_ascii_lowercase();
    let mut text = code.to_string();
    text.push('\n');
    if let Some(g) = treesitter::grammar(&lang) {
        let deadline = Instant::now() + treesitter::BUDGET;
        let done = treesitter::highlight(g, &text, None, &palette::snapshot(), deadline);
        if let Some((lines, _)) = done {
            return Some(lines);
        }
    }
    textmate_now(&lang, &text)
}

/// `text` (ending in `\n`) through the TextMate engine, whatever the language.
fn textmate_now(lang: &str, text: &str) -> Option<Vec<Vec<Span>>> {
    let mut run = textmate::Run::new(lang, None, palette::snapshot())?;
    Some(text.split_inclusive('\n').map(|l| run.line(l)).collect())
}

/// Highlights `code` with the TextMate engine even where a grammar covers the language (the
/// benchmark's baseline). None for an unknown language.
pub fn highlight_now_textmate(lang: &str, code: &str) -> Option<Vec<Vec<Span>>> {
    textmate_now(&lang_token(lang).to_ascii_lowercase(), &format!("{code}\n"))
}

/// Waits until `lookup(lang, code)` is done or `timeout` passes (tests and benchmarks).
pub fn wait_done(lang: &str, code: &str, timeout: Duration) -> Lookup {
    let end = Instant::now() + timeout;
    loop {
        let l = lookup(lang, code);
        if !l.pending() || Instant::now() >= end {
            return l;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::super::style::Color;
    use super::*;

    fn fg_of(lines: &[Vec<Span>], word: &str) -> Option<Option<Color>> {
        lines
            .iter()
            .flatten()
            .find(|s| s.text.trim() == word)
            .map(|s| s.style.fg)
    }

    #[test]
    fn keywords_strings_and_plain_text_differ_in_both_engines() {
        let code = "fn main() {\n    let s = \"hi\"; // note\n}";
        for l in [
            highlight_now("rust", code).unwrap(),
            highlight_now_textmate("rust", code).unwrap(),
        ] {
            assert_eq!(l.len(), 3);
            assert_eq!(fg_of(&l, "fn"), Some(Some(Color::Magenta)));
            assert_eq!(fg_of(&l, "\"hi\""), Some(Some(Color::Green)));
            let text: Vec<String> = l
                .iter()
                .map(|s| s.iter().map(|s| s.text.as_str()).collect())
                .collect();
            assert_eq!(text[1], "    let s = \"hi\"; // note");
        }
        let python = highlight_now("py", "def f(x):\n    return 1").unwrap();
        assert_eq!(fg_of(&python, "def"), Some(Some(Color::Magenta)));
        assert!(highlight_now("no-such-language", "x").is_none());
        let n = textmate::syntax_count();
        assert!(n > 150, "{n}");
        assert_eq!(engine("rust,ignore"), Some("tree-sitter"));
        assert_eq!(engine("Ruby"), Some("textmate"));
        assert_eq!(engine("no-such-language"), None);
    }

    /// Every grammar's query compiles against its language and colours a keyword and a
    /// string or comment.
    #[test]
    fn every_tree_sitter_grammar_highlights_its_language() {
        let samples = [
            ("rust", "pub fn f() -> u8 { 1 } // c", "fn"),
            ("python", "def f():\n    return 'x'", "def"),
            ("js", "const x = 'a'; // c", "const"),
            ("jsx", "const e = <div className=\"a\">hi</div>;", "const"),
            (
                "ts",
                "interface A { b: string }\nconst x: A = 'a' as any;",
                "interface",
            ),
            (
                "tsx",
                "export const E = (p: P) => <b>{p.x}</b>; // c",
                "export",
            ),
            (
                "go",
                "package main\nfunc f() string { return \"a\" }",
                "func",
            ),
            (
                "c",
                "#include <x.h>\nint f(void) { return 0; } /* c */",
                "return",
            ),
            (
                "cpp",
                "namespace n { class A { public: int f(); }; } // c",
                "class",
            ),
            ("java", "public class A { String s = \"a\"; }", "class"),
            ("json", "{\"a\": [1, true, \"s\"]}", "true"),
            ("toml", "[table]\nkey = \"v\" # c", "key"),
            ("yaml", "key: \"v\" # c\nother: true", "key"),
            (
                "css",
                "@media screen { a { color: red; } } /* c */",
                "@media",
            ),
            ("html", "<div class=\"a\">hi</div><!-- c -->", "div"),
            ("bash", "if [ -f x ]; then echo \"a\"; fi # c", "if"),
        ];
        for (lang, code, word) in samples {
            assert_eq!(engine(lang), Some("tree-sitter"), "{lang}");
            let l = highlight_now(lang, code).unwrap_or_else(|| panic!("{lang}: no grammar"));
            let flat: String = l.iter().flatten().map(|s| s.text.as_str()).collect();
            assert_eq!(flat, code.replace('\n', ""), "{lang}: text must survive");
            let coloured = l.iter().flatten().filter(|s| s.style.fg.is_some()).count();
            assert!(coloured >= 2, "{lang}: {l:?}");
            assert!(
                fg_of(&l, word).flatten().is_some(),
                "{lang}: `{word}` not coloured: {l:?}"
            );
        }
    }

    /// A block highlighted incrementally as it grows (tree-sitter re-parses from its old
    /// tree) ends exactly as highlighting it whole does, even when a later line changes how
    /// earlier ones read (a block comment opened above and closed below).
    #[test]
    fn incremental_tree_sitter_highlighting_matches_a_fresh_one() {
        let g = treesitter::grammar("rust").unwrap();
        let pal = palette::snapshot();
        let far = Instant::now() + Duration::from_secs(60);
        let steps = [
            "fn a() {\n",
            "fn a() {\n    let x = \"str",
            "fn a() {\n    let x = \"string\";\n/* open\n",
            "fn a() {\n    let x = \"string\";\n/* open\nstill comment */ let y = 2;\n}\n",
        ];
        let mut prev: Option<(Vec<Vec<Span>>, tree_sitter::Tree, String)> = None;
        for step in steps {
            let text = format!("{step}\n");
            let kept = prev.as_ref().map(|(lines, _, old)| {
                if text.starts_with(old.as_str()) {
                    (old.len(), lines.len())
                } else {
                    (last_line_start(old), lines.len() - 1)
                }
            });
            let out = match (&prev, kept) {
                (Some((lines, tree, old)), Some(kept)) => treesitter::highlight(
                    g,
                    &text,
                    Some(treesitter::Previous {
                        tree,
                        text: old,
                        lines,
                        kept,
                    }),
                    &pal,
                    far,
                ),
                _ => treesitter::highlight(g, &text, None, &pal, far),
            }
            .unwrap();
            let fresh = treesitter::highlight(g, &text, None, &pal, far).unwrap().0;
            assert_eq!(out.0, fresh, "after {step:?}");
            prev = Some((out.0, out.1, text));
        }
        // The comment's second line is grey, the `let` after it magenta.
        let lines = prev.unwrap().0;
        assert_eq!(lines[3][0].style.fg, Some(Color::BrightBlack));
        assert_eq!(fg_of(&lines, "let"), Some(Some(Color::Magenta)));
    }

    /// Deeply nested broken input makes tree-sitter's error recovery quadratic: past its
    /// budget the block goes to the TextMate engine (linear), and stays there as it grows.
    #[test]
    fn a_block_too_slow_for_tree_sitter_goes_to_the_textmate_engine() {
        let g = treesitter::grammar("rust").unwrap();
        let pal = palette::snapshot();
        let past = Instant::now();
        assert!(treesitter::highlight(g, "fn a() {}\n", None, &pal, past).is_none());
        let code = format!("fn nested() {{}}\n{}", "{(".repeat(40_000));
        let engine_of = |code: &str| {
            let done = wait_done("rust", code, Duration::from_secs(120));
            assert!(
                matches!(&done, Lookup::Done(l) if fg_of(l, "fn") == Some(Some(Color::Magenta)))
            );
            let st = lock();
            let e = st
                .entries
                .iter()
                .find(|e| e.text == format!("{code}\n"))
                .unwrap();
            matches!(e.resume, Resume::TextMate { .. })
        };
        assert!(engine_of(&code), "tree-sitter kept a block past its budget");
        assert!(
            engine_of(&format!("{code}\nfn more() {{}}")),
            "the grown block went back"
        );
    }

    /// Non-ASCII text reaches the grammar as ASCII stand-ins (tree-sitter-bash crashes on
    /// some), and the real text comes back with its colours.
    #[test]
    fn non_ascii_code_keeps_its_text_and_colours() {
        let code = "echo \"héllo {\u{E01DE}\" # ünïcode ✓\nif true; then :; fi";
        let l = highlight_now("bash", code).unwrap();
        let flat: Vec<String> = l
            .iter()
            .map(|s| s.iter().map(|s| s.text.as_str()).collect())
            .collect();
        assert_eq!(flat.join("\n"), code);
        let comment = l[0].iter().find(|s| s.text.contains("ünïcode")).unwrap();
        assert_eq!(comment.style.fg, Some(Color::BrightBlack));
        assert_eq!(fg_of(&l, "if"), Some(Some(Color::Magenta)));
    }

    #[test]
    fn lookup_is_asynchronous_and_keeps_a_grown_prefix() {
        let code = "let a = 1;\nlet b = 2;";
        let first = lookup("rust", code);
        assert!(matches!(first, Lookup::Pending(..) | Lookup::Done(_)));
        let done = wait_done("rust", code, Duration::from_secs(20));
        assert!(matches!(&done, Lookup::Done(l) if l.len() == 2), "{done:?}");
        // Streaming: the block grew by a line; the first two stay highlighted meanwhile.
        let grown = format!("{code}\nlet c = 3;");
        match lookup("rust", &grown) {
            Lookup::Pending(_, n) => assert!(n >= 2),
            Lookup::Done(l) => assert_eq!(l.len(), 3),
            Lookup::Plain => panic!("plain"),
        }
        assert!(matches!(
            wait_done("rust", &grown, Duration::from_secs(20)),
            Lookup::Done(l) if l.len() == 3
        ));
        assert!(generation() > 0);
    }

    #[test]
    fn large_unknown_and_unnamed_blocks_stay_plain() {
        let big = "x\n".repeat(MAX_LINES);
        assert_eq!(lookup("rust", &big), Lookup::Plain);
        let wide = "x".repeat(MAX_BYTES + 1);
        assert_eq!(lookup("rust", &wide), Lookup::Plain);
        assert_eq!(lookup("", "let a = 1;"), Lookup::Plain);
        let _ = wait_done("zzz-unknown", "a", Duration::from_secs(20));
        assert_eq!(lookup("zzz-unknown", "a"), Lookup::Plain);
        assert_eq!(lang_token("rust,ignore"), "rust");
        assert_eq!(lang_token("python title=x"), "python");
    }

    #[test]
    fn an_unfinished_last_line_does_not_lose_the_lines_before_it() {
        let start = "fn streamed() {\n    let v = vec![1, 2];\n    let w = ";
        assert!(matches!(
            wait_done("rust", start, Duration::from_secs(20)),
            Lookup::Done(l) if l.len() == 3
        ));
        // The last line went on: the first two lines stay highlighted meanwhile.
        let more = format!("{start}v.len();\n}}");
        match lookup("rust", &more) {
            Lookup::Pending(l, n) => {
                assert!(n >= 2, "{n}");
                let fn_kw = l[0].iter().find(|s| s.text == "fn").map(|s| s.style.fg);
                assert_eq!(fn_kw, Some(Some(Color::Magenta)));
            }
            Lookup::Done(l) => assert_eq!(l.len(), 4),
            Lookup::Plain => panic!("plain"),
        }
        assert!(matches!(
            wait_done("rust", &more, Duration::from_secs(20)),
            Lookup::Done(l) if l.len() == 4
        ));
    }
}
