//! The TextMate engine: syntect with bat's broad syntax set (two-face, pure-Rust regexes),
//! for every language the tree-sitter engine does not cover. A block is highlighted line by
//! line from a parser state, so a block that grew goes on from where it stopped.
//!
//! Colours: a theme written here in terms of the palette's roles (scope → role, so a user
//! theme restyles them) and, for the few markup scopes, the 16 base colours, so code reads on
//! light and dark terminals in the terminal's own palette.

use super::super::palette::{Palette, Role};
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

/// Foreground "the terminal's default" (alpha 1 marks it; alpha 0 marks a base colour index
/// in `r`, alpha 2 a palette role).
const DEFAULT_FG: SColor = SColor {
    r: 0,
    g: 0,
    b: 0,
    a: 1,
};

fn role(r: Role) -> SColor {
    SColor {
        r: r as u8,
        g: 0,
        b: 0,
        a: 2,
    }
}

fn ansi(c: Color) -> SColor {
    SColor {
        r: BASE.iter().position(|b| *b == c).unwrap_or(0) as u8,
        g: 0,
        b: 0,
        a: 0,
    }
}

/// Scope selectors to palette roles (their style, font included, is the role's) or base
/// colours, in the spirit of bat's `ansi` theme.
fn ansi_theme() -> Theme {
    use Color::*;
    use Role as R;
    let no = FontStyle::empty();
    let rules: &[(&str, SColor, FontStyle)] = &[
        ("comment, punctuation.definition.comment", role(R::Comment), no),
        ("string, punctuation.definition.string", role(R::Str), no),
        ("constant.character.escape, string.regexp", role(R::Escape), no),
        ("constant.numeric, constant.language, constant.character, constant.other", role(R::Number), no),
        ("keyword, storage, keyword.control, storage.type, storage.modifier", role(R::Keyword), no),
        ("keyword.operator, punctuation", DEFAULT_FG, no),
        ("entity.name.function, support.function, variable.function, meta.function-call entity.name", role(R::Function), no),
        ("entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, entity.name.trait, entity.other.inherited-class, support.type, support.class, storage.type.primitive", role(R::Type), no),
        ("entity.name.tag", role(R::Tag), no),
        ("entity.other.attribute-name, variable.parameter.function.language", role(R::Attribute), no),
        ("variable.language, support.constant", role(R::Builtin), no),
        ("entity.name.namespace, entity.name.module, meta.path entity.name", role(R::Type), no),
        ("meta.annotation, meta.attribute, entity.name.label, punctuation.definition.annotation", role(R::Attribute), no),
        ("markup.heading, entity.name.section", ansi(Magenta), FontStyle::BOLD),
        ("markup.bold", DEFAULT_FG, FontStyle::BOLD),
        ("markup.italic", DEFAULT_FG, FontStyle::ITALIC),
        ("markup.inserted", ansi(Green), no),
        ("markup.deleted", ansi(Red), no),
        ("markup.underline.link, markup.raw", ansi(Cyan), no),
        ("invalid", ansi(Red), no),
    ];
    let scopes = rules
        .iter()
        .filter_map(|(sel, fg, font)| {
            Some(ThemeItem {
                scope: ScopeSelectors::from_str(sel).ok()?,
                style: StyleModifier {
                    foreground: Some(*fg),
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

fn to_style(s: syntect::highlighting::Style, palette: &Palette) -> Style {
    let c = s.foreground;
    if c.a == 2 {
        return palette.get(c.r as usize).copied().unwrap_or(Style::PLAIN);
    }
    Style {
        fg: (c.a == 0)
            .then(|| BASE.get(c.r as usize).copied())
            .flatten(),
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
    palette: Palette,
}

impl Run {
    /// None when no syntax answers to `lang` (loads the assets).
    pub(super) fn new(lang: &str, from: Option<States>, palette: Palette) -> Option<Run> {
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
            palette,
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
            let st = to_style(style, &self.palette);
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
