//! The tree-sitter engine, for the languages answers show most (Rust, Python, JavaScript,
//! TypeScript, TSX, Go, C, C++, Java, JSON, TOML, YAML, CSS, HTML, shell): a grammar parses a 5,000-line block in
//! about 15 ms and its own `highlights.scm` query colours it in as much again, where the
//! TextMate engine needs about 300 ms. A block that grew (while an answer streams) is parsed
//! again incrementally from its previous tree, and only the lines from the first change on
//! are coloured again.
//!
//! Each grammar's query is compiled on the first block in that language (on the worker,
//! never at start-up). Captures map to the roles of the [palette](super::super::palette),
//! as the TextMate theme's scopes do.

use super::super::palette::{Palette, Role};
use super::super::style::{Span, Style};
use super::super::width::clean;
use std::ops::ControlFlow;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tree_sitter::{
    InputEdit, Language, ParseOptions, Parser, Point, Query, QueryCursor, QueryCursorOptions,
    StreamingIterator, Tree,
};

/// How long one pass may take. Error recovery in deeply nested broken input is quadratic
/// (80 KB of `{(` takes seconds); past this the block goes to the TextMate engine, which is
/// linear.
pub(super) const BUDGET: Duration = Duration::from_millis(500);
use tree_sitter_language::LanguageFn;

/// One grammar: the fence names that select it and its highlight queries (a grammar that
/// extends another, as TypeScript extends JavaScript, lists the base query first: for a node
/// matched twice, the first pattern wins).
struct Grammar {
    names: &'static [&'static str],
    language: LanguageFn,
    queries: &'static [&'static str],
    /// Capture styles of this language only (a data file's keys are what matters in it).
    own: &'static [(&'static str, Role)],
}

const GRAMMARS: &[Grammar] = &[
    Grammar {
        names: &["rust", "rs"],
        language: tree_sitter_rust::LANGUAGE,
        queries: &[tree_sitter_rust::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["python", "py", "py3", "python3", "gyp"],
        language: tree_sitter_python::LANGUAGE,
        queries: &[tree_sitter_python::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["javascript", "js", "jsx", "mjs", "cjs", "node"],
        language: tree_sitter_javascript::LANGUAGE,
        queries: &[
            tree_sitter_javascript::HIGHLIGHT_QUERY,
            tree_sitter_javascript::JSX_HIGHLIGHT_QUERY,
        ],
        own: &[],
    },
    Grammar {
        names: &["typescript", "ts", "mts", "cts"],
        language: tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        queries: &[
            tree_sitter_javascript::HIGHLIGHT_QUERY,
            tree_sitter_typescript::HIGHLIGHTS_QUERY,
        ],
        own: &[],
    },
    Grammar {
        names: &["tsx"],
        language: tree_sitter_typescript::LANGUAGE_TSX,
        queries: &[
            tree_sitter_javascript::HIGHLIGHT_QUERY,
            tree_sitter_javascript::JSX_HIGHLIGHT_QUERY,
            tree_sitter_typescript::HIGHLIGHTS_QUERY,
        ],
        own: &[],
    },
    Grammar {
        names: &["go", "golang"],
        language: tree_sitter_go::LANGUAGE,
        queries: &[tree_sitter_go::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["c", "h"],
        language: tree_sitter_c::LANGUAGE,
        queries: &[tree_sitter_c::HIGHLIGHT_QUERY],
        own: &[],
    },
    Grammar {
        names: &["cpp", "c++", "cc", "cxx", "hpp", "hh", "hxx"],
        language: tree_sitter_cpp::LANGUAGE,
        queries: &[
            tree_sitter_c::HIGHLIGHT_QUERY,
            tree_sitter_cpp::HIGHLIGHT_QUERY,
        ],
        own: &[],
    },
    Grammar {
        names: &["java"],
        language: tree_sitter_java::LANGUAGE,
        queries: &[tree_sitter_java::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["json", "jsonc", "json5"],
        language: tree_sitter_json::LANGUAGE,
        queries: &[tree_sitter_json::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["toml"],
        language: tree_sitter_toml_ng::LANGUAGE,
        queries: &[tree_sitter_toml_ng::HIGHLIGHTS_QUERY],
        own: &[("property", Role::Property)],
    },
    Grammar {
        names: &["yaml", "yml"],
        language: tree_sitter_yaml::LANGUAGE,
        queries: &[tree_sitter_yaml::HIGHLIGHTS_QUERY],
        own: &[("property", Role::Property)],
    },
    Grammar {
        names: &["css"],
        language: tree_sitter_css::LANGUAGE,
        queries: &[tree_sitter_css::HIGHLIGHTS_QUERY],
        own: &[("property", Role::Property)],
    },
    Grammar {
        names: &["html", "htm", "xhtml"],
        language: tree_sitter_html::LANGUAGE,
        queries: &[tree_sitter_html::HIGHLIGHTS_QUERY],
        own: &[],
    },
    Grammar {
        names: &["bash", "sh", "shell", "zsh", "ksh"],
        language: tree_sitter_bash::LANGUAGE,
        queries: &[tree_sitter_bash::HIGHLIGHT_QUERY],
        own: &[],
    },
];

/// A grammar with its compiled query and the role of each capture (None: left plain).
pub(super) struct Compiled {
    language: Language,
    query: Query,
    roles: Vec<Option<Role>>,
}

/// The grammar for a fence's (lower-case) language name, compiled on first use; None when
/// no grammar here answers to it (the TextMate engine takes it) or its query does not
/// compile (a bug in a grammar crate must not stop highlighting by the other engine).
pub(super) fn grammar(lang: &str) -> Option<&'static Compiled> {
    static COMPILED: [OnceLock<Option<Compiled>>; GRAMMARS.len()] =
        [const { OnceLock::new() }; GRAMMARS.len()];
    let i = GRAMMARS.iter().position(|g| g.names.contains(&lang))?;
    COMPILED[i]
        .get_or_init(|| {
            let g = &GRAMMARS[i];
            let language = Language::new(g.language);
            let query = Query::new(&language, &g.queries.join("\n")).ok()?;
            let roles = query
                .capture_names()
                .iter()
                .map(|n| match g.own.iter().find(|(c, _)| c == n) {
                    Some((_, role)) => Some(*role),
                    None => role_of(n),
                })
                .collect();
            super::mark_loaded();
            Some(Compiled {
                language,
                query,
                roles,
            })
        })
        .as_ref()
}

/// Whether a grammar here answers to `lang` (without compiling anything).
pub(super) fn covers(lang: &str) -> bool {
    GRAMMARS.iter().any(|g| g.names.contains(&lang))
}

/// A capture name's role (its style comes from the palette), in the spirit of the TextMate
/// theme (`keyword` magenta, `string` green, `function` blue, `type` cyan, ...). Operators,
/// punctuation and plain variables stay in the terminal's default colour.
fn role_of(capture: &str) -> Option<Role> {
    let role = match capture {
        "string.escape" | "escape" | "string.regex" | "string.special.regex" => Role::Escape,
        "string.special.key" => Role::Property,
        "variable.builtin" => Role::Builtin,
        "constant.builtin" | "number" | "float" | "boolean" | "constant" => Role::Number,
        "attribute" | "label" => Role::Attribute,
        "constructor" | "module" | "namespace" => Role::Type,
        _ => match capture.split('.').next().unwrap_or("") {
            "comment" => Role::Comment,
            "string" | "character" => Role::Str,
            "keyword" | "conditional" | "repeat" | "include" | "exception" => Role::Keyword,
            // CSS at-rules.
            "import" | "media" | "charset" | "keyframes" | "supports" => Role::Keyword,
            "function" | "method" => Role::Function,
            "tag" => Role::Tag,
            "type" => Role::Type,
            "constant" | "number" => Role::Number,
            _ => return None,
        },
    };
    Some(role)
}

/// What a block's previous highlighting leaves to go on from.
pub(super) struct Previous<'a> {
    pub tree: &'a Tree,
    /// The text it highlighted (whole lines, each ending in `\n`).
    pub text: &'a str,
    pub lines: &'a [Vec<Span>],
    /// How much of it the new text still starts with: (bytes, lines), at a line start.
    pub kept: (usize, usize),
}

/// Highlights `text` (whole lines, each ending in `\n`) into one span list per line, going
/// on from `previous` when given; returns the lines and the tree to go on from next time.
/// None when the parse or the query ran past `deadline`.
pub(super) fn highlight(
    g: &Compiled,
    text: &str,
    previous: Option<Previous>,
    palette: &Palette,
    deadline: Instant,
) -> Option<(Vec<Vec<Span>>, Tree)> {
    let mut parser = Parser::new();
    parser.set_language(&g.language).ok()?;
    // Grammars' external scanners are C; tree-sitter-bash 0.25 segfaults on some non-ASCII
    // input (see policy::shell). Non-ASCII bytes are handed over as `a` (same offsets, so
    // the colours map back onto the real text); they only ever sit in words, strings and
    // comments, whose colour does not depend on them.
    let source: std::borrow::Cow<[u8]> = if text.is_ascii() {
        text.as_bytes().into()
    } else {
        text.bytes()
            .map(|b| if b.is_ascii() { b } else { b'a' })
            .collect::<Vec<_>>()
            .into()
    };
    let (tree, first_line, mut lines) = match previous {
        Some(p) => {
            let (bytes, kept_lines) = p.kept;
            let mut old = p.tree.clone();
            let rows = |s: &str| memchr::memchr_iter(b'\n', s.as_bytes()).count();
            old.edit(&InputEdit {
                start_byte: bytes,
                old_end_byte: p.text.len(),
                new_end_byte: text.len(),
                start_position: Point::new(kept_lines, 0),
                old_end_position: Point::new(rows(p.text), 0),
                new_end_position: Point::new(rows(text), 0),
            });
            let tree = parse(&mut parser, &source, Some(&old), deadline)?;
            // Lines before the edit keep their colours unless the parse changed them (a
            // string or comment left open above, closed now).
            let changed = old
                .changed_ranges(&tree)
                .map(|r| r.start_byte)
                .min()
                .map_or(bytes, |c| c.min(bytes));
            let first = rows(&text[..line_start(text, changed)]);
            (tree, first, p.lines[..first.min(p.lines.len())].to_vec())
        }
        None => (parse(&mut parser, &source, None, deadline)?, 0, Vec::new()),
    };
    let from = line_offset(text, lines.len());
    debug_assert_eq!(lines.len(), first_line);
    let paint = paint(g, &tree, &source, from, deadline)?;
    let mut at = from;
    for line in text[from..].split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        lines.push(spans(
            body,
            &paint[at - from..at - from + body.len()],
            g,
            palette,
        ));
        at += line.len();
    }
    Some((lines, tree))
}

/// Parses `source`, giving up (None) at `deadline`.
fn parse(
    parser: &mut Parser,
    source: &[u8],
    old: Option<&Tree>,
    deadline: Instant,
) -> Option<Tree> {
    let mut read = |i: usize, _: Point| source.get(i..).unwrap_or_default();
    let mut stop = |_: &tree_sitter::ParseState| past(deadline);
    let options = ParseOptions::new().progress_callback(&mut stop);
    parser.parse_with_options(&mut read, old, Some(options))
}

fn past(deadline: Instant) -> ControlFlow<()> {
    if Instant::now() > deadline {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// The start of the line holding byte `at`.
fn line_start(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |i| i + 1)
}

/// The byte offset where line `n` starts.
fn line_offset(text: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(n - 1)
        .map_or(text.len(), |i| i + 1)
}

/// The capture index colouring each byte of `source[from..]` (u16::MAX: none). For a node
/// captured twice, the first pattern wins; a node inside another is coloured over it. None
/// past `deadline`.
fn paint(
    g: &Compiled,
    tree: &Tree,
    source: &[u8],
    from: usize,
    deadline: Instant,
) -> Option<Vec<u16>> {
    let mut caps: Vec<(usize, usize, usize, u16)> = Vec::new();
    let mut cursor = QueryCursor::new();
    cursor.set_byte_range(from..source.len());
    let mut stop = |_: &tree_sitter::QueryCursorState| past(deadline);
    let options = QueryCursorOptions::new().progress_callback(&mut stop);
    let mut it = cursor.captures_with_options(&g.query, tree.root_node(), source, options);
    while let Some((m, i)) = it.next() {
        let c = m.captures()[*i];
        caps.push((
            c.node.start_byte(),
            c.node.end_byte(),
            m.pattern_index,
            c.index as u16,
        ));
    }
    drop(it);
    if past(deadline).is_break() {
        return None;
    }
    // Outer nodes first (start ascending, end descending), then by pattern.
    caps.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    caps.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    let mut paint = vec![u16::MAX; source.len() - from];
    for (s, e, _, capture) in caps {
        let (s, e) = (s.max(from) - from, e.min(source.len()).saturating_sub(from));
        if s < e && g.roles[capture as usize].is_some() {
            paint[s..e].fill(capture);
        }
    }
    Some(paint)
}

/// A line's spans from its bytes' capture indexes; tabs become spaces as in plain code.
fn spans(body: &str, paint: &[u16], g: &Compiled, palette: &Palette) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut start = 0;
    let style = |c: u16| match g.roles.get(c as usize).copied().flatten() {
        Some(role) => palette[role as usize],
        None => Style::PLAIN,
    };
    for i in 1..=body.len() {
        if i < body.len() && (paint[i] == paint[start] || !body.is_char_boundary(i)) {
            continue;
        }
        let st = style(paint[start]);
        let text = clean(&body[start..i]);
        start = i;
        if text.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.style == st => last.text.push_str(&text),
            _ => out.push(Span::new(text.into_owned(), st)),
        }
    }
    out
}
