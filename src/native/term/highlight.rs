//! Syntax highlighting of fenced code blocks, off the UI thread. syntect with bat's broad
//! syntax set (two-face, pure-Rust regexes) is loaded by a worker thread on the first code
//! block asked for, never at start-up. [`lookup`] never blocks: it answers the lines highlighted
//! so far (a block that only grew since, as while an answer streams, keeps its highlighted
//! prefix) and queues the rest; the worker publishes its progress as it goes (each time the
//! highlighted lines doubled), bumps [`generation`] and calls the waker, so the screen
//! repaints. Blocks over
//! [`MAX_BYTES`] or [`MAX_LINES`] stay plain, as does everything while [`set_enabled`] is off
//! (`NO_COLOR`).
//!
//! Colours: a theme written here in terms of the 16 base colours (scope → colour), so code
//! reads on light and dark terminals in the terminal's own palette.

use super::style::{Color, Span, Style};
use super::width::clean;
use std::collections::{HashSet, VecDeque};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use syntect::highlighting::{
    Color as SColor, FontStyle, HighlightIterator, HighlightState, Highlighter, ScopeSelectors,
    StyleModifier, Theme, ThemeItem, ThemeSettings,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

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

type States = (ParseState, HighlightState);

/// A highlighted prefix of some block: its text (whole lines, each ending in `\n`), one span
/// list per line, and the parser state at its end to go on from. While an answer streams,
/// the last line of a block is often unfinished: a block that grew past it still uses every
/// line but that one, going on from the state before it.
struct Entry {
    lang: String,
    text: String,
    lines: Arc<Vec<Vec<Span>>>,
    state: Option<States>,
    /// Where the last line starts, and the state there.
    last_start: usize,
    before_last: Option<States>,
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

/// Whether the syntax assets have been loaded (start-up must not load them).
pub fn loaded() -> bool {
    LOADED.load(Ordering::Acquire)
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

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let a = Assets {
            syntaxes: two_face::syntax::extra_newlines(),
            theme: ansi_theme(),
        };
        LOADED.store(true, Ordering::Release);
        a
    })
}

/// Foreground "the terminal's default" (alpha 1 marks it; alpha 0 marks a base colour index).
const DEFAULT_FG: SColor = SColor {
    r: 0,
    g: 0,
    b: 0,
    a: 1,
};

fn ansi(c: Color) -> SColor {
    SColor {
        r: BASE.iter().position(|b| *b == c).unwrap_or(0) as u8,
        g: 0,
        b: 0,
        a: 0,
    }
}

/// Scope selectors to base colours, in the spirit of bat's `ansi` theme.
fn ansi_theme() -> Theme {
    use Color::*;
    let rules: &[(&str, Option<Color>, FontStyle)] = &[
        ("comment, punctuation.definition.comment", Some(BrightBlack), FontStyle::ITALIC),
        ("string, punctuation.definition.string", Some(Green), FontStyle::empty()),
        ("constant.character.escape, string.regexp", Some(Cyan), FontStyle::empty()),
        ("constant.numeric, constant.language, constant.character, constant.other", Some(Yellow), FontStyle::empty()),
        ("keyword, storage, keyword.control, storage.type, storage.modifier", Some(Magenta), FontStyle::empty()),
        ("keyword.operator, punctuation", None, FontStyle::empty()),
        ("entity.name.function, support.function, variable.function, meta.function-call entity.name", Some(Blue), FontStyle::empty()),
        ("entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, entity.name.trait, entity.other.inherited-class, support.type, support.class, storage.type.primitive", Some(Cyan), FontStyle::empty()),
        ("entity.name.tag", Some(Blue), FontStyle::empty()),
        ("entity.other.attribute-name, variable.parameter.function.language", Some(Yellow), FontStyle::empty()),
        ("variable.language, support.constant", Some(Red), FontStyle::empty()),
        ("entity.name.namespace, entity.name.module, meta.path entity.name", Some(Cyan), FontStyle::empty()),
        ("meta.annotation, meta.attribute, entity.name.label, punctuation.definition.annotation", Some(Yellow), FontStyle::empty()),
        ("markup.heading, entity.name.section", Some(Magenta), FontStyle::BOLD),
        ("markup.bold", None, FontStyle::BOLD),
        ("markup.italic", None, FontStyle::ITALIC),
        ("markup.inserted", Some(Green), FontStyle::empty()),
        ("markup.deleted", Some(Red), FontStyle::empty()),
        ("markup.underline.link, markup.raw", Some(Cyan), FontStyle::empty()),
        ("invalid", Some(Red), FontStyle::empty()),
    ];
    let scopes = rules
        .iter()
        .filter_map(|(sel, fg, font)| {
            Some(ThemeItem {
                scope: ScopeSelectors::from_str(sel).ok()?,
                style: StyleModifier {
                    foreground: Some(fg.map_or(DEFAULT_FG, ansi)),
                    background: None,
                    font_style: Some(*font),
                },
            })
        })
        .collect();
    Theme {
        name: Some("fen-ansi".into()),
        author: None,
        settings: ThemeSettings {
            foreground: Some(DEFAULT_FG),
            ..ThemeSettings::default()
        },
        scopes,
    }
}

const BASE: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::White,
    Color::BrightBlack,
    Color::BrightRed,
    Color::BrightGreen,
    Color::BrightYellow,
    Color::BrightBlue,
    Color::BrightMagenta,
    Color::BrightCyan,
    Color::BrightWhite,
];

fn to_style(s: syntect::highlighting::Style) -> Style {
    let fg = match s.foreground.a {
        0 => BASE.get(s.foreground.r as usize).copied(),
        _ => None,
    };
    Style {
        fg,
        bold: s.font_style.contains(FontStyle::BOLD),
        italic: s.font_style.contains(FontStyle::ITALIC),
        underline: s.font_style.contains(FontStyle::UNDERLINE),
        ..Style::PLAIN
    }
}

/// Highlights one line (ending in `\n`) into spans; tabs become spaces as in plain code.
fn line_spans(
    ps: &mut ParseState,
    hs: &mut HighlightState,
    line: &str,
    a: &Assets,
    h: &Highlighter,
) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let ops = match ps.parse_line(line, &a.syntaxes) {
        Ok(ops) => ops,
        Err(_) => {
            return vec![Span::plain(clean(line.trim_end_matches('\n')).into_owned())];
        }
    };
    for (style, text) in HighlightIterator::new(hs, &ops, line, h) {
        let text = clean(text.trim_end_matches(['\n', '\r']));
        if text.is_empty() {
            continue;
        }
        let st = to_style(style);
        match out.last_mut() {
            Some(last) if last.style == st => last.text.push_str(&text),
            _ => out.push(Span::new(text.into_owned(), st)),
        }
    }
    out
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
        highlight_request(&lang, &text);
    }
}

/// Highlights `text` in `lang`, going on from the longest highlighted prefix and publishing
/// progress as it goes.
fn highlight_request(lang: &str, text: &str) {
    let a = assets();
    let Some(syntax) = a.syntaxes.find_syntax_by_token(lang) else {
        let mut st = lock();
        st.unknown.insert(lang.to_string());
        st.queue.retain(|(l, _)| l != lang);
        return;
    };
    let h = Highlighter::new(&a.theme);
    // Start from the longest known prefix.
    let (mut done, mut lines, mut state) = {
        let st = lock();
        match best(&st, lang, text) {
            Some((i, bytes, n)) => {
                let e = &st.entries[i];
                if bytes == text.len() {
                    return;
                }
                let from = if n == e.lines.len() {
                    e.state.clone()
                } else {
                    e.before_last.clone()
                };
                (text[..bytes].to_string(), e.lines[..n].to_vec(), from)
            }
            None => (String::new(), Vec::new(), None),
        }
    };
    let (mut ps, mut hs) = state.take().unwrap_or_else(|| {
        (
            ParseState::new(syntax),
            HighlightState::new(&h, ScopeStack::new()),
        )
    });
    let mut last = Instant::now();
    // Each batch makes the UI thread parse its document again: publish when the highlighted
    // lines at least doubled (O(log n) re-parses for a long block) and PUBLISH_EVERY passed.
    let mut published = lines.len().max(32);
    // The first batch (a screenful) goes out at once.
    let mut first = true;
    let rest = &text[done.len()..];
    let mut it = rest.split_inclusive('\n').peekable();
    while let Some(line) = it.next() {
        let before = (ps.clone(), hs.clone());
        lines.push(line_spans(&mut ps, &mut hs, line, a, &h));
        done.push_str(line);
        let due = lines.len() >= 2 * published && (first || last.elapsed() >= PUBLISH_EVERY);
        if it.peek().is_none() || due {
            first = false;
            publish(
                lang,
                &done,
                &lines,
                (&ps, &hs),
                before,
                done.len() - line.len(),
            );
            published = lines.len();
            last = Instant::now();
        }
    }
}

/// Stores the highlighted prefix `text` (replacing the shorter entry it extends) and wakes
/// the screen.
fn publish(
    lang: &str,
    text: &str,
    lines: &[Vec<Span>],
    (ps, hs): (&ParseState, &HighlightState),
    before_last: States,
    last_start: usize,
) {
    // Built before taking the lock: the UI thread's lookups never wait for a copy.
    let entry = Entry {
        lang: lang.to_string(),
        text: text.to_string(),
        lines: Arc::new(lines.to_vec()),
        state: Some((ps.clone(), hs.clone())),
        last_start,
        before_last: Some(before_last),
    };
    let waker = {
        let mut st = lock();
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

/// Highlights `code` synchronously on this thread (benchmarks and tests; loads the assets).
/// None for an unknown language.
pub fn highlight_now(lang: &str, code: &str) -> Option<Vec<Vec<Span>>> {
    let a = assets();
    let syntax = a.syntaxes.find_syntax_by_token(lang_token(lang))?;
    let h = Highlighter::new(&a.theme);
    let mut ps = ParseState::new(syntax);
    let mut hs = HighlightState::new(&h, ScopeStack::new());
    let mut text = code.to_string();
    text.push('\n');
    Some(
        text.split_inclusive('\n')
            .map(|l| line_spans(&mut ps, &mut hs, l, a, &h))
            .collect(),
    )
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
    use super::*;

    fn fg_of(lines: &[Vec<Span>], word: &str) -> Option<Option<Color>> {
        lines
            .iter()
            .flatten()
            .find(|s| s.text.trim() == word)
            .map(|s| s.style.fg)
    }

    #[test]
    fn keywords_strings_and_plain_text_differ() {
        let l = highlight_now("rust", "fn main() {\n    let s = \"hi\"; // note\n}").unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(fg_of(&l, "fn"), Some(Some(Color::Magenta)));
        assert_eq!(fg_of(&l, "\"hi\""), Some(Some(Color::Green)));
        let text: Vec<String> = l
            .iter()
            .map(|s| s.iter().map(|s| s.text.as_str()).collect())
            .collect();
        assert_eq!(text[1], "    let s = \"hi\"; // note");
        let python = highlight_now("py", "def f(x):\n    return 1").unwrap();
        assert_eq!(fg_of(&python, "def"), Some(Some(Color::Magenta)));
        assert!(highlight_now("no-such-language", "x").is_none());
        let n = assets().syntaxes.syntaxes().len();
        println!("syntaxes: {n}");
        assert!(n > 150, "{n}");
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
