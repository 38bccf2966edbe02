//! Sanitizer: table tests for the named cases and property tests for the invariants.

use fen::native::sanitize::{
    default_max_bytes, sanitize, sanitize_str, DEFAULT_MAX_BYTES, MAX_BYTES_ENV, TRUNCATED_FALLBACK,
};
use proptest::prelude::*;

/// Independent reference: escape every input byte the sanitizer must escape, no cap.
fn reference_body(input: &[u8]) -> (String, usize) {
    let mut out = String::new();
    let mut escaped = 0;
    let esc = |out: &mut String, bytes: &[u8]| {
        for b in bytes {
            out.push_str(&format!("\\x{b:02x}"));
        }
        bytes.len()
    };
    for chunk in input.utf8_chunks() {
        for c in chunk.valid().chars() {
            let code = c as u32;
            let control =
                (code < 0x20 && !matches!(c, '\t' | '\n' | '\r')) || (0x7f..=0x9f).contains(&code);
            if control {
                let mut buf = [0u8; 4];
                escaped += esc(&mut out, c.encode_utf8(&mut buf).as_bytes());
            } else {
                out.push(c);
            }
        }
        escaped += esc(&mut out, chunk.invalid());
    }
    (out, escaped)
}

fn run(input: &[u8], max: usize) -> String {
    sanitize(input, max).text.into_owned()
}

#[test]
fn nul_is_escaped() {
    assert_eq!(
        run(b"a\0b\n", 1000),
        "a\\x00b\n[fen: output sanitized: 1 byte escaped]"
    );
}

#[test]
fn ff_is_escaped() {
    assert_eq!(
        run(b"\xff\xfe", 1000),
        "\\xff\\xfe\n[fen: output sanitized: 2 bytes escaped]"
    );
}

#[test]
fn encoded_surrogate_is_escaped_bytewise() {
    let out = sanitize(b"x\xed\xa0\x80y", 1000);
    assert_eq!(
        out.text,
        "x\\xed\\xa0\\x80y\n[fen: output sanitized: 3 bytes escaped]"
    );
    assert_eq!(out.report.escaped, 3);
}

#[test]
fn tab_cr_lf_are_kept() {
    let input = "a\tb\r\nc\n";
    let out = sanitize_str(input, 1000);
    assert_eq!(out.text, input);
    assert!(!out.report.changed());
}

#[test]
fn esc_del_and_c1_are_escaped() {
    let out = sanitize("\x1b[31mred\x7f\u{85}".as_bytes(), 1000);
    assert_eq!(
        out.text,
        "\\x1b[31mred\\x7f\\xc2\\x85\n[fen: output sanitized: 4 bytes escaped]"
    );
}

#[test]
fn backslash_is_not_escaped_and_escapes_are_stable() {
    let once = run(b"path\\x00 \0", 1000);
    assert_eq!(
        once,
        "path\\x00 \\x00\n[fen: output sanitized: 1 byte escaped]"
    );
    assert_eq!(run(once.as_bytes(), 1000), once);
}

#[test]
fn truncation_marker_counts_original_bytes() {
    let input = "a".repeat(1000);
    let out = sanitize(input.as_bytes(), 100);
    let marker = format!(
        "[fen: output truncated: {} of 1000 bytes kept]",
        out.report.kept_bytes
    );
    assert!(out.text.ends_with(&marker), "{}", out.text);
    assert!(out.text.len() <= 100);
    assert!(out.report.truncated);
    assert_eq!(out.text.len(), out.report.kept_bytes + 1 + marker.len());
}

#[test]
fn both_markers_when_escaped_and_truncated() {
    let mut input = b"\0".to_vec();
    input.extend(std::iter::repeat_n(b'z', 5000));
    let out = sanitize(&input, 200);
    let t = &out.text;
    assert!(t.starts_with("\\x00zzz"));
    assert!(t.contains("\n[fen: output sanitized: 1 byte escaped]\n[fen: output truncated: "));
    assert!(t.len() <= 200);
}

#[test]
fn multibyte_at_the_cap_boundary_is_not_split() {
    // 'é' is 2 bytes; place one straddling every possible cut point.
    for max in 50..120 {
        let input = format!("{}é{}", "a".repeat(max - 46), "b".repeat(500));
        let out = sanitize(input.as_bytes(), max);
        assert!(out.text.len() <= max);
        let body = out.text.split("\n[fen:").next().unwrap_or_default();
        assert!(input.starts_with(body), "max {max}: {body:?}");
    }
}

#[test]
fn escape_is_never_split_at_the_cap() {
    for max in 60..80 {
        let out = sanitize(&[0u8; 100], max);
        let body = out.text.split("[fen:").next().unwrap_or_default();
        assert_eq!(body.len() % 4, 0, "max {max}: {body:?}");
        assert!(out.text.len() <= max);
    }
}

#[test]
fn cap_smaller_than_marker() {
    let input = vec![b'q'; 10_000];
    // Room for the bare numbered truncation line only.
    let out = sanitize(&input, 50);
    assert_eq!(out.text, "[fen: output truncated: 0 of 10000 bytes kept]");
    // Room for the fallback marker but not for a numbered one.
    let out = sanitize(&input, 30);
    assert_eq!(out.text, TRUNCATED_FALLBACK);
    assert_eq!(out.report.kept_bytes, 0);
    // Not even the fallback fits: empty.
    let out = sanitize(&input, 10);
    assert_eq!(out.text, "");
    assert!(out.report.truncated);
    // Zero cap: empty.
    assert_eq!(sanitize(b"x", 0).text, "");
}

#[test]
fn empty_input_is_empty() {
    let out = sanitize(b"", 0);
    assert_eq!(out.text, "");
    assert!(!out.report.changed());
}

#[test]
fn default_max_bytes_reads_env() {
    // One test owns the variable to avoid races between tests.
    std::env::set_var(MAX_BYTES_ENV, "1234");
    assert_eq!(default_max_bytes(), 1234);
    std::env::set_var(MAX_BYTES_ENV, "lots");
    assert_eq!(default_max_bytes(), DEFAULT_MAX_BYTES);
    std::env::set_var(MAX_BYTES_ENV, "0");
    assert_eq!(default_max_bytes(), DEFAULT_MAX_BYTES);
    std::env::remove_var(MAX_BYTES_ENV);
    assert_eq!(default_max_bytes(), 65536);
}

/// Bytes biased towards the interesting classes: controls, invalid bytes, multibyte, ASCII.
fn nasty_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[a-z \\\\]{1,8}".prop_map(String::into_bytes),
        2 => any::<String>().prop_map(String::into_bytes),
        2 => prop::collection::vec(any::<u8>(), 1..6),
        1 => Just(b"\xed\xa0\x80".to_vec()),
        1 => Just("\u{85}é中😀".as_bytes().to_vec()),
        1 => prop::sample::select(vec![0u8, 9, 10, 13, 0x1b, 0x7f, 0xff, 0xc2]).prop_map(|b| vec![b]),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn output_is_valid_bounded_and_idempotent(input in nasty_bytes(), max in 0usize..400) {
        let out = sanitize(&input, max);
        prop_assert!(out.text.len() <= max);
        // `text` is a `str`, so it is valid UTF-8 by construction; check there is nothing
        // left that a second pass would escape.
        let again = sanitize(out.text.as_bytes(), max);
        prop_assert_eq!(&again.text, &out.text);
        prop_assert!(!again.report.changed());
        prop_assert!(out.report.kept_bytes <= input.len());
        prop_assert_eq!(out.report.original_bytes, input.len());
    }

    #[test]
    fn untruncated_output_matches_reference(input in nasty_bytes()) {
        let out = sanitize(&input, usize::MAX);
        let (body, escaped) = reference_body(&input);
        prop_assert!(!out.report.truncated);
        prop_assert_eq!(out.report.escaped, escaped);
        if escaped == 0 {
            prop_assert_eq!(&*out.text, &*body);
        } else {
            let sep = if body.is_empty() || body.ends_with('\n') { "" } else { "\n" };
            let unit = if escaped == 1 { "byte" } else { "bytes" };
            let expected = format!("{body}{sep}[fen: output sanitized: {escaped} {unit} escaped]");
            prop_assert_eq!(&*out.text, &*expected);
        }
    }

    #[test]
    fn truncated_body_is_prefix_of_reference(input in nasty_bytes(), max in 0usize..400) {
        let out = sanitize(&input, max);
        let (full, _) = reference_body(&input);
        let body = match out.text.find("[fen: output ") {
            Some(i) => out.text[..i].strip_suffix('\n').unwrap_or(&out.text[..i]),
            None => &out.text,
        };
        // The reference may itself end with a newline that the marker separator reuses.
        prop_assert!(full.starts_with(body), "{:?} not a prefix of {:?}", body, full);
        if out.report.truncated && out.text != TRUNCATED_FALLBACK && !out.text.is_empty() {
            let marker = format!(
                "[fen: output truncated: {} of {} bytes kept]",
                out.report.kept_bytes,
                input.len()
            );
            prop_assert!(out.text.ends_with(&marker));
        }
    }

    #[test]
    fn clean_input_under_cap_is_unchanged(text in "[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\u{9f}]{0,200}") {
        let out = sanitize_str(&text, 1000);
        prop_assert_eq!(&*out.text, &*text);
        prop_assert!(!out.report.changed());
    }
}
