//! Coalescing buffer for the live-output callback.

/// Cleaned bytes waiting for the next callback. Bounded: when the callback cannot keep up,
/// the oldest bytes are dropped (the kept text and spill file still have everything).
const LIVE_CAP: usize = 64 * 1024;

/// Pending live output plus an incomplete UTF-8 character carried to the next chunk.
#[derive(Debug, Default)]
pub struct LiveBuf {
    buf: Vec<u8>,
}

impl LiveBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends cleaned bytes, dropping the oldest past the cap.
    pub fn push(&mut self, s: &[u8]) {
        if s.len() >= LIVE_CAP {
            self.buf.clear();
            self.buf.extend_from_slice(&s[s.len() - LIVE_CAP..]);
        } else {
            let over = (self.buf.len() + s.len()).saturating_sub(LIVE_CAP);
            self.buf.drain(..over);
            self.buf.extend_from_slice(s);
        }
    }

    /// Whether anything waits.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Takes the pending text up to the last complete character; an incomplete trailing
    /// character stays for the next call. Characters cut by dropping are skipped.
    pub fn take_text(&mut self) -> Option<String> {
        let start = self
            .buf
            .iter()
            .take(4)
            .position(|&b| b & 0xC0 != 0x80)
            .unwrap_or(0);
        let end = match std::str::from_utf8(&self.buf[start..]) {
            Ok(_) => self.buf.len(),
            Err(e) if e.error_len().is_none() => start + e.valid_up_to(),
            Err(_) => self.buf.len(),
        };
        if end <= start {
            return None;
        }
        let text = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
        self.buf.drain(..end);
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_incomplete_char() {
        let mut l = LiveBuf::new();
        let e = "é".as_bytes();
        l.push(b"ab");
        l.push(&e[..1]);
        assert_eq!(l.take_text().as_deref(), Some("ab"));
        assert!(!l.is_empty());
        l.push(&e[1..]);
        assert_eq!(l.take_text().as_deref(), Some("é"));
        assert!(l.is_empty());
    }

    #[test]
    fn bounded() {
        let mut l = LiveBuf::new();
        for _ in 0..100 {
            l.push(&[b'x'; 4096]);
        }
        assert_eq!(l.take_text().map(|t| t.len()), Some(LIVE_CAP));
    }
}
