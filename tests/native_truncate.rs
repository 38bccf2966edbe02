//! Truncation: table tests for the markers and edge cases, property tests for the invariants.

use fen::native::truncate::{
    clip_long_lines, count_lines, head, head_tail, tail, CutLine, Kept, LineRange, TruncatedBy,
};
use proptest::prelude::*;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn empty_text_has_no_lines_and_no_marker() {
    for t in [head("", 10, 10), tail("", 10, 10), head_tail("", 10, 10)] {
        assert_eq!(t.total_lines, 0);
        assert_eq!(t.text, "");
        assert_eq!(t.truncated_by, TruncatedBy::None);
        assert_eq!(t.marker(), None);
    }
}

#[test]
fn trailing_newline_does_not_add_a_line() {
    assert_eq!(count_lines("a\nb\n"), 2);
    assert_eq!(count_lines("a\nb"), 2);
    let t = head("a\nb\n", 2, 100);
    assert_eq!(t.truncated_by, TruncatedBy::None);
    assert_eq!(t.head_lines, Some(LineRange { first: 1, last: 2 }));
}

#[test]
fn head_by_lines_matches_the_documented_marker() {
    let text = numbered(8412);
    let t = head(&text, 2000, usize::MAX);
    assert_eq!(t.truncated_by, TruncatedBy::Lines);
    assert_eq!(t.next_offset, Some(2001));
    assert!(t.text.ends_with("line 2000\n"));
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: showing lines 1-2000 of 8412 (2000-line limit). Continue with offset=2001.]")
    );
}

#[test]
fn head_by_bytes_cuts_at_a_line_boundary() {
    let text = numbered(8412);
    let t = head(&text, 100_000, 50 * 1024);
    assert_eq!(t.truncated_by, TruncatedBy::Bytes);
    assert!(t.text.ends_with('\n'));
    assert!(t.kept_bytes <= 50 * 1024);
    let last = t.head_lines.map(|r| r.last).unwrap_or(0);
    assert_eq!(count_lines(&t.text), last);
    assert_eq!(
        t.marker(),
        Some(format!(
            "[fen: showing lines 1-{last} of 8412 (50.0KB limit). Continue with offset={}.]",
            last + 1
        ))
    );
    // Continuing from the offset picks up exactly where the head stopped.
    let rest = &text[t.kept_bytes..];
    let next = head(rest, 100_000, 50 * 1024).offset_by(last);
    assert_eq!(next.head_lines.map(|r| r.first), Some(last + 1));
    assert_eq!(next.total_lines, 8412);
}

#[test]
fn head_cuts_a_huge_first_line_at_a_char_boundary() {
    let text = format!("{}\nsecond\n", "é".repeat(100)); // 201 bytes + newline
    let t = head(&text, 10, 11);
    assert_eq!(t.text, "ééééé"); // 10 bytes: the 11th would split a character
    assert_eq!(
        t.head_cut,
        Some(CutLine {
            line: 1,
            line_bytes: 201,
            kept_bytes: 10
        })
    );
    assert_eq!(t.next_offset, Some(2));
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: line 1 of 2 is 201B; showing its first 10B (11B limit). Continue with offset=2.]")
    );
}

#[test]
fn head_stops_before_a_huge_later_line() {
    let text = format!("short\n{}\n", "x".repeat(1000));
    let t = head(&text, 10, 100);
    assert_eq!(t.text, "short\n");
    assert_eq!(t.head_cut, None);
    assert_eq!(t.next_offset, Some(2));
}

#[test]
fn head_of_single_line_has_no_continue() {
    let text = "y".repeat(3000);
    let t = head(&text, 10, 1024);
    assert_eq!(t.next_offset, None);
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: line 1 of 1 is 2.9KB; showing its first 1.0KB (1.0KB limit).]")
    );
}

#[test]
fn tail_matches_the_documented_marker() {
    let text = numbered(2000);
    let t = tail(&text, 500, usize::MAX);
    assert!(t.text.starts_with("line 1501\n"));
    assert_eq!(
        t.tail_lines,
        Some(LineRange {
            first: 1501,
            last: 2000
        })
    );
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: showing last 500 lines (1501-2000) of 2000; 1500 lines omitted (500-line limit)]")
    );
}

#[test]
fn tail_of_a_huge_last_line_keeps_its_end() {
    let text = format!("first\n{}中", "a".repeat(100));
    let t = tail(&text, 10, 5); // "中" is 3 bytes; 5 bytes = "aa中"
    assert_eq!(t.text, "aa中");
    assert_eq!(
        t.tail_cut.map(|c| (c.line, c.line_bytes, c.kept_bytes)),
        Some((2, 103, 5))
    );
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: line 2 of 2 is 103B; showing its last 5B; 1 line omitted (5B limit)]")
    );
    // Never starts inside a character.
    let t = tail(&text, 10, 2);
    assert_eq!(t.text, "");
}

#[test]
fn head_tail_keeps_both_ends() {
    let text = numbered(1434);
    let t = head_tail(&text, 200, usize::MAX);
    assert_eq!(t.kept, Kept::HeadTail);
    assert_eq!(
        t.head_lines,
        Some(LineRange {
            first: 1,
            last: 100
        })
    );
    assert_eq!(
        t.tail_lines,
        Some(LineRange {
            first: 1335,
            last: 1434
        })
    );
    assert_eq!(t.omitted_lines(), 1234);
    let omitted: usize = (101..=1334).map(|i| format!("line {i}\n").len()).sum();
    assert_eq!(t.omitted_bytes(), omitted);
    assert_eq!(
        t.marker(),
        Some(format!(
            "[fen: ... 1234 lines ({:.1}KB) omitted; showing lines 1-100 and 1335-1434 of 1434 (200-line limit) ...]",
            omitted as f64 / 1024.0
        ))
    );
    let rendered = t.render();
    assert!(rendered.contains("line 100\n[fen: ... 1234 lines"));
    assert!(rendered.contains("...]\nline 1335\n"));
}

#[test]
fn head_tail_of_one_huge_line_keeps_both_ends_of_it() {
    let text = format!("{}{}", "a".repeat(5000), "z".repeat(5000));
    let t = head_tail(&text, 100, 1000);
    assert_eq!(t.text, format!("{}{}", "a".repeat(500), "z".repeat(500)));
    assert_eq!(t.omitted_lines(), 0);
    assert_eq!(
        t.marker().as_deref(),
        Some("[fen: ... 0 lines (8.8KB) omitted; showing lines 1 (first 500B of 9.8KB) and 1 (last 500B of 9.8KB) of 1 (1000B limit) ...]")
    );
}

#[test]
fn render_places_markers() {
    let text = numbered(10);
    let h = head(&text, 2, 1000).render();
    assert!(h.starts_with("line 1\nline 2\n[fen: showing lines 1-2 of 10"));
    let t = tail(&text, 2, 1000).render();
    assert!(t.starts_with("[fen: showing last 2 lines (9-10) of 10"));
    assert!(t.ends_with("omitted (2-line limit)]\nline 9\nline 10\n"));
    assert_eq!(head(&text, 100, 1000).render(), text);
}

#[test]
fn clip_long_lines_clips_on_char_boundaries() {
    let text = format!("short\n{}\r\nnext\n{}", "é".repeat(10), "x".repeat(7));
    let (out, clipped) = clip_long_lines(&text, 5);
    assert_eq!(clipped, 2);
    assert_eq!(
        out,
        "short\nééééé ... [line clipped: 10 chars]\r\nnext\nxxxxx ... [line clipped: 7 chars]"
    );
    let (same, none) = clip_long_lines("abc\ndef\n", 3);
    assert_eq!((same.as_str(), none), ("abc\ndef\n", 0));
}

/// Text with short and long lines, multibyte characters, CRLF and empty lines.
fn texty() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => "[a-z é中😀]{0,12}",
        1 => "[a-zé]{30,120}",
        1 => Just(String::new()),
        1 => "[a-z]{0,5}\r",
    ];
    (prop::collection::vec(line, 0..30), any::<bool>()).prop_map(|(lines, trailing)| {
        let mut s = lines.join("\n");
        if trailing && !s.is_empty() {
            s.push('\n');
        }
        s
    })
}

/// Whether byte `at` is a line boundary (start, end, or just after a newline).
fn starts_line(text: &str, at: usize) -> bool {
    at == 0 || at == text.len() || text.as_bytes()[at - 1] == b'\n'
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn head_invariants(text in texty(), max_lines in 0usize..40, max_bytes in 0usize..600) {
        let t = head(&text, max_lines, max_bytes);
        prop_assert!(text.starts_with(&*t.text));
        prop_assert!(t.kept_bytes <= max_bytes);
        let kept_lines = count_lines(&t.text);
        prop_assert!(kept_lines <= max_lines);
        prop_assert_eq!(t.head_lines.map_or(0, |r| r.last), kept_lines);
        prop_assert_eq!(t.total_lines, count_lines(&text));
        if t.head_cut.is_none() {
            prop_assert!(starts_line(&text, t.kept_bytes), "cut mid-line without need");
        } else {
            prop_assert_eq!(kept_lines, 1);
            prop_assert!(!t.text.contains('\n'));
        }
        match t.truncated_by {
            TruncatedBy::None => {
                prop_assert_eq!(&*t.text, &*text);
                prop_assert_eq!(t.marker(), None);
            }
            _ => {
                prop_assert!(t.kept_bytes < text.len());
                let marker = t.marker().unwrap_or_default();
                prop_assert!(marker.contains(&format!(" of {}", t.total_lines)), "{}", marker);
                let expect_next = kept_lines + 1;
                prop_assert_eq!(t.next_offset, (expect_next <= t.total_lines).then_some(expect_next));
                if let Some(n) = t.next_offset {
                    let suffix = format!("Continue with offset={n}.]");
                    prop_assert!(marker.ends_with(&suffix));
                }
            }
        }
    }

    #[test]
    fn tail_invariants(text in texty(), max_lines in 0usize..40, max_bytes in 0usize..600) {
        let t = tail(&text, max_lines, max_bytes);
        prop_assert!(text.ends_with(&*t.text));
        prop_assert!(t.kept_bytes <= max_bytes);
        let start = text.len() - t.kept_bytes;
        let kept_lines = count_lines(&t.text);
        prop_assert!(kept_lines <= max_lines);
        prop_assert_eq!(t.tail_lines.map_or(0, |r| r.len()), kept_lines);
        if t.tail_cut.is_none() {
            prop_assert!(starts_line(&text, start), "cut mid-line without need");
        }
        if t.truncated_by == TruncatedBy::None {
            prop_assert_eq!(&*t.text, &*text);
        } else {
            let marker = t.marker().unwrap_or_default();
            let omitted = format!("; {} line", t.total_lines - kept_lines);
            prop_assert!(marker.contains(&omitted), "{}", marker);
        }
    }

    #[test]
    fn head_tail_invariants(text in texty(), max_lines in 0usize..40, max_bytes in 0usize..600) {
        let t = head_tail(&text, max_lines, max_bytes);
        prop_assert!(t.kept_bytes <= max_bytes || t.truncated_by == TruncatedBy::None);
        if t.truncated_by == TruncatedBy::None {
            prop_assert_eq!(&*t.text, &*text);
            return Ok(());
        }
        prop_assert!(t.kept_bytes <= max_bytes);
        let at = t.omitted_at.unwrap_or(0);
        let (h, tl) = t.text.split_at(at);
        prop_assert!(text.starts_with(h));
        prop_assert!(text.ends_with(tl));
        prop_assert!(h.len() + tl.len() < text.len(), "nothing omitted");
        prop_assert!(count_lines(h) + count_lines(tl) <= max_lines);
        if t.head_cut.is_none() {
            prop_assert!(starts_line(&text, h.len()));
        }
        if t.tail_cut.is_none() {
            prop_assert!(starts_line(&text, text.len() - tl.len()));
        }
        prop_assert_eq!(t.omitted_bytes(), text.len() - h.len() - tl.len());
        let marker = t.marker().unwrap_or_default();
        let omitted = format!("... {} line", t.omitted_lines());
        prop_assert!(marker.starts_with("[fen: ") && marker.contains(&omitted), "{}", marker);
    }

    #[test]
    fn clip_bounds_every_line(text in texty(), max in 1usize..40) {
        let (out, clipped) = clip_long_lines(&text, max);
        let long = text
            .split('\n')
            .filter(|l| l.trim_end_matches('\r').chars().count() > max)
            .count();
        prop_assert_eq!(clipped, long);
        if clipped == 0 {
            prop_assert_eq!(&out, &text);
        }
        for line in out.split('\n') {
            let body = line.trim_end_matches('\r');
            let body = body.split(" ... [line clipped: ").next().unwrap_or(body);
            prop_assert!(body.chars().count() <= max);
        }
    }
}

/// The Lua `util.number_lines` the read tool used before numbering moved to native code.
const LUA_NUMBER_LINES: &str = r#"
return function(text, first)
  local out, n = {}, first
  if text:sub(-1) ~= "\n" then text = text .. "\n" end
  for line in text:gmatch("(.-)\n") do
    out[#out + 1] = string.format("%6d\t%s", n, (line:gsub("\r$", "")))
    n = n + 1
  end
  return table.concat(out, "\n")
end
"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// `native.truncate.number_lines` numbers exactly as the Lua it replaced.
    #[test]
    fn number_lines_matches_the_lua_it_replaced(
        text in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), Just(b'\t'), Just(0xffu8), Just(0u8)],
            0..60,
        ),
        first in -2_000_000i64..2_000_000,
    ) {
        let lua = mlua::Lua::new();
        let f: mlua::Function = lua.load(LUA_NUMBER_LINES).eval().unwrap();
        let expected: mlua::LuaString = f.call((lua.create_string(&text).unwrap(), first)).unwrap();
        let got = fen::native::truncate::number_lines(&text, first);
        prop_assert_eq!(got, expected.as_bytes().to_vec());
    }
}
