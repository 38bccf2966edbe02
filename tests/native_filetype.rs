//! Integration tests for `fen::native::filetype`.

use std::fs;
use std::path::Path;

use fen::native::filetype::{detect, detect_file, image_mime, similar_names, FileKind};

fn binary_kind(kind: &FileKind) -> &str {
    match kind {
        FileKind::Binary { kind } => kind,
        FileKind::Text => "text",
    }
}

#[test]
fn png_magic_wins_over_a_text_extension() {
    let head = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
    let kind = detect(Path::new("logo.txt"), head);
    assert_eq!(binary_kind(&kind), "PNG image");
    assert_eq!(image_mime(head), Some("image/png"));
}

#[test]
fn elf_is_an_executable() {
    let mut head = b"\x7fELF\x02\x01\x01".to_vec();
    head.extend_from_slice(&[0u8; 64]);
    assert_eq!(
        binary_kind(&detect(Path::new("fen"), &head)),
        "ELF executable"
    );
}

#[test]
fn nul_byte_in_first_8k_is_binary_but_later_is_not_looked_at() {
    let mut head = vec![b'a'; 5000];
    head[4999] = 0;
    assert_eq!(
        binary_kind(&detect(Path::new("x.txt"), &head)),
        "binary data"
    );
    let mut late = vec![b'a'; 9000];
    late[8500] = 0;
    assert_eq!(detect(Path::new("x.txt"), &late), FileKind::Text);
}

#[test]
fn latin1_text_with_many_accents_is_text() {
    // "café crème brûlée à l'été " in ISO-8859-1: about 1 invalid byte in 5 characters.
    let sentence: Vec<u8> = b"caf\xe9 cr\xe8me br\xfbl\xe9e \xe0 l'\xe9t\xe9 ".to_vec();
    let head: Vec<u8> = sentence.iter().copied().cycle().take(4096).collect();
    assert_eq!(detect(Path::new("notes.txt"), &head), FileKind::Text);
}

#[test]
fn mostly_invalid_bytes_are_binary() {
    let head: Vec<u8> = (0..4096u32).map(|i| 0x80 + (i % 0x7f) as u8).collect();
    assert_eq!(binary_kind(&detect(Path::new("x"), &head)), "binary data");
}

#[test]
fn utf8_with_many_multibyte_chars_is_text() {
    let text = "日本語のテキスト、絵文字🎉も含む。".repeat(200);
    assert_eq!(detect(Path::new("ja.md"), text.as_bytes()), FileKind::Text);
}

#[test]
fn truncated_char_at_sample_end_is_text() {
    // Exactly fills the 4 KiB sample with a 4-byte char split at the boundary.
    let mut head = "a".repeat(4094).into_bytes();
    head.extend_from_slice("🎉".as_bytes()); // 4 bytes: 2 inside the sample, 2 outside
    head.extend_from_slice(b"tail");
    assert_eq!(detect(Path::new("x.txt"), &head), FileKind::Text);
    // And a head that itself ends mid-char (a short read) is text too.
    let short = &"é".repeat(10).into_bytes()[..19];
    assert_eq!(detect(Path::new("x.txt"), short), FileKind::Text);
}

#[test]
fn control_heavy_sample_is_binary_but_whitespace_is_not() {
    let controls: Vec<u8> = (0..4096).map(|i| [1u8, 2, 3, b'a'][i % 4]).collect();
    assert!(detect(Path::new("x"), &controls).is_binary());
    let whitespace: Vec<u8> = (0..4096)
        .map(|i| [b'\t', b'\n', b'\r', b'a'][i % 4])
        .collect();
    assert_eq!(detect(Path::new("x"), &whitespace), FileKind::Text);
}

#[test]
fn known_extensions_word_binary_content_and_utf16_bom() {
    assert_eq!(detect(Path::new("a.ZIP"), b""), FileKind::Text);
    assert_eq!(
        binary_kind(&detect(Path::new("x.bmp"), b"BM\x01\x02\x00\x00abc")),
        "BMP image"
    );
    assert_eq!(detect(Path::new("empty.rs"), b""), FileKind::Text);
    assert_eq!(
        binary_kind(&detect(Path::new("w.txt"), b"\xff\xfeh\x00i\x00")),
        "UTF-16 text"
    );
    assert_eq!(
        detect(Path::new("bom.txt"), b"\xef\xbb\xbfhello"),
        FileKind::Text
    );
}

#[test]
fn detect_file_reads_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    fs::write(&path, b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\nrest").unwrap();
    assert_eq!(binary_kind(&detect_file(&path).unwrap()), "PDF document");
    assert!(detect_file(&dir.path().join("missing")).is_err());
}

#[test]
fn similar_names_finds_case_typo_and_prefix_matches() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "README.md",
        "main.rs",
        "lib.rs",
        "Cargo.toml",
        "config.rs",
        "unrelated.txt",
    ] {
        fs::write(dir.path().join(name), "").unwrap();
    }
    assert_eq!(similar_names(dir.path(), "readme.md", 3), vec!["README.md"]);
    assert_eq!(similar_names(dir.path(), "mian.rs", 3)[0], "main.rs");
    assert!(similar_names(dir.path(), "cargo", 3).contains(&"Cargo.toml".to_string()));
    assert!(similar_names(dir.path(), "zzzzzz.qq", 3).is_empty());
    assert!(similar_names(dir.path(), "lib.rs", 1).len() <= 1);
    assert!(similar_names(&dir.path().join("nope"), "x", 3).is_empty());
}

/// Issue 11.1: readable text was reported as "binary file ... PNG image" because of its name.
#[test]
fn binary_detection_by_extension_text_named_like_an_image_is_text() {
    for name in [
        "not-an-image.png",
        "x.bmp",
        "x.tiff",
        "x.avif",
        "x.zip",
        "x.wasm",
    ] {
        assert_eq!(
            detect(Path::new(name), b"just some notes\nsecond line\n"),
            FileKind::Text,
            "{name}"
        );
    }
}

/// Issue 11.1: a magic made of printable ASCII is not enough when text follows it.
#[test]
fn binary_detection_ascii_magic_followed_by_text_is_text() {
    for head in [
        &b"OTTO was here\n"[..],
        b"BZh, said the bee\n",
        b"GIF89a is a format name\n",
        b"ID3 tags explained\n",
        b"RIFF\x20\x20\x20\x20WAVE notes in text\n",
    ] {
        assert_eq!(detect(Path::new("x.txt"), head), FileKind::Text, "{head:?}");
    }
    // With binary behind it, the same magic names the kind.
    assert_eq!(
        binary_kind(&detect(
            Path::new("x"),
            b"GIF89a\x01\x00\x01\x00\x80\x00\x00"
        )),
        "GIF image"
    );
}

/// Issue 11.1: `\xff\xfe` then ASCII without NULs is not UTF-16.
#[test]
fn binary_detection_ff_fe_before_plain_ascii_is_not_utf16() {
    assert_eq!(
        detect(Path::new("x.txt"), b"\xff\xfehello world\n"),
        FileKind::Text
    );
    assert_eq!(
        binary_kind(&detect(Path::new("x.txt"), b"\xff\xfeh\x00i\x00")),
        "UTF-16 text"
    );
}

/// Issue 11.1: a short file with a few invalid bytes is text (shown with escapes), as a long
/// one with the same bytes is.
#[test]
fn binary_detection_short_file_with_a_few_invalid_bytes_is_text() {
    assert_eq!(detect(Path::new("x.txt"), b"\xe9t\xe9\n"), FileKind::Text);
    assert_eq!(detect(Path::new("x.txt"), b"a\xff\n"), FileKind::Text);
}
