//! File-type sniffing for the `read` and `grep` tools, and "did you mean" suggestions.
//!
//! [`detect`] decides whether a file is text the model can read, or binary data it should be
//! told about instead of being shown garbage. It goes by content, never by the name alone:
//! readable text in `notes.png` is text. The checks run cheapest-and-surest first:
//!
//! 1. magic numbers of common formats (PNG, ELF, zip, ...), which also name the kind. A magic
//!    whose first bytes are printable ASCII (`%PDF-`, `GIF89a`, `BZh`, `OTTO`, `RIFF`, ...)
//!    could start a text file, so it names the kind only when checks 3-4 find binary content;
//! 2. a UTF-16/UTF-32 byte-order mark followed by data that is not NUL-free UTF-8: reported as
//!    `Binary { kind: "UTF-16 text" }` because the tools work in UTF-8 and would otherwise show
//!    a NUL every other byte. `\xff\xfe` followed by plain ASCII is text (two escaped bytes);
//! 3. a NUL byte in the first 8 KiB;
//! 4. the share of non-text in the first 4 KiB, judged on character boundaries: a valid
//!    multi-byte UTF-8 character counts as one text character, an invalid byte counts as one
//!    non-text unit, and a character cut off by the end of the sample is not counted at all.
//!    More than 30% non-text, and more than [`MIN_NON_TEXT_UNITS`] such units, means binary, so
//!    a short file with a few invalid bytes reads with `\xNN` escapes like a long one.
//!
//! The file name only words the kind of content already found binary (`x.bmp`: "BMP image").

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// How many leading bytes [`detect_file`] reads (the NUL check looks at all of them).
pub const SNIFF_BYTES: usize = 8 * 1024;
/// How many leading bytes the non-text share is computed over.
const RATIO_SAMPLE_BYTES: usize = 4 * 1024;
/// Non-text characters above this share of the sample make the file binary.
const MAX_NON_TEXT_SHARE: f64 = 0.30;
/// ... and there are more than this many of them: a handful of invalid bytes in a short file
/// is text to show with escapes, not binary.
pub const MIN_NON_TEXT_UNITS: usize = 8;

/// What a file is, as far as showing it to a model goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// Text that can be shown (UTF-8, or mostly-text in a legacy 8-bit encoding).
    Text,
    /// Not shown as text; `kind` names what it is, e.g. "PNG image" or "binary data".
    Binary {
        /// Human-readable description, e.g. "ELF executable", "zip archive", "binary data".
        kind: String,
    },
}

impl FileKind {
    /// True for [`FileKind::Binary`].
    pub fn is_binary(&self) -> bool {
        matches!(self, FileKind::Binary { .. })
    }

    fn binary(kind: &str) -> FileKind {
        FileKind::Binary {
            kind: kind.to_string(),
        }
    }
}

/// Classifies a file by its first bytes (pass at least [`SNIFF_BYTES`] of them when the file
/// is that long). The name only words the kind of content found binary. An empty file is text.
pub fn detect(path_hint: &Path, head: &[u8]) -> FileKind {
    if let Some(kind) = magic_kind(head) {
        // A weak magic needs binary content behind it: NULs, much non-text, or any byte
        // that is not UTF-8 (a real PDF's second line, a GIF's header fields).
        let rest = &head[..head.len().min(SNIFF_BYTES)];
        if strong_magic(head) || content_is_binary(head) || !utf8_up_to_cut(rest) {
            return FileKind::binary(kind);
        }
    }
    if let Some(kind) = bom_kind(head) {
        return FileKind::binary(kind);
    }
    if content_is_binary(head) {
        return FileKind::binary(binary_extension_kind(path_hint).unwrap_or("binary data"));
    }
    FileKind::Text
}

/// A magic is strong when its first bytes hold one no text file starts with.
fn strong_magic(head: &[u8]) -> bool {
    head.iter().take(4).any(|&b| !(0x20..0x7f).contains(&b))
}

/// A NUL in the first [`SNIFF_BYTES`], or too much non-text in the first 4 KiB.
fn content_is_binary(head: &[u8]) -> bool {
    if memchr_nul(&head[..head.len().min(SNIFF_BYTES)]) {
        return true;
    }
    let (bad, total) = non_text_units(&head[..head.len().min(RATIO_SAMPLE_BYTES)]);
    bad > MIN_NON_TEXT_UNITS && bad as f64 > MAX_NON_TEXT_SHARE * total as f64
}

/// Reads the first [`SNIFF_BYTES`] of `path` and classifies it with [`detect`].
pub fn detect_file(path: &Path) -> io::Result<FileKind> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    File::open(path)?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(detect(path, &head))
}

/// The MIME type of an image format a model can take as an attachment (PNG, JPEG, GIF, WebP),
/// judged by magic number; `None` for anything else.
pub fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The kind named by a known binary file extension (case-insensitive), if any. It words the
/// kind of content found binary; it never decides that a file is binary.
pub fn binary_extension_kind(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let kind = match ext.as_str() {
        "png" => "PNG image",
        "jpg" | "jpeg" => "JPEG image",
        "gif" => "GIF image",
        "webp" => "WebP image",
        "bmp" => "BMP image",
        "ico" => "icon image",
        "tif" | "tiff" => "TIFF image",
        "psd" => "Photoshop image",
        "heic" | "avif" => "HEIF image",
        "zip" | "jar" | "war" | "ear" | "apk" | "whl" | "nupkg" | "vsix" | "xpi" => "zip archive",
        "gz" | "tgz" => "gzip archive",
        "bz2" | "tbz2" => "bzip2 archive",
        "xz" | "txz" => "xz archive",
        "zst" => "zstd archive",
        "7z" => "7-zip archive",
        "rar" => "RAR archive",
        "tar" => "tar archive",
        "deb" | "rpm" => "package archive",
        "dmg" | "iso" | "img" => "disk image",
        "exe" | "dll" | "sys" => "Windows executable",
        "so" | "dylib" => "shared library",
        "o" | "obj" | "a" | "lib" | "rlib" | "ko" => "object file",
        "bin" => "binary data",
        "class" => "Java class file",
        "pyc" | "pyo" => "Python bytecode",
        "wasm" => "WebAssembly module",
        "ttf" | "otf" | "woff" | "woff2" | "eot" => "font",
        "pdf" => "PDF document",
        "doc" | "xls" | "ppt" => "Office document",
        "docx" | "xlsx" | "pptx" | "odt" | "ods" | "odp" => "Office document",
        "sqlite" | "sqlite3" | "db" => "SQLite database",
        "mp3" | "wav" | "flac" | "ogg" | "m4a" | "aac" | "opus" => "audio",
        "mp4" | "mkv" | "mov" | "avi" | "webm" | "m4v" => "video",
        "pdb" | "dwo" | "dSYM" => "debug symbols",
        "npy" | "npz" | "pkl" | "pickle" | "parquet" | "onnx" | "pt" | "safetensors" => {
            "binary data file"
        }
        _ => return None,
    };
    Some(kind)
}

/// Magic numbers of common binary formats.
fn magic_kind(head: &[u8]) -> Option<&'static str> {
    const MAGICS: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"PK\x05\x06", "zip archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"BZh", "bzip2 archive"),
        (b"\xfd7zXZ\x00", "xz archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
        (b"Rar!\x1a\x07", "RAR archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"\xce\xfa\xed\xfe", "Mach-O executable"),
        (
            b"\xca\xfe\xba\xbe",
            "Java class file or Mach-O universal binary",
        ),
        (b"\x00asm", "WebAssembly module"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"!<arch>\n", "static library archive"),
        (b"wOFF", "font"),
        (b"wOF2", "font"),
        (b"\x00\x01\x00\x00\x00", "font"),
        (b"OTTO", "font"),
        (b"ID3", "audio"),
        (b"fLaC", "audio"),
        (b"OggS", "audio"),
        (b"\x00\x00\x01\x00", "icon image"),
        (b"II*\x00", "TIFF image"),
        (b"MM\x00*", "TIFF image"),
    ];
    if let Some((_, kind)) = MAGICS.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Some(kind);
    }
    if head.len() >= 12 && &head[..4] == b"RIFF" {
        return Some(match &head[8..12] {
            b"WEBP" => "WebP image",
            b"WAVE" => "audio",
            _ => "RIFF media",
        });
    }
    if head.len() >= 12 && &head[4..8] == b"ftyp" {
        return Some("video");
    }
    // "MZ" alone is too weak (a text file may start with it); require the PE offset field.
    if head.starts_with(b"MZ") && head.len() >= 64 && head[2..64].contains(&0) {
        return Some("Windows executable");
    }
    if head.len() > 262 && &head[257..262] == b"ustar" {
        return Some("tar archive");
    }
    None
}

/// UTF-16 / UTF-32 byte-order marks (UTF-32 LE shares its first two bytes with UTF-16 LE),
/// unless what follows is NUL-free valid UTF-8 (then the "BOM" is two stray bytes of text).
fn bom_kind(head: &[u8]) -> Option<&'static str> {
    let kind = if head.starts_with(b"\xff\xfe\x00\x00") || head.starts_with(b"\x00\x00\xfe\xff") {
        "UTF-32 text"
    } else if head.starts_with(b"\xff\xfe") || head.starts_with(b"\xfe\xff") {
        "UTF-16 text"
    } else {
        return None;
    };
    let rest = &head[2..head.len().min(SNIFF_BYTES)];
    if !memchr_nul(rest) && utf8_up_to_cut(rest) {
        return None;
    }
    Some(kind)
}

/// Whether `bytes` is valid UTF-8 but for a character cut off at the end.
fn utf8_up_to_cut(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

fn memchr_nul(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

/// Non-text units and all units of `sample` (non-text first), counted per character: each valid UTF-8 character is
/// one unit (non-text when it is a control character other than common whitespace), each
/// invalid byte is one non-text unit, and an incomplete character at the very end of the
/// sample is ignored (the sample boundary cut it, the file is not at fault).
fn non_text_units(sample: &[u8]) -> (usize, usize) {
    let mut total = 0usize;
    let mut bad = 0usize;
    let mut rest = sample;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                count_chars(valid, &mut total, &mut bad);
                break;
            }
            Err(err) => {
                let (valid, after) = rest.split_at(err.valid_up_to());
                // `valid_up_to` guarantees this prefix is valid UTF-8.
                if let Ok(valid) = std::str::from_utf8(valid) {
                    count_chars(valid, &mut total, &mut bad);
                }
                match err.error_len() {
                    // Truncated character at the end of the sample: not counted.
                    None => break,
                    Some(len) => {
                        total += 1;
                        bad += 1;
                        rest = &after[len..];
                    }
                }
            }
        }
    }
    (bad, total)
}

/// [`non_text_units`] as a share of the sample.
#[cfg(test)]
fn non_text_share(sample: &[u8]) -> f64 {
    let (bad, total) = non_text_units(sample);
    if total == 0 {
        0.0
    } else {
        bad as f64 / total as f64
    }
}

fn count_chars(text: &str, total: &mut usize, bad: &mut usize) {
    for ch in text.chars() {
        *total += 1;
        if is_non_text_char(ch) {
            *bad += 1;
        }
    }
}

/// Control characters that do not appear in ordinary text files.
fn is_non_text_char(ch: char) -> bool {
    match ch {
        '\t' | '\n' | '\r' | '\x0c' | '\x0b' | '\x08' | '\x1b' => false,
        c => c.is_control(),
    }
}

/// Up to `max` names in `dir` that resemble `missing_name`, best first, for "not found"
/// messages. Ranks a case-insensitive equal name first, then names that contain the missing
/// name or are contained in it (case-insensitive), then names within a small edit distance.
/// An unreadable directory yields no suggestions.
pub fn similar_names(dir: &Path, missing_name: &str, max: usize) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let wanted = missing_name.to_lowercase();
    if wanted.is_empty() || max == 0 {
        return Vec::new();
    }
    let mut scored: Vec<(usize, String)> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter_map(|name| similarity_rank(&wanted, &name).map(|rank| (rank, name)))
        .collect();
    scored.sort();
    scored.into_iter().take(max).map(|(_, name)| name).collect()
}

/// Lower is better; `None` when the names are not alike enough to suggest.
fn similarity_rank(wanted_lower: &str, candidate: &str) -> Option<usize> {
    let cand = candidate.to_lowercase();
    if cand == wanted_lower {
        return Some(0);
    }
    let distance = strsim::levenshtein(wanted_lower, &cand);
    // Allow roughly one typo per four characters, at least two.
    let allowed = (wanted_lower.chars().count() / 4).max(2);
    if distance <= allowed {
        return Some(10 + distance);
    }
    let shorter = wanted_lower.len().min(cand.len());
    if shorter >= 3 && (cand.contains(wanted_lower) || wanted_lower.contains(cand.as_str())) {
        return Some(100 + distance);
    }
    let stem_wanted = wanted_lower.split('.').next().unwrap_or(wanted_lower);
    let stem_cand = cand.split('.').next().unwrap_or(&cand);
    if stem_wanted.len() >= 3 && stem_wanted == stem_cand {
        return Some(200 + distance);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_ignores_truncated_tail_char() {
        // "é" is 0xC3 0xA9; cut after 0xC3.
        let mut sample = "aé".repeat(10).into_bytes();
        sample.push(0xC3);
        assert_eq!(non_text_share(&sample), 0.0);
    }

    #[test]
    fn share_counts_invalid_bytes_once_each() {
        let sample = [b'a', 0xFF, b'b', 0xFE];
        assert!((non_text_share(&sample) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn utf16_bom_is_reported() {
        let kind = detect(Path::new("x.txt"), b"\xff\xfeh\x00i\x00");
        assert_eq!(
            kind,
            FileKind::Binary {
                kind: "UTF-16 text".into()
            }
        );
    }

    #[test]
    fn rank_prefers_case_insensitive_equal() {
        assert_eq!(similarity_rank("readme.md", "README.md"), Some(0));
        assert!(similarity_rank("main.rs", "mian.rs").is_some());
        assert!(similarity_rank("main.rs", "Cargo.toml").is_none());
    }
}
