//! Input decoding: crossterm events into normalised names. Keys are `ctrl-j`, `alt-b`,
//! `shift-enter`, `ctrl-alt-x`, `enter`, `tab`, `shift-tab`, `backspace`, `delete`, `esc`,
//! `up`, `down`, `left`, `right`, `home`, `end`, `pgup`, `pgdn`, `insert`, `f1`..`f12`, and
//! printable characters as themselves (`a`, `A`, `é`, ` `). A bracketed paste is one event.
//! With alternate scroll (`?1007h`) the wheel arrives as a burst of arrow keys; a burst
//! already buffered together becomes one `wheel-up`/`wheel-down` event with a count.

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::StreamExt;

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
        _ => None,
    }
}

/// The terminal's input as a stream of [`Input`] (async; no thread per key, no polling).
pub struct Decoder {
    stream: EventStream,
    /// An event read while looking for the end of a burst.
    held: Option<Input>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            stream: EventStream::new(),
            held: None,
        }
    }
}

impl Decoder {
    /// The next input; None when the terminal's input ended.
    pub async fn next(&mut self) -> Option<Input> {
        let first = match self.held.take() {
            Some(i) => i,
            None => loop {
                match self.stream.next().await? {
                    Ok(ev) => {
                        if let Some(i) = normalize(ev) {
                            break i;
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
