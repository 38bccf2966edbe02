//! Positions: fen shows 1-based lines and columns in characters (as `read` does); LSP counts
//! 0-based lines and UTF-16 code units. File URIs: `file://` plus the percent-encoded path.

use std::path::{Path, PathBuf};

/// The UTF-16 offset of the 0-based character column `col` of `line`.
pub fn char_to_utf16_col(line: &str, col: u32) -> u32 {
    line.chars()
        .take(col as usize)
        .map(|c| c.len_utf16() as u32)
        .sum()
}

/// The 0-based character column of the UTF-16 offset `units` of `line`.
pub fn utf16_to_char_col(line: &str, units: u32) -> u32 {
    let mut n = 0u32;
    let mut chars = 0u32;
    for c in line.chars() {
        if n >= units {
            break;
        }
        n += c.len_utf16() as u32;
        chars += 1;
    }
    chars
}

fn keep(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"/-_.~".contains(&b)
}

/// `file:///abs/path`, percent-encoded.
pub fn path_to_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a `file://` URI (None for other schemes).
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` and `file:///x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_through_utf16() {
        let line = "a😀b";
        assert_eq!(char_to_utf16_col(line, 2), 3);
        assert_eq!(utf16_to_char_col(line, 3), 2);
        assert_eq!(utf16_to_char_col(line, 99), 3);
    }

    #[test]
    fn uris_round_trip() {
        let p = Path::new("/tmp/a b/ü#.py");
        let u = path_to_uri(p);
        assert_eq!(u, "file:///tmp/a%20b/%C3%BC%23.py");
        assert_eq!(uri_to_path(&u).unwrap(), p);
        assert_eq!(uri_to_path("file:///C%3A/x").unwrap(), Path::new("/C:/x"));
        assert!(uri_to_path("untitled:1").is_none());
    }
}
