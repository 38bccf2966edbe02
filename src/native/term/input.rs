//! Input decoding: crossterm events into normalised names. Keys are `ctrl-j`, `alt-b`,
//! `shift-enter`, `ctrl-alt-x`, `enter`, `tab`, `shift-tab`, `backspace`, `delete`, `esc`,
//! `up`, `down`, `left`, `right`, `home`, `end`, `pgup`, `pgdn`, `insert`, `f1`..`f12`, and
//! printable characters as themselves (`a`, `A`, `é`, ` `). A bracketed paste is one event.
//! With alternate scroll (`?1007h`) the wheel arrives as a burst of arrow keys; a burst
//! already buffered together becomes one `wheel-up`/`wheel-down` event with a count.

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::StreamExt;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Key(String),
    Paste(String),
    Resize(u16, u16),
    /// Wheel burst: `up` is true for scrolling toward the start; `n` arrow keys.
    Wheel {
        up: bool,
        n: usize,
    },
    FocusGained,
    FocusLost,
    /// A left-button press, drag or release at (column, row) (mouse mode only).
    Mouse {
        kind: MouseKind,
        col: u16,
        row: u16,
    },
    /// The terminal answered the background-colour query in time: dark or light.
    Background {
        dark: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    Down,
    Drag,
    Up,
}

/// How long after the background query an answer still chooses the theme.
pub const BACKGROUND_BUDGET: Duration = Duration::from_millis(50);
/// How long an answer's bytes are kept out of the input, even when too late to count.
const SWALLOW: Duration = Duration::from_secs(1);

/// The background from `COLORFGBG` (`fg;bg` or `fg;x;bg`, rxvt's convention: background
/// colours 0-6 and 8 are dark): Some(true) for dark, None when not set or not understood.
pub fn colorfgbg(v: &str) -> Option<bool> {
    let bg: u8 = v.rsplit(';').next()?.trim().parse().ok()?;
    Some(matches!(bg, 0..=6 | 8))
}

/// Whether an OSC 11 answer's colour (`rgb:RRRR/GGGG/BBBB`, 1-4 hex digits each) is dark.
pub fn osc11_dark(reply: &str) -> Option<bool> {
    let rgb = reply
        .split_once("rgb:")
        .or_else(|| reply.split_once("rgba:"))?
        .1;
    let mut parts = rgb.split('/').map(|p| {
        let p = p.trim();
        let v = u32::from_str_radix(p, 16).ok()?;
        let max = (1u64 << (4 * p.len().clamp(1, 4))) - 1;
        Some(v as f64 / max as f64)
    });
    let (r, g, b) = (parts.next()??, parts.next()??, parts.next()??);
    Some(0.299 * r + 0.587 * g + 0.114 * b < 0.5)
}

/// Keeps the terminal's answer to the background query (OSC 11) out of the input. crossterm
/// does not parse OSC, so the answer arrives as keys: `alt-]`, its characters, then `ctrl-g`
/// (BEL) or `alt-\` (ST).
#[derive(Debug)]
pub struct OscFilter {
    asked: Instant,
    buf: Option<String>,
}

/// What [`OscFilter::feed`] made of an input.
#[derive(Debug, PartialEq)]
pub enum Filtered {
    Pass(Input),
    Swallow,
    /// The answer ended: the background, if it came in time and was understood.
    Done(Option<bool>),
}

impl OscFilter {
    pub fn new(asked: Instant) -> OscFilter {
        OscFilter { asked, buf: None }
    }

    /// Whether the filter still watches (false once the window passed).
    pub fn open(&self, now: Instant) -> bool {
        self.buf.is_some() || now.duration_since(self.asked) < SWALLOW
    }

    pub fn feed(&mut self, input: Input, now: Instant) -> Filtered {
        let Input::Key(k) = &input else {
            return Filtered::Pass(input);
        };
        match &mut self.buf {
            None if k == "alt-]" && now.duration_since(self.asked) < SWALLOW => {
                self.buf = Some(String::new());
                Filtered::Swallow
            }
            None => Filtered::Pass(input),
            Some(_) if k == "ctrl-g" || k == "alt-\\" || k == "esc" => {
                let text = self.buf.take().unwrap_or_default();
                let in_time = now.duration_since(self.asked) <= BACKGROUND_BUDGET;
                self.asked = now - SWALLOW;
                Filtered::Done(osc11_dark(&text).filter(|_| in_time))
            }
            Some(buf) if k.chars().count() == 1 && buf.len() < 64 => {
                buf.push_str(k);
                Filtered::Swallow
            }
            Some(_) => {
                // Not an answer after all.
                self.buf = None;
                Filtered::Pass(input)
            }
        }
    }
}

/// The name of a key event, or None for releases and keys fen has no name for.
pub fn key_name(k: &KeyEvent) -> Option<String> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let m = k.modifiers;
    let base = match k.code {
        KeyCode::Char(c) => {
            if m.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                c.to_lowercase().to_string()
            } else {
                // Shift is in the character itself.
                return Some(c.to_string());
            }
        }
        KeyCode::Enter => "enter".into(),
        KeyCode::Tab => "tab".into(),
        KeyCode::BackTab => return Some(prefix(m - KeyModifiers::SHIFT, "shift-tab")),
        KeyCode::Backspace => "backspace".into(),
        KeyCode::Delete => "delete".into(),
        KeyCode::Esc => "esc".into(),
        KeyCode::Up => "up".into(),
        KeyCode::Down => "down".into(),
        KeyCode::Left => "left".into(),
        KeyCode::Right => "right".into(),
        KeyCode::Home => "home".into(),
        KeyCode::End => "end".into(),
        KeyCode::PageUp => "pgup".into(),
        KeyCode::PageDown => "pgdn".into(),
        KeyCode::Insert => "insert".into(),
        KeyCode::F(n) => format!("f{n}"),
        _ => return None,
    };
    let shift = matches!(k.code, KeyCode::Char(_)) && m.contains(KeyModifiers::SHIFT);
    let m = if shift { m - KeyModifiers::SHIFT } else { m };
    Some(prefix(m, &base))
}

fn prefix(m: KeyModifiers, base: &str) -> String {
    let mut s = String::new();
    if m.contains(KeyModifiers::CONTROL) {
        s.push_str("ctrl-");
    }
    if m.contains(KeyModifiers::ALT) {
        s.push_str("alt-");
    }
    if m.contains(KeyModifiers::SHIFT) {
        s.push_str("shift-");
    }
    s.push_str(base);
    s
}

/// One crossterm event as an [`Input`].
pub fn normalize(ev: Event) -> Option<Input> {
    match ev {
        Event::Key(k) => key_name(&k).map(Input::Key),
        Event::Paste(s) => Some(Input::Paste(s.replace("\r\n", "\n").replace('\r', "\n"))),
        Event::Resize(w, h) => Some(Input::Resize(w, h)),
        Event::FocusGained => Some(Input::FocusGained),
        Event::FocusLost => Some(Input::FocusLost),
        Event::Mouse(m) => {
            use crossterm::event::{MouseButton, MouseEventKind as K};
            let kind = match m.kind {
                K::Down(MouseButton::Left) => MouseKind::Down,
                K::Drag(MouseButton::Left) => MouseKind::Drag,
                K::Up(MouseButton::Left) => MouseKind::Up,
                // Three rows a notch, as terminals scroll.
                K::ScrollUp => return Some(Input::Wheel { up: true, n: 3 }),
                K::ScrollDown => return Some(Input::Wheel { up: false, n: 3 }),
                _ => return None,
            };
            Some(Input::Mouse {
                kind,
                col: m.column,
                row: m.row,
            })
        }
    }
}

/// The terminal's input as a stream of [`Input`] (async; no thread per key, no polling).
pub struct Decoder {
    stream: EventStream,
    /// An event read while looking for the end of a burst.
    held: Option<Input>,
    /// Watching for the answer to the background query.
    osc: Option<OscFilter>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            stream: EventStream::new(),
            held: None,
            osc: None,
        }
    }
}

impl Decoder {
    /// The background query (OSC 11) was just written: watch for its answer.
    pub fn asked_background(&mut self) {
        self.osc = Some(OscFilter::new(Instant::now()));
    }

    /// The next input; None when the terminal's input ended.
    pub async fn next(&mut self) -> Option<Input> {
        let first = match self.held.take() {
            Some(i) => i,
            None => loop {
                match self.stream.next().await? {
                    Ok(ev) => {
                        let Some(i) = normalize(ev) else { continue };
                        let now = Instant::now();
                        let Some(f) = self.osc.as_mut().filter(|f| f.open(now)) else {
                            self.osc = None;
                            break i;
                        };
                        match f.feed(i, now) {
                            Filtered::Pass(i) => break i,
                            Filtered::Swallow | Filtered::Done(None) => continue,
                            Filtered::Done(Some(dark)) => break Input::Background { dark },
                        }
                    }
                    Err(_) => return None,
                }
            },
        };
        let up = match &first {
            Input::Key(k) if k == "up" => true,
            Input::Key(k) if k == "down" => false,
            _ => return Some(first),
        };
        // Arrow keys already waiting behind this one came in one write: the wheel. (A zero
        // poll, not a second poll of the stream: that would leave the stream's wake-up armed
        // with a waker nobody waits on.)
        let mut n = 1;
        while let Ok(true) = crossterm::event::poll(std::time::Duration::ZERO) {
            let Ok(ev) = crossterm::event::read() else {
                break;
            };
            match normalize(ev) {
                Some(Input::Key(k)) if k == if up { "up" } else { "down" } => n += 1,
                Some(other) => {
                    self.held = Some(other);
                    break;
                }
                None => {}
            }
        }
        Some(if n > 1 { Input::Wheel { up, n } } else { first })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn key(code: KeyCode, m: KeyModifiers) -> Option<String> {
        key_name(&KeyEvent {
            code,
            modifiers: m,
            kind: KeyEventKind::Press,
            state: KeyEventState::empty(),
        })
    }

    #[test]
    fn background_from_colorfgbg_and_an_osc_11_answer() {
        assert_eq!(colorfgbg("15;0"), Some(true));
        assert_eq!(colorfgbg("0;default;15"), Some(false));
        assert_eq!(colorfgbg("12;7"), Some(false));
        assert_eq!(colorfgbg("junk"), None);
        assert_eq!(osc11_dark("11;rgb:ffff/ffff/ffff"), Some(false));
        assert_eq!(osc11_dark("11;rgb:1e/1e/2e"), Some(true));
        assert_eq!(osc11_dark("11;nonsense"), None);
        let t0 = Instant::now();
        let key = |k: &str| Input::Key(k.into());
        let feed_all = |f: &mut OscFilter, at: Instant| {
            let mut out = Vec::new();
            out.push(f.feed(key("alt-]"), at));
            for c in "11;rgb:0000/0000/0000".chars() {
                out.push(f.feed(key(&c.to_string()), at));
            }
            out.push(f.feed(key("ctrl-g"), at));
            out.push(f.feed(key("x"), at));
            out
        };
        // In time: swallowed, then dark; typing after it passes.
        let mut f = OscFilter::new(t0);
        let out = feed_all(&mut f, t0 + Duration::from_millis(10));
        assert!(out[..out.len() - 2].iter().all(|o| *o == Filtered::Swallow));
        assert_eq!(out[out.len() - 2], Filtered::Done(Some(true)));
        assert_eq!(out[out.len() - 1], Filtered::Pass(key("x")));
        // Too late to choose the theme, still kept out of the input.
        let mut f = OscFilter::new(t0);
        let out = feed_all(&mut f, t0 + Duration::from_millis(300));
        assert_eq!(out[out.len() - 2], Filtered::Done(None));
        // Alt-] typed by a person long after: a key.
        let mut f = OscFilter::new(t0);
        assert_eq!(
            f.feed(key("alt-]"), t0 + Duration::from_secs(2)),
            Filtered::Pass(key("alt-]"))
        );
    }

    #[test]
    fn names() {
        let c = KeyModifiers::CONTROL;
        let a = KeyModifiers::ALT;
        let s = KeyModifiers::SHIFT;
        let n = KeyModifiers::NONE;
        assert_eq!(key(KeyCode::Char('j'), c).as_deref(), Some("ctrl-j"));
        assert_eq!(key(KeyCode::Char('b'), a).as_deref(), Some("alt-b"));
        assert_eq!(key(KeyCode::Char('X'), c | s).as_deref(), Some("ctrl-x"));
        assert_eq!(key(KeyCode::Char('A'), s).as_deref(), Some("A"));
        assert_eq!(key(KeyCode::Char('é'), n).as_deref(), Some("é"));
        assert_eq!(key(KeyCode::Enter, s).as_deref(), Some("shift-enter"));
        assert_eq!(key(KeyCode::Enter, n).as_deref(), Some("enter"));
        assert_eq!(key(KeyCode::BackTab, s).as_deref(), Some("shift-tab"));
        assert_eq!(key(KeyCode::PageUp, n).as_deref(), Some("pgup"));
        assert_eq!(key(KeyCode::PageDown, n).as_deref(), Some("pgdn"));
        assert_eq!(key(KeyCode::F(5), n).as_deref(), Some("f5"));
        assert_eq!(key(KeyCode::Up, c | a).as_deref(), Some("ctrl-alt-up"));
        let release = KeyEvent {
            code: KeyCode::Char('a'),
            modifiers: n,
            kind: KeyEventKind::Release,
            state: KeyEventState::empty(),
        };
        assert_eq!(key_name(&release), None);
        assert_eq!(
            normalize(Event::Paste("a\r\nb".into())),
            Some(Input::Paste("a\nb".into()))
        );
        assert_eq!(
            normalize(Event::Resize(80, 24)),
            Some(Input::Resize(80, 24))
        );
    }
}
