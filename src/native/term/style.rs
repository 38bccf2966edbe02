//! Styles, spans and lines as the layout description spells them (serde), and their
//! conversion to ratatui cell styles. The default theme uses the 16 base colours only, so it
//! reads on light and dark terminals; `NO_COLOR` drops colours but keeps bold/dim/reverse.

use ratatui_core::style::{Color as RColor, Modifier, Style as RStyle};
use serde::{Deserialize, Serialize};

/// One of the 16 base terminal colours (or the terminal default); user themes may also name
/// a 256-colour index (`0`..`255`) or a 24-bit colour (`"#rrggbb"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "ColorRepr")]
pub enum Color {
    Default,
    Black,
    Red,
    Green,
    Yellow,
    Blue,
    Magenta,
    Cyan,
    White,
    BrightBlack,
    BrightRed,
    BrightGreen,
    BrightYellow,
    BrightBlue,
    BrightMagenta,
    BrightCyan,
    BrightWhite,
    /// A 256-colour palette index.
    Indexed(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

/// How a colour is spelled in a description: a name, `#rrggbb`, or a palette index.
#[derive(Deserialize)]
#[serde(untagged)]
enum ColorRepr {
    Index(u8),
    Name(String),
}

impl TryFrom<ColorRepr> for Color {
    type Error = String;
    fn try_from(r: ColorRepr) -> Result<Color, String> {
        let name = match r {
            ColorRepr::Index(i) => return Ok(Color::Indexed(i)),
            ColorRepr::Name(n) => n,
        };
        if let Some(hex) = name.strip_prefix('#') {
            let v = (hex.len() == 6)
                .then(|| u32::from_str_radix(hex, 16).ok())
                .flatten()
                .ok_or_else(|| format!("bad colour {name:?}: use #rrggbb"))?;
            return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        const NAMES: [(&str, Color); 17] = [
            ("default", Color::Default),
            ("black", Color::Black),
            ("red", Color::Red),
            ("green", Color::Green),
            ("yellow", Color::Yellow),
            ("blue", Color::Blue),
            ("magenta", Color::Magenta),
            ("cyan", Color::Cyan),
            ("white", Color::White),
            ("bright-black", Color::BrightBlack),
            ("bright-red", Color::BrightRed),
            ("bright-green", Color::BrightGreen),
            ("bright-yellow", Color::BrightYellow),
            ("bright-blue", Color::BrightBlue),
            ("bright-magenta", Color::BrightMagenta),
            ("bright-cyan", Color::BrightCyan),
            ("bright-white", Color::BrightWhite),
        ];
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .ok_or_else(|| format!("unknown colour {name:?}"))
    }
}

impl Color {
    fn to_ratatui(self) -> RColor {
        match self {
            Color::Default => RColor::Reset,
            Color::Black => RColor::Black,
            Color::Red => RColor::Red,
            Color::Green => RColor::Green,
            Color::Yellow => RColor::Yellow,
            Color::Blue => RColor::Blue,
            Color::Magenta => RColor::Magenta,
            Color::Cyan => RColor::Cyan,
            Color::White => RColor::Gray,
            Color::BrightBlack => RColor::DarkGray,
            Color::BrightRed => RColor::LightRed,
            Color::BrightGreen => RColor::LightGreen,
            Color::BrightYellow => RColor::LightYellow,
            Color::BrightBlue => RColor::LightBlue,
            Color::BrightMagenta => RColor::LightMagenta,
            Color::BrightCyan => RColor::LightCyan,
            Color::BrightWhite => RColor::White,
            Color::Indexed(i) => RColor::Indexed(i),
            Color::Rgb(r, g, b) => RColor::Rgb(r, g, b),
        }
    }
}

/// A text style. Every field is optional in the description; unknown keys are refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Style {
    pub fg: Option<Color>,
    pub bg: Option<Color>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub reverse: bool,
    pub strike: bool,
}

impl Style {
    pub const PLAIN: Style = Style {
        fg: None,
        bg: None,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        reverse: false,
        strike: false,
    };
    pub const fn fg(c: Color) -> Style {
        Style {
            fg: Some(c),
            ..Style::PLAIN
        }
    }
    pub const fn bold(mut self) -> Style {
        self.bold = true;
        self
    }
    pub const fn dim(mut self) -> Style {
        self.dim = true;
        self
    }
    pub const fn italic(mut self) -> Style {
        self.italic = true;
        self
    }
    pub const fn reverse(mut self) -> Style {
        self.reverse = true;
        self
    }
    pub const fn underline(mut self) -> Style {
        self.underline = true;
        self
    }
    /// `other`'s set fields over this style's.
    pub fn patch(self, other: Style) -> Style {
        Style {
            fg: other.fg.or(self.fg),
            bg: other.bg.or(self.bg),
            bold: self.bold || other.bold,
            dim: self.dim || other.dim,
            italic: self.italic || other.italic,
            underline: self.underline || other.underline,
            reverse: self.reverse || other.reverse,
            strike: self.strike || other.strike,
        }
    }
    /// The ratatui style; `color = false` (NO_COLOR) keeps only the attributes.
    pub fn to_ratatui(self, color: bool) -> RStyle {
        let mut m = Modifier::empty();
        for (on, bit) in [
            (self.bold, Modifier::BOLD),
            (self.dim, Modifier::DIM),
            (self.italic, Modifier::ITALIC),
            (self.underline, Modifier::UNDERLINED),
            (self.reverse, Modifier::REVERSED),
            (self.strike, Modifier::CROSSED_OUT),
        ] {
            if on {
                m |= bit;
            }
        }
        let mut s = RStyle::default().add_modifier(m);
        if color {
            s = s
                .fg(self.fg.unwrap_or(Color::Default).to_ratatui())
                .bg(self.bg.unwrap_or(Color::Default).to_ratatui());
        } else {
            s = s.fg(RColor::Reset).bg(RColor::Reset);
        }
        s
    }
}

/// A run of text in one style. In a description it is `{text, style}` or just a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SpanRepr")]
pub struct Span {
    pub text: String,
    pub style: Style,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SpanRepr {
    Plain(String),
    Styled {
        text: String,
        #[serde(default)]
        style: Style,
    },
}

impl From<SpanRepr> for Span {
    fn from(r: SpanRepr) -> Span {
        match r {
            SpanRepr::Plain(text) => Span {
                text,
                style: Style::PLAIN,
            },
            SpanRepr::Styled { text, style } => Span { text, style },
        }
    }
}

impl Span {
    pub fn new(text: impl Into<String>, style: Style) -> Span {
        Span {
            text: text.into(),
            style,
        }
    }
    pub fn plain(text: impl Into<String>) -> Span {
        Span::new(text, Style::PLAIN)
    }
}

/// One screen row's worth of styled text (before or after wrapping).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "LineRepr")]
pub struct Line {
    pub spans: Vec<Span>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LineRepr {
    Plain(String),
    Spans(Vec<Span>),
}

impl From<LineRepr> for Line {
    fn from(r: LineRepr) -> Line {
        match r {
            LineRepr::Plain(s) => Line::plain(s),
            LineRepr::Spans(spans) => Line { spans },
        }
    }
}

impl Line {
    pub fn plain(text: impl Into<String>) -> Line {
        Line {
            spans: vec![Span::plain(text)],
        }
    }
    pub fn styled(text: impl Into<String>, style: Style) -> Line {
        Line {
            spans: vec![Span::new(text, style)],
        }
    }
    pub fn push(&mut self, text: impl Into<String>, style: Style) {
        let text = text.into();
        if text.is_empty() {
            return;
        }
        match self.spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(&text),
            _ => self.spans.push(Span::new(text, style)),
        }
    }
    /// The text without styles.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }
    pub fn width(&self) -> usize {
        self.spans
            .iter()
            .map(|s| super::width::str_width(&s.text))
            .sum()
    }
    /// Every span's style patched with `style` (a block's overall style).
    pub fn patched(mut self, style: Style) -> Line {
        for s in &mut self.spans {
            s.style = s.style.patch(style);
        }
        self
    }
}
