//! A conservative fast check of one line: Some only when the line is certainly a JSON object
//! that `serde_json` parses as a `Value`; None whenever it is not sure (the caller then asks
//! `serde_json` itself). It never rejects: it only spares `serde_json` the common case.
//!
//! Certain means: the full JSON grammar holds, and none of the things `Value` parsing rejects
//! beyond the grammar can occur. Those are surrogate `\u` escapes (a lone one is an error),
//! numbers out of `f64` range, nesting deeper than serde_json's limit of 128, and its
//! private `$serde_json::private::` keys; lines with any surrogate escape, an escaped key, a
//! number that might be that large, or nesting over 100 are left to `serde_json`. The line
//! must already be valid UTF-8 (checked per piece), so bytes >= 0x80 are plain string content.

use super::scan::{Field, Fields};

/// Deepest nesting accepted here (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 100;
/// Numbers whose magnitude stays below 10^this are far inside `f64`'s range (~1.8e308).
const MAX_DECIMAL_EXPONENT: i64 = 300;
/// Keys `Value` treats specially (see `scan`).
const PRIVATE_KEY_PREFIX: &[u8] = b"$serde_json::private::";

/// The fields of `line` when it is certainly a JSON object `Value` accepts; None if unsure.
#[cfg(test)]
pub(crate) fn check(line: &[u8]) -> Option<Fields> {
    check_line_at(line).and_then(|(f, len)| (len == line.len()).then_some(f))
}

/// For the line `bytes` starts with (up to the first `\n`, or all of it): its fields and
/// length when it is certainly a JSON object `Value` accepts; None if unsure. Finds the line's
/// end as it goes, so the caller need not search for it first.
pub(crate) fn check_line_at(bytes: &[u8]) -> Option<(Fields, usize)> {
    let mut p = Walker {
        b: bytes,
        i: 0,
        depth: 0,
    };
    let mut fields = Fields::default();
    p.ws();
    if p.peek()? != b'{' {
        return None;
    }
    p.object(Some(&mut fields))?;
    p.ws();
    match p.peek() {
        None | Some(b'\n') => Some((fields, p.i)),
        Some(_) => None,
    }
}

/// What a value was, for the top-level fields.
enum Kind {
    Str {
        start: usize,
        end: usize,
        escaped: bool,
    },
    Other,
}

struct Walker<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
}

impl Walker<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// JSON whitespace but `\n`: a line's value never continues on the next line.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn value(&mut self) -> Option<Kind> {
        match self.peek()? {
            b'{' => self.object(None).map(|_| Kind::Other),
            b'[' => self.array().map(|_| Kind::Other),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number().map(|_| Kind::Other),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<Kind> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| {
            self.i = end;
            Kind::Other
        })
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// At `{`; with `top`, the interesting fields are recorded there.
    fn object(&mut self, mut top: Option<&mut Fields>) -> Option<()> {
        self.enter()?;
        self.i += 1;
        self.ws();
        if self.eat(b'}').is_some() {
            self.depth -= 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let Kind::Str {
                start,
                end,
                escaped: false,
            } = self.string()?
            else {
                return None; // an escaped key: leave it to serde_json
            };
            let key = &self.b[start..end];
            if key.starts_with(PRIVATE_KEY_PREFIX) {
                return None;
            }
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value = self.value()?;
            if let Some(f) = top.as_deref_mut() {
                let slot = match key {
                    b"type" => Some(&mut f.kind),
                    b"id" => Some(&mut f.id),
                    b"parent_id" => Some(&mut f.parent_id),
                    _ => None,
                };
                if let Some(slot) = slot {
                    // A repeated key replaces the earlier value, as in `Value`.
                    *slot = match value {
                        Kind::Str { escaped: true, .. } => Field::Parse,
                        Kind::Str { start, end, .. } => Field::Span {
                            start: u32::try_from(start).ok()?,
                            len: u32::try_from(end - start).ok()?,
                        },
                        Kind::Other => Field::Absent,
                    };
                }
            }
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// At `[`.
    fn array(&mut self) -> Option<()> {
        self.enter()?;
        self.i += 1;
        self.ws();
        if self.eat(b']').is_some() {
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// At `"`: the string's content span, and whether it has escapes.
    fn string(&mut self) -> Option<Kind> {
        self.i += 1;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i += string_stop(self.b.get(self.i..)?)?;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Some(Kind::Str {
                        start,
                        end: self.i - 1,
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    match *self.b.get(self.i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let hex = self.b.get(self.i + 2..self.i + 6)?;
                            let mut cp = 0u32;
                            for &h in hex {
                                cp = cp * 16 + char::from(h).to_digit(16)?;
                            }
                            if (0xD800..=0xDFFF).contains(&cp) {
                                return None; // surrogates: serde_json checks pairing
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None, // a control character
            }
        }
    }

    /// At `-` or a digit: the JSON number grammar, with a magnitude far inside `f64`.
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        let int_start = self.i;
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let int_digits = (self.i - int_start) as i64;
        if self.eat(b'.').is_some() {
            let at = self.i;
            self.digits();
            if self.i == at {
                return None;
            }
        }
        let mut exponent = 0i64;
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let negative = match self.peek()? {
                b'-' => {
                    self.i += 1;
                    true
                }
                b'+' => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let at = self.i;
            self.digits();
            let digits = &self.b[at..self.i];
            if digits.is_empty() || digits.len() > 4 {
                return None;
            }
            exponent = digits
                .iter()
                .fold(0i64, |e, &d| e * 10 + i64::from(d - b'0'));
            if negative {
                exponent = -exponent;
            }
        }
        (int_digits + exponent <= MAX_DECIMAL_EXPONENT && exponent >= -MAX_DECIMAL_EXPONENT)
            .then_some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

/// Index of the first `"`, `\` or control character (< 0x20) in `s`.
#[inline]
fn string_stop(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is enabled (cfg above); every load reads 16 bytes inside `s`
        // (`i + 16 <= s.len()`), unaligned loads are allowed.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let ctl = _mm_set1_epi8(0x1f);
            while i + 16 <= s.len() {
                let x = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
                // x <= 0x1f unsigned  <=>  max(x, 0x1f) == 0x1f
                let stop = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                    _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl),
                );
                let bits = _mm_movemask_epi8(stop) as u32;
                if bits != 0 {
                    return Some(i + bits.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    s[i..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_stop_finds_the_first_stop_at_any_position() {
        for len in 0..70 {
            for at in 0..len {
                for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut s = vec![b'a'; len];
                    s[at] = stop;
                    if at + 1 < len {
                        s[at + 1] = b'"';
                    }
                    assert_eq!(string_stop(&s), Some(at), "len {len} at {at} stop {stop}");
                }
            }
            let mut s: Vec<u8> = vec![0x20; len];
            s.extend(std::iter::repeat_n(0xc3, 3));
            s.push(0x7f);
            assert_eq!(
                string_stop(&s),
                None,
                "space, DEL and high bytes are content"
            );
        }
    }

    #[test]
    fn accepts_plain_records_and_leaves_doubtful_ones_to_serde_json() {
        let sure: &[&str] = &[
            r#"{}"#,
            r#" {"type":"message","id":"a","parent_id":null,"n":[1,-0,2.5,1e10,-3E-2,0.1e+2],"t":true,"f":false,"o":{"x":[]}} "#,
            r#"{"s":"esc \" \\ \/ \b \f \n \r \t \u00e9 \uE000 \u001b"}"#,
            "{\"a\":\t1\r}",
        ];
        assert_eq!(
            check_line_at(b"{\"a\":1} \r\n{\"b\":2}").map(|(_, len)| len),
            Some(9)
        );
        assert!(
            check_line_at(b"{\"a\":\n1}").is_none(),
            "a value spanning lines"
        );
        for line in sure {
            assert!(check(line.as_bytes()).is_some(), "{line}");
        }
        let deep_ok = format!("{{\"a\":{}1{}}}", "[".repeat(99), "]".repeat(99));
        assert!(check(deep_ok.as_bytes()).is_some());
        let unsure: Vec<String> = vec![
            r#"{"a":"\ud83d\ude00"}"#.into(),
            r#"{"a":"\uDC00"}"#.into(),
            r#"{"k\u0065y":1}"#.into(),
            r#"{"$serde_json::private::RawValue":"1"}"#.into(),
            r#"{"a":1e300}"#.into(),
            r#"{"a":1e-301}"#.into(),
            r#"{"a":1e00001}"#.into(),
            format!("{{\"a\":{}}}", "9".repeat(301)),
            format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100)),
            r#"[1]"#.into(),
            r#""s""#.into(),
            r#"{"a":01}"#.into(),
            r#"{"a":1.}"#.into(),
            r#"{"a":.5}"#.into(),
            r#"{"a":1e}"#.into(),
            r#"{"a":+1}"#.into(),
            r#"{"a":tru}"#.into(),
            r#"{"a":nul}"#.into(),
            r#"{"a":"\x"}"#.into(),
            r#"{"a":"\u12G4"}"#.into(),
            r#"{"a":"\u12"}"#.into(),
            "{\"a\":\"\u{1}\"}".into(),
            r#"{"a":1,}"#.into(),
            r#"{"a":[1,]}"#.into(),
            r#"{"a" 1}"#.into(),
            r#"{a:1}"#.into(),
            r#"{"a":1} x"#.into(),
            r#"{"a":1}{}"#.into(),
            "{\"a\":1}\u{c}".into(),
            r#"{"a":"x"#.into(),
            r#"{"a":[1"#.into(),
            r#"{"#.into(),
            "".into(),
        ];
        for line in &unsure {
            assert!(check(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn top_level_fields_are_spans() {
        let line = br#"{"x":{"type":"inner"},"type":"message","id":"m\"1","parent_id":"p","id":"m2","parent_id":7}"#;
        let f = check(line).unwrap();
        let text = |f: Field| match f {
            Field::Span { start, len } => {
                std::str::from_utf8(&line[start as usize..(start + len) as usize]).unwrap()
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(text(f.kind), "message");
        assert_eq!(text(f.id), "m2", "last key wins");
        assert_eq!(f.parent_id, Field::Absent, "not a string");
        let f = check(br#"{"id":"a\nb"}"#).unwrap();
        assert_eq!(f.id, Field::Parse);
        assert_eq!(f.kind, Field::Absent);
    }
}
