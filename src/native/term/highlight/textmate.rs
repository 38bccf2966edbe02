//! The TextMate engine: syntect with bat's broad syntax set (two-face, pure-Rust regexes),
//! for every language the tree-sitter engine does not cover. A block is highlighted line by
//! line from a parser state, so a block that grew goes on from where it stopped.
//!
//! Colours: a theme written here in terms of the 16 base colours (scope → colour), so code
//! reads on light and dark terminals in the terminal's own palette.

use super::super::style::{Color, Span, Style};
use super::super::width::clean;
use std::str::FromStr;
use std::sync::OnceLock;
use syntect::highlighting::{
    Color as SColor, FontStyle, HighlightIterator, HighlightState, Highlighter, ScopeSelectors,
    StyleModifier, Theme, ThemeItem, ThemeSettings,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

/// Where a block's highlighting stopped: the parser and highlighter states after a line.
pub(super) type States = (ParseState, HighlightState);

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
        super::mark_loaded();
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

/// Highlights lines in order, from a language's start state or from a saved one.
pub(super) struct Run {
    highlighter: Highlighter<'static>,
    parse: ParseState,
    highlight: HighlightState,
}

impl Run {
    /// None when no syntax answers to `lang` (loads the assets).
    pub(super) fn new(lang: &str, from: Option<States>) -> Option<Run> {
        let a = assets();
        let syntax = a.syntaxes.find_syntax_by_token(lang)?;
        let highlighter = Highlighter::new(&a.theme);
        let (parse, highlight) = from.unwrap_or_else(|| {
            (
                ParseState::new(syntax),
                HighlightState::new(&highlighter, ScopeStack::new()),
            )
        });
        Some(Run {
            highlighter,
            parse,
            highlight,
        })
    }

    /// The state after the lines highlighted so far.
    pub(super) fn state(&self) -> States {
        (self.parse.clone(), self.highlight.clone())
    }

    /// Highlights one line (ending in `\n`) into spans; tabs become spaces as in plain code.
    pub(super) fn line(&mut self, line: &str) -> Vec<Span> {
        let mut out: Vec<Span> = Vec::new();
        let ops = match self.parse.parse_line(line, &assets().syntaxes) {
            Ok(ops) => ops,
            Err(_) => {
                return vec![Span::plain(clean(line.trim_end_matches('\n')).into_owned())];
            }
        };
        for (style, text) in
            HighlightIterator::new(&mut self.highlight, &ops, line, &self.highlighter)
        {
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
}

/// How many syntaxes the set holds (tests).
#[cfg(test)]
pub(super) fn syntax_count() -> usize {
    assets().syntaxes.syntaxes().len()
}
