//! Input lines of the line REPL read without a terminal (a pipe, a file, a terminal program
//! that is not a tty): the escape sequences a terminal would have turned into cursor moves
//! (arrow keys `ESC [ A`, `ESC O A`, function keys, bracketed-paste markers, OSC strings) are
//! removed, never passed on as text, and so are the other control characters but tab.

const ESC: char = '\u{1b}';

/// `line` without escape sequences and control characters (tab kept), and how many
/// sequences or characters were removed.
pub fn strip_escapes(line: &str) -> (String, usize) {
    if !line.chars().any(|c| c.is_control() && c != '\t') {
        return (line.to_string(), 0);
    }
    let mut out = String::with_capacity(line.len());
    let mut removed = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ESC {
            removed += 1;
            match chars.next() {
                // CSI: parameters and intermediates, then one final byte (0x40..=0x7E).
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // SS3 (keypad and arrow keys in application mode): one more character.
                Some('O') => {
                    chars.next();
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (`ESC \`).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == ESC && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // Two-byte sequences (`ESC x`, Alt+key); intermediates first.
                Some(mut c) => {
                    while ('\u{20}'..='\u{2f}').contains(&c) {
                        match chars.next() {
                            Some(n) => c = n,
                            None => break,
                        }
                    }
                }
                None => {}
            }
        } else if c.is_control() && c != '\t' {
            removed += 1;
        } else {
            out.push(c);
        }
    }
    (out, removed)
}

#[cfg(test)]
mod tests {
    use super::strip_escapes;

    #[test]
    fn arrow_keys_are_not_text() {
        assert_eq!(strip_escapes("\u{1b}[A\u{1b}[Dhello"), ("hello".into(), 2));
        assert_eq!(strip_escapes("fix \u{1b}OAit"), ("fix it".into(), 1));
        assert_eq!(strip_escapes("\u{1b}[1;5Cword"), ("word".into(), 1));
        assert_eq!(
            strip_escapes("\u{1b}[200~pasted\u{1b}[201~"),
            ("pasted".into(), 2)
        );
        assert_eq!(
            strip_escapes("a\u{1b}]0;title\u{7}b\u{8}c"),
            ("abc".into(), 2)
        );
        assert_eq!(strip_escapes("tab\there é"), ("tab\there é".into(), 0));
        assert_eq!(strip_escapes("\u{1b}"), (String::new(), 1));
    }
}
