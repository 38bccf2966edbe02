//! The built-in read, write, edit and ls tools, driven through the real `fen tool` binary in a
//! sandbox (and, for the strict session rules, through the library's tool pipeline), plus the
//! pipeline itself: registration, argument validation, exit codes, Lua errors, the sanitizer.

use crate::common;
use crate::tools_support;

use common::Sandbox;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use tools_support::*;

// ---------------------------------------------------------------- registration and pipeline

#[test]
fn every_builtin_tool_is_registered_with_schema_risk_and_concurrency() {
    let sb = Sandbox::new();
    let rows = sb.fen_json(&["list", "tools", "--json"]);
    let expected = [
        (
            "read",
            "read",
            "parallel_safe",
            &["2000", "50 KB", "paths", "offset"][..],
        ),
        (
            "write",
            "write",
            "exclusive",
            &["Atomic", "parent", "read it first"][..],
        ),
        (
            "edit",
            "write",
            "exclusive",
            &["edits", "files", "old_string", "no file changes"][..],
        ),
        (
            "ls",
            "read",
            "parallel_safe",
            &["500", "/", "@", ".git"][..],
        ),
        (
            "grep",
            "read",
            "parallel_safe",
            &["100", ".gitignore", "output_mode", "no_ignore"][..],
        ),
        (
            "find",
            "read",
            "parallel_safe",
            &["1000", "most recently modified", "follow_symlinks"][..],
        ),
        (
            "bash",
            "shell",
            "exclusive",
            &["120", "600", "[exit N]", "saved to a file"][..],
        ),
    ];
    for (name, risk, concurrency, words) in expected {
        let found = common::find(&rows, "name", name);
        assert_eq!(found.len(), 1, "{name} registered once: {rows}");
        let t = found[0];
        assert_eq!(t["owner"], "builtin-tools", "{t}");
        assert_eq!(t["risk"], risk, "{name}");
        assert_eq!(t["concurrency"], concurrency, "{name}");
        assert_eq!(t["parameters"]["type"], "object", "{name}");
        assert!(t["parameters"]["properties"].is_object(), "{name}: {t}");
        let desc = t["description"].as_str().unwrap();
        assert!(
            desc.len() > 80 && desc.len() < 1600,
            "{name}: description length {}",
            desc.len()
        );
        for w in words {
            assert!(
                desc.contains(w),
                "{name}: description should state {w:?}: {desc}"
            );
        }
    }
}

#[test]
fn unknown_tool_exits_2_with_a_suggestion() {
    let sb = Sandbox::new();
    let run = tool_raw(&sb, "raed", r#"{"path":"x"}"#);
    assert_eq!(run.code, 2);
    let v = run.json();
    assert_eq!(v["is_error"], true);
    let t = text(&v);
    assert!(
        t.contains("unknown tool: raed") && t.contains("did you mean read"),
        "{t}"
    );
    assert!(run.stderr.contains("did you mean read"), "{}", run.stderr);
}

#[test]
fn non_json_arguments_exit_2() {
    let sb = Sandbox::new();
    for bad in ["{path: x}", "not json", r#"{"path":"a""#] {
        let run = tool_raw(&sb, "read", bad);
        assert_eq!(run.code, 2, "{bad}: {}", run.stderr);
        assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    }
}

#[test]
fn schema_invalid_arguments_exit_2_naming_the_field() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "a\n");
    let cases = [
        ("read", r#"{"path": 3}"#, "path"),
        ("read", r#"{"path": "a.txt", "offset": 0}"#, "offset"),
        ("read", r#"[1, 2]"#, "JSON object"),
        ("write", r#"{"path": "a.txt"}"#, "content"),
        ("bash", r#"{"command": "true", "timeout": 601}"#, "timeout"),
        (
            "grep",
            r#"{"pattern": "a", "output_mode": "lines"}"#,
            "output_mode",
        ),
        ("ls", r#"{"depth": "2"}"#, "depth"),
    ];
    for (name, args, field) in cases {
        let run = tool_raw(&sb, name, args);
        assert_eq!(run.code, 2, "{name} {args}: {}", run.stderr);
        let v = run.json();
        assert_eq!(v["is_error"], true);
        let t = text(&v);
        assert!(
            t.contains("invalid arguments for") && t.contains(field),
            "{name} {args}: {t}"
        );
    }
    assert_eq!(get(&sb, "a.txt"), b"a\n", "nothing ran");
}

#[test]
fn a_lua_error_inside_a_tool_becomes_an_error_result() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.user_extensions().join("broken.lua"),
        r#"return function(api)
  api.register("tool", {
    name = "broken", description = "always raises", risk = "read", concurrency = "parallel_safe",
    parameters = { type = "object", properties = { n = { type = "integer" } } },
    execute = function(args) local t = nil; return t.field .. args.n end,
  })
  api.register("tool", {
    name = "thrower", description = "raises a message", risk = "read", concurrency = "parallel_safe",
    parameters = { type = "object", properties = {} },
    execute = function() error("boom: the disk is on fire") end,
  })
end
"#,
    )
    .unwrap();
    let v = tool(&sb, "broken", &json!({"n": 1}));
    assert_eq!(v["is_error"], true, "{v}");
    let t = text(&v);
    assert!(
        t.contains("tool broken failed") && t.contains("attempt to index a nil value"),
        "{t}"
    );
    let v = tool(&sb, "thrower", &json!({}));
    assert_eq!(v["is_error"], true, "{v}");
    assert!(text(&v).contains("boom: the disk is on fire"), "{v}");
    // The built-in tools still work next to the broken ones.
    put(&sb, "ok.txt", "fine\n");
    assert!(ok(&sb, "read", json!({"path": "ok.txt"}))
        .0
        .contains("fine"));
}

#[test]
fn the_sanitizer_caps_every_result_at_fen_tool_result_max_bytes() {
    let sb = Sandbox::new();
    let body: String = (1..=500)
        .map(|i| format!("line {i:04} of the capped file\n"))
        .collect();
    put(&sb, "big.txt", &body);
    let run = tool_env(
        &sb,
        "read",
        &json!({"path": "big.txt"}),
        &[("FEN_TOOL_RESULT_MAX_BYTES", "1000")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let t = text(&v);
    assert!(t.len() <= 1000, "{} bytes", t.len());
    assert!(
        t.contains("[fen: output truncated:") && t.contains("bytes kept]"),
        "{t}"
    );
    assert!(t.starts_with("     1\tline 0001"), "{t}");
    // Without the override the whole window fits.
    let (t, _) = ok(&sb, "read", json!({"path": "big.txt"}));
    assert!(
        t.contains("line 0500") && !t.contains("output truncated"),
        "{}",
        &t[t.len() - 200..]
    );
}

// ---------------------------------------------------------------- read

#[test]
fn read_numbers_lines_windows_and_hints_how_to_continue() {
    let sb = Sandbox::new();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    put(&sb, "ten.txt", &body);
    let (t, d) = ok(&sb, "read", json!({"path": "ten.txt"}));
    assert_eq!(body_lines(&t).len(), 10);
    assert!(t.starts_with("     1\tline 1\n     2\tline 2\n"), "{t}");
    assert!(!t.contains("Continue"), "{t}");
    assert_eq!(
        (d["total_lines"].as_u64(), d["truncated"].as_bool()),
        (Some(10), Some(false))
    );

    let (t, d) = ok(
        &sb,
        "read",
        json!({"path": "ten.txt", "offset": 4, "limit": 3}),
    );
    assert_eq!(
        body_lines(&t),
        ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    );
    assert!(
        t.contains("[fen: showing lines 4-6 of 10. Continue with offset=7.]"),
        "{t}"
    );
    assert_eq!(d["next_offset"], 7);
    let (t, _) = ok(&sb, "read", json!({"path": "ten.txt", "offset": 7}));
    assert_eq!(body_lines(&t).first(), Some(&"     7\tline 7"));
    assert!(
        t.contains("    10\tline 10") && !t.contains("Continue"),
        "{t}"
    );

    let e = fails(&sb, "read", json!({"path": "ten.txt", "offset": 11}));
    assert!(
        e.contains("past the end") && e.contains("between 1 and 10"),
        "{e}"
    );
}

#[test]
fn read_shows_at_most_2000_lines_by_default() {
    let sb = Sandbox::new();
    let body: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    put(&sb, "many.txt", &body);
    let (t, d) = ok(&sb, "read", json!({"path": "many.txt"}));
    assert_eq!(body_lines(&t).len(), 2000);
    assert!(
        t.contains("  2000\t2000\n[fen: showing lines 1-2000 of 2500. Continue with offset=2001.]"),
        "{}",
        &t[t.len() - 200..]
    );
    assert_eq!(d["truncated"], true);
    let (t, _) = ok(&sb, "read", json!({"path": "many.txt", "offset": 2001}));
    assert_eq!(body_lines(&t).len(), 500);
    assert!(t.starts_with("  2001\t2001"), "{t}");
}

#[test]
fn read_stops_at_50_kb_on_a_line_boundary() {
    let sb = Sandbox::new();
    let line = "x".repeat(199);
    let body: String = (0..1000).map(|_| format!("{line}\n")).collect();
    put(&sb, "wide.txt", &body);
    let (t, d) = ok(&sb, "read", json!({"path": "wide.txt"}));
    let shown = body_lines(&t);
    assert!(
        shown.len() > 200 && shown.len() < 260,
        "{} lines",
        shown.len()
    );
    assert!(
        shown.iter().all(|l| l.ends_with(&line)),
        "every shown line is whole"
    );
    let body_bytes: usize = shown.iter().map(|l| l.len() + 1).sum();
    assert!(body_bytes <= 50 * 1024, "{body_bytes} bytes shown");
    let next = shown.len() + 1;
    let hint = format!("(50 KB limit). Continue with offset={next}.]");
    assert!(t.contains(&hint), "{}", &t[t.len() - 200..]);
    assert_eq!(d["next_offset"], next);
}

#[test]
fn read_reports_empty_files_directories_and_binaries() {
    let sb = Sandbox::new();
    put(&sb, "empty.txt", "");
    let (t, d) = ok(&sb, "read", json!({"path": "empty.txt"}));
    assert_eq!(t, "(empty file: empty.txt, 0 bytes)");
    assert_eq!(d["total_lines"], 0);

    put(&sb, "dir/b.txt", "b");
    put(&sb, "dir/sub/c.txt", "c");
    let (t, d) = ok(&sb, "read", json!({"path": "dir"}));
    assert_eq!(t, "dir is a directory; its entries:\nb.txt\nsub/");
    assert_eq!(d["kind"], "directory");

    put(
        &sb,
        "img.png",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0",
    );
    let (t, d) = ok(&sb, "read", json!({"path": "img.png"}));
    assert!(t.starts_with("binary file, 29 bytes, "), "{t}");
    assert!(t.to_lowercase().contains("png"), "{t}");
    assert_eq!(
        (d["kind"].as_str(), d["bytes"].as_u64()),
        (Some("binary"), Some(29))
    );

    put(&sb, "data.bin", b"abc\0def\0\x01\x02");
    let (t, _) = ok(&sb, "read", json!({"path": "data.bin"}));
    assert!(t.starts_with("binary file, 10 bytes, "), "{t}");
    assert!(!t.contains("abc"), "{t}");
}

#[test]
fn read_of_a_missing_file_suggests_up_to_three_similar_names() {
    let sb = Sandbox::new();
    for name in [
        "config.toml",
        "config.yaml",
        "config.json",
        "confi.txt",
        "unrelated.md",
    ] {
        put(&sb, name, "x");
    }
    put(&sb, "src/main.rs", "fn main() {}");
    let e = fails(&sb, "read", json!({"path": "confg.toml"}));
    assert!(
        e.starts_with("error: file not found: confg.toml (did you mean: config.toml"),
        "{e}"
    );
    let list = e
        .split("did you mean: ")
        .nth(1)
        .unwrap()
        .trim_end_matches("?)");
    assert!(list.split(", ").count() <= 3, "{e}");
    assert!(!e.contains("unrelated"), "{e}");
    // In a subdirectory too.
    let e = fails(&sb, "read", json!({"path": "src/mian.rs"}));
    assert!(e.contains("did you mean: src/main.rs?)"), "{e}");
    // Nothing alike: no suggestion, still a clear message.
    let e = fails(&sb, "read", json!({"path": "zzzzzz"}));
    assert_eq!(e, "error: file not found: zzzzzz");
}

#[test]
fn read_resolves_relative_paths_against_the_cwd_and_expands_tilde() {
    let sb = Sandbox::new();
    put(&sb, "sub/dir/rel.txt", "relative\n");
    let (t, _) = ok(&sb, "read", json!({"path": "sub/dir/rel.txt"}));
    assert!(t.contains("relative"), "{t}");
    let (t, _) = ok(&sb, "read", json!({"path": "./sub/../sub/dir/rel.txt"}));
    assert!(t.contains("relative"), "{t}");
    // HOME is the sandbox root, outside the working directory.
    std::fs::write(sb.root().join("notes.txt"), "in home\n").unwrap();
    let (t, _) = ok(&sb, "read", json!({"path": "~/notes.txt"}));
    assert!(t.contains("in home"), "{t}");
    let (t, _) = ok(&sb, "ls", json!({"path": "~"}));
    assert!(
        t.lines().any(|l| l == "notes.txt") && t.lines().any(|l| l == "work/"),
        "{t}"
    );
}

#[test]
fn read_takes_several_paths_as_strings_or_windows() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "alpha\n");
    put(&sb, "b.txt", "b1\nb2\nb3\n");
    let v = tool(
        &sb,
        "read",
        &json!({"paths": ["a.txt", {"path": "b.txt", "offset": 2, "limit": 1}, "missing.txt"]}),
    );
    assert_eq!(
        v["is_error"], false,
        "one failing file does not fail the batch: {v}"
    );
    let blocks = v["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 3, "one block per file: {v}");
    assert_eq!(blocks[0]["text"], "==> a.txt <==\n     1\talpha");
    assert_eq!(
        blocks[1]["text"],
        "==> b.txt <==\n     2\tb2\n[fen: showing lines 2-2 of 3. Continue with offset=3.]"
    );
    assert_eq!(
        blocks[2]["text"],
        "==> missing.txt <==\nerror: file not found: missing.txt"
    );
    assert_eq!(v["details"]["failed"], 1);
    assert_eq!(v["details"]["files"][2]["error"], true);

    let v = tool(&sb, "read", &json!({"paths": ["nope1", "nope2"]}));
    assert_eq!(v["is_error"], true, "all failing is an error: {v}");
    let e = fails(&sb, "read", json!({"path": "a.txt", "paths": ["b.txt"]}));
    assert!(e.contains("either path or paths"), "{e}");
    let e = fails(&sb, "read", json!({"paths": []}));
    assert!(e.contains("paths is empty"), "{e}");
    let e = fails(&sb, "read", json!({}));
    assert!(e.contains("needs a path"), "{e}");
}

#[test]
fn read_of_several_big_files_keeps_each_file_under_the_result_cap() {
    let sb = Sandbox::new();
    let body: String = (1..=3000)
        .map(|i| format!("{i:05} {}\n", "y".repeat(40)))
        .collect();
    for name in ["one.txt", "two.txt", "three.txt"] {
        put(&sb, name, &body);
    }
    let v = tool(
        &sb,
        "read",
        &json!({"paths": ["one.txt", "two.txt", "three.txt"]}),
    );
    let t = text(&v);
    assert!(!t.contains("output truncated"), "the sanitizer had to cut");
    for name in ["one.txt", "two.txt", "three.txt"] {
        assert!(t.contains(&format!("==> {name} <==")), "{name} missing");
    }
    assert_eq!(
        t.matches("Continue with offset=").count(),
        3,
        "each file has its hint"
    );
}

#[test]
fn read_shows_crlf_and_bom_files_sanely() {
    let sb = Sandbox::new();
    put(&sb, "crlf.txt", "first\r\nsecond\r\n");
    let (t, d) = ok(&sb, "read", json!({"path": "crlf.txt"}));
    assert!(t.starts_with("     1\tfirst\n     2\tsecond\n"), "{t:?}");
    assert!(!t.contains('\r'), "{t:?}");
    assert!(t.contains("CRLF line endings"), "{t}");
    assert_eq!(d["crlf"], true);

    put(&sb, "bom.txt", "\u{feff}hello\nworld\n");
    let (t, d) = ok(&sb, "read", json!({"path": "bom.txt"}));
    assert_eq!(t, "     1\thello\n     2\tworld");
    assert_eq!(d["bom"], true);
    assert_eq!(d["total_lines"], 2);
}

#[test]
fn read_clips_a_1_mb_line_and_says_how_to_slice_it() {
    let sb = Sandbox::new();
    let long = "q".repeat(1024 * 1024);
    put(&sb, "long.txt", format!("short\n{long}\nafter\n"));
    let (t, d) = ok(&sb, "read", json!({"path": "long.txt"}));
    assert!(t.len() < 10_000, "{} bytes shown", t.len());
    assert!(
        t.contains("     1\tshort\n") && t.contains("     3\tafter"),
        "{}",
        &t[..100]
    );
    assert!(
        t.contains("[line clipped: 1048576 chars]"),
        "{}",
        &t[t.len() - 400..]
    );
    assert!(
        t.contains("sed -n '2p' long.txt | cut -c 2001-"),
        "the hint names the clipped line: {}",
        &t[t.len() - 300..]
    );
    assert_eq!(d["clipped_lines"], 1);

    // A file that is one 1 MB line with no newline: the first line alone is over every cap.
    put(&sb, "one.txt", &long);
    let (t, d) = ok(&sb, "read", json!({"path": "one.txt"}));
    assert!(t.starts_with("     1\tqqqq"), "{}", &t[..40]);
    assert!(t.len() < 10_000, "{} bytes shown", t.len());
    assert!(
        t.contains("sed -n '1p' one.txt | cut -c 2001-"),
        "{}",
        &t[t.len() - 300..]
    );
    assert_eq!(
        (d["total_lines"].as_u64(), d["bytes"].as_u64()),
        (Some(1), Some(1024 * 1024))
    );
}

#[test]
fn read_escapes_invalid_utf8_and_prints_valid_json() {
    let sb = Sandbox::new();
    put(
        &sb,
        "bad.txt",
        b"ok\nbad \xff\xfe bytes \xc3( here\nlone \xed\xa0\x80 surrogate\n",
    );
    let run = tool_raw(&sb, "read", r#"{"path":"bad.txt"}"#);
    assert_eq!(run.code, 0);
    assert!(std::str::from_utf8(&run.stdout).is_ok(), "stdout is UTF-8");
    let v = run.json();
    assert_eq!(v["is_error"], false, "{v}");
    let t = text(&v);
    assert!(
        t.contains("     2\tbad \\xff\\xfe bytes \\xc3( here"),
        "{t}"
    );
    assert!(t.contains("     3\tlone \\xed\\xa0\\x80 surrogate"), "{t}");
    assert!(t.contains("not valid UTF-8 text are shown as \\xNN"), "{t}");
}

#[test]
fn read_of_a_100_mb_file_shows_the_first_window_and_far_offsets() {
    let sb = Sandbox::new();
    // 4.4 million short lines: far line numbers are wider than the usual 6 columns.
    let mut body = Vec::with_capacity(101 * 1024 * 1024);
    let mut n = 0usize;
    while body.len() < 100 * 1024 * 1024 {
        n += 1;
        body.extend_from_slice(format!("r{n:09} abcdefghijklm\n").as_bytes());
    }
    put(&sb, "huge.txt", &body);
    drop(body);
    let (t, d) = ok(&sb, "read", json!({"path": "huge.txt"}));
    assert!(
        t.starts_with("     1\tr000000001 abcdefghijklm\n"),
        "{}",
        &t[..60]
    );
    let shown = body_lines(&t).len();
    assert!(shown > 1000 && shown <= 2000, "{shown}");
    let hint = format!("[fen: showing lines 1-{shown} of {n}");
    assert!(t.contains(&hint), "{}", &t[t.len() - 200..]);
    assert!(
        t.ends_with(&format!("Continue with offset={}.]", shown + 1)),
        "{}",
        &t[t.len() - 200..]
    );
    assert_eq!(d["total_lines"], n);
    assert!(d["bytes"].as_u64().unwrap() >= 100 * 1024 * 1024);

    let far = n - 5000;
    let (t, d) = ok(&sb, "read", json!({"path": "huge.txt", "offset": far}));
    assert!(
        t.starts_with(&format!("{far}\tr{far:09} abcdefghijklm\n")),
        "{}",
        &t[..60]
    );
    let lines = body_lines(&t);
    let last = far + lines.len() - 1;
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with(&format!("{last}\tr{last:09}")),
        "{:?}",
        lines.last()
    );
    assert!(
        !t.contains("output truncated"),
        "the window must fit the result cap"
    );
    assert!(
        t.ends_with(&format!("Continue with offset={}.]", last + 1)),
        "{}",
        &t[t.len() - 200..]
    );
    assert_eq!(d["next_offset"], last + 1);

    let (t, _) = ok(&sb, "read", json!({"path": "huge.txt", "offset": n - 1}));
    assert_eq!(body_lines(&t).len(), 2);
    assert!(!t.contains("Continue"), "{t}");
}

#[test]
fn read_in_a_permission_denied_directory() {
    let sb = Sandbox::new();
    let secret = put(&sb, "locked/secret.txt", "classified\n");
    let dir = sb.cwd().join("locked");
    chmod(&dir, 0o000);
    let v = tool(&sb, "read", &json!({"path": "locked/secret.txt"}));
    let v_ls = tool(&sb, "ls", &json!({"path": "locked"}));
    chmod(&dir, 0o755);
    if is_root() {
        // root bypasses permission bits: the read simply works.
        assert_eq!(v["is_error"], false, "{v}");
        assert!(text(&v).contains("classified"));
        assert_eq!(v_ls["is_error"], false, "{v_ls}");
    } else {
        assert_eq!(v["is_error"], true, "{v}");
        assert!(text(&v).to_lowercase().contains("permission"), "{v}");
        assert_eq!(v_ls["is_error"], true, "{v_ls}");
    }
    assert!(secret.exists());
}

// ---------------------------------------------------------------- write

#[test]
fn write_creates_parents_and_reports_bytes_lines_and_newness() {
    let sb = Sandbox::new();
    let (t, d) = ok(
        &sb,
        "write",
        json!({"path": "deep/er/new.txt", "content": "one\ntwo\n"}),
    );
    assert_eq!(t, "wrote 8 bytes (2 lines) to deep/er/new.txt (new file)");
    assert_eq!(get(&sb, "deep/er/new.txt"), b"one\ntwo\n");
    assert_eq!(d["created"], true);
    assert_eq!(
        d["diff"],
        "--- a/deep/er/new.txt\n+++ b/deep/er/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    );
    assert_eq!(
        (
            d["bytes"].as_u64(),
            d["lines_before"].as_u64(),
            d["lines_after"].as_u64()
        ),
        (Some(8), Some(0), Some(2))
    );

    let (t, d) = ok(
        &sb,
        "write",
        json!({"path": "deep/er/new.txt", "content": "x"}),
    );
    assert_eq!(
        t,
        "wrote 1 byte (1 line) to deep/er/new.txt (replaced 2 lines)"
    );
    assert_eq!(d["created"], false);
    assert_eq!(d["lines_before"], 2);
    assert_eq!(get(&sb, "deep/er/new.txt"), b"x");
    // The diff presenters show (the TUI's diff view): the whole rewrite, bounded, marking a
    // last line without a newline as `edit` diffs do.
    assert_eq!(
        d["diff"],
        "--- a/deep/er/new.txt\n+++ b/deep/er/new.txt\n@@ -1,2 +1,1 @@\n-one\n-two\n+x\n\\ No newline at end of file\n"
    );
    assert_eq!(d["diff_truncated"], false);

    let (_, d) = ok(&sb, "write", json!({"path": "~/home.txt", "content": ""}));
    assert_eq!(d["created"], true);
    assert!(sb.root().join("home.txt").exists());
}

#[test]
fn write_keeps_line_endings_and_an_existing_files_mode() {
    let sb = Sandbox::new();
    let p = put(&sb, "run.sh", "#!/bin/sh\n");
    chmod(&p, 0o741);
    let content = "#!/bin/sh\r\necho hi\r\nno newline at end";
    ok(&sb, "write", json!({"path": "run.sh", "content": content}));
    assert_eq!(get(&sb, "run.sh"), content.as_bytes());
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o741);
    // No temporary file left next to it.
    let names: Vec<_> = std::fs::read_dir(sb.cwd())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.sh"]);
}

#[test]
fn write_refuses_a_directory_and_a_file_as_parent() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join("adir")).unwrap();
    let e = fails(&sb, "write", json!({"path": "adir", "content": "x"}));
    assert!(e.contains("adir is a directory"), "{e}");
    put(&sb, "afile", "keep");
    let e = fails(
        &sb,
        "write",
        json!({"path": "afile/child.txt", "content": "x"}),
    );
    assert!(e.starts_with("error: "), "{e}");
    assert_eq!(get(&sb, "afile"), b"keep");
}

// ---------------------------------------------------------------- edit

#[test]
fn edit_replaces_one_string_and_reports_diff_and_first_changed_line() {
    let sb = Sandbox::new();
    put(&sb, "e.txt", "one\ntwo\nthree\nfour\n");
    let (t, d) = ok(
        &sb,
        "edit",
        json!({"path": "e.txt", "old_string": "three", "new_string": "THREE"}),
    );
    assert_eq!(get(&sb, "e.txt"), b"one\ntwo\nTHREE\nfour\n");
    assert!(
        t.starts_with("edited e.txt: 1 replacement, first changed line 3\n"),
        "{t}"
    );
    assert!(t.contains("-three\n+THREE"), "{t}");
    let f = &d["files"][0];
    assert_eq!(f["first_changed_line"], 3);
    assert_eq!(f["replacements"], 1);
    assert_eq!(f["strategies"], json!(["exact"]));
    assert!(
        f["diff"].as_str().unwrap().contains("@@ -1,4 +1,4 @@"),
        "{f}"
    );
}

#[test]
fn edit_applies_several_edits_to_one_file_against_the_original() {
    let sb = Sandbox::new();
    put(&sb, "m.txt", "alpha\nbeta\ngamma\n");
    let (t, d) = ok(
        &sb,
        "edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "gamma", "new_string": "GAMMA"},
            {"old_string": "alpha", "new_string": "ALPHA"}
        ]}),
    );
    assert_eq!(get(&sb, "m.txt"), b"ALPHA\nbeta\nGAMMA\n");
    assert!(t.contains("2 replacements, first changed line 1"), "{t}");
    assert_eq!(d["files"][0]["strategies"], json!(["exact", "exact"]));
}

#[test]
fn edit_across_files_is_all_or_nothing() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "aaa\n");
    put(&sb, "b.txt", "bbb\n");
    let e = fails(
        &sb,
        "edit",
        json!({"files": [
            {"path": "a.txt", "edits": [{"old_string": "aaa", "new_string": "AAA"}]},
            {"path": "b.txt", "edits": [{"old_string": "zzz", "new_string": "ZZZ"}]}
        ]}),
    );
    assert!(e.contains("b.txt") && e.contains("not found"), "{e}");
    assert_eq!(
        e.to_lowercase().matches("no file was changed").count(),
        1,
        "said once: {e}"
    );
    assert_eq!(get(&sb, "a.txt"), b"aaa\n", "a.txt must not change");

    let (t, d) = ok(
        &sb,
        "edit",
        json!({"files": [
            {"path": "a.txt", "edits": [{"old_string": "aaa", "new_string": "AAA"}]},
            {"path": "b.txt", "edits": [{"old_string": "bbb", "new_string": "BBB"}]}
        ]}),
    );
    assert_eq!(
        (get(&sb, "a.txt"), get(&sb, "b.txt")),
        (b"AAA\n".to_vec(), b"BBB\n".to_vec())
    );
    assert!(
        t.contains("edited a.txt") && t.contains("edited b.txt"),
        "{t}"
    );
    assert_eq!(d["files"].as_array().unwrap().len(), 2);
}

#[test]
fn edit_errors_say_what_to_do() {
    let sb = Sandbox::new();
    put(&sb, "d.txt", "dup\ndup\nsolo\n");
    let e = fails(
        &sb,
        "edit",
        json!({"path": "d.txt", "old_string": "dup", "new_string": "x"}),
    );
    assert!(
        e.contains("matches 2 places") && e.contains("replace_all"),
        "{e}"
    );
    let e = fails(
        &sb,
        "edit",
        json!({"path": "d.txt", "old_string": "missing", "new_string": "x"}),
    );
    assert!(e.contains("not found") && e.contains("re-read"), "{e}");
    let e = fails(
        &sb,
        "edit",
        json!({"path": "d.txt", "old_string": "solo", "new_string": "solo"}),
    );
    assert!(e.contains("identical"), "{e}");
    let e = fails(
        &sb,
        "edit",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
    );
    assert!(e.contains("nope.txt") && e.contains("no such file"), "{e}");
    let e = fails(&sb, "edit", json!({"path": "d.txt"}));
    assert!(e.contains("exactly one of"), "{e}");
    let e = fails(&sb, "edit", json!({"path": "d.txt", "old_string": "solo"}));
    assert!(e.contains("new_string is required"), "{e}");
    let e = fails(
        &sb,
        "edit",
        json!({"old_string": "solo", "new_string": "x"}),
    );
    assert!(e.contains("path is required"), "{e}");
    let e = fails(&sb, "edit", json!({"path": "d.txt", "edits": []}));
    assert!(e.contains("edits is empty"), "{e}");
    assert_eq!(get(&sb, "d.txt"), b"dup\ndup\nsolo\n");

    let (t, _) = ok(
        &sb,
        "edit",
        json!({"path": "d.txt", "old_string": "dup", "new_string": "x", "replace_all": true}),
    );
    assert!(t.contains("2 replacements"), "{t}");
    assert_eq!(get(&sb, "d.txt"), b"x\nx\nsolo\n");
}

#[test]
fn edit_keeps_crlf_bom_and_mode_and_names_the_fallback_strategy() {
    let sb = Sandbox::new();
    let p = put(
        &sb,
        "w.txt",
        "\u{feff}first line\r\nsecond line\r\nthird\r\n",
    );
    chmod(&p, 0o640);
    // The model copies lines without \r: the line-ending fallback matches.
    let (t, d) = ok(
        &sb,
        "edit",
        json!({"path": "w.txt", "old_string": "first line\nsecond line", "new_string": "1st\n2nd\nextra"}),
    );
    assert_eq!(
        get(&sb, "w.txt"),
        "\u{feff}1st\r\n2nd\r\nextra\r\nthird\r\n".as_bytes()
    );
    assert!(t.contains("matched by line_endings"), "{t}");
    assert!(
        t.contains("-first line\n") && !t.contains('\r'),
        "the excerpt reads cleanly: {t:?}"
    );
    assert!(
        d["files"][0]["diff"].as_str().unwrap().contains("+1st\r\n"),
        "details keep the bytes: {d}"
    );
    assert_eq!(d["files"][0]["strategies"], json!(["line_endings"]));
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o640
    );

    put(&sb, "ws.txt", "fn main() {\n    call();   \n}\n");
    let (t, _) = ok(
        &sb,
        "edit",
        json!({"path": "ws.txt", "old_string": "    call();\n", "new_string": "    other();\n"}),
    );
    assert!(t.contains("matched by"), "a fallback is named: {t}");
    assert_eq!(get(&sb, "ws.txt"), b"fn main() {\n    other();\n}\n");
}

#[test]
fn edit_shows_a_short_diff_excerpt_and_keeps_the_whole_diff_in_details() {
    let sb = Sandbox::new();
    let body: String = (0..100).map(|i| format!("item {i}\n")).collect();
    put(&sb, "list.txt", &body);
    let (t, d) = ok(
        &sb,
        "edit",
        json!({"path": "list.txt", "old_string": "item", "new_string": "entry", "replace_all": true}),
    );
    assert!(
        t.contains("100 replacements") && t.contains("[fen: diff cut at 40 lines]"),
        "{t}"
    );
    assert!(t.lines().count() < 50, "{} lines", t.lines().count());
    let diff = d["files"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("+entry 99") && diff.lines().count() > 200,
        "{diff}"
    );
}

#[test]
fn reads_racing_edits_see_a_whole_old_or_whole_new_file() {
    let sb = Sandbox::new();
    let body: String = (0..100_000)
        .map(|i| format!("line {i:06} {}\n", "z".repeat(68)))
        .collect();
    let old = format!("HEAD-A\n{body}TAIL-A\n");
    let new = format!("HEAD-BBBB\n{body}TAIL-BBBB\n");
    put(&sb, "race.txt", &old);
    let sizes = [old.len() as u64, new.len() as u64];
    drop((body, old, new));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            let cwd = sb.cwd();
            let (home, config, state) = (sb.root().to_path_buf(), sb.config(), sb.state());
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || seen.len() < 3 {
                    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fen"));
                    cmd.args(["tool", "read", r#"{"path":"race.txt","limit":2}"#])
                        .current_dir(&cwd)
                        .env("HOME", &home)
                        .env("XDG_CONFIG_HOME", &config)
                        .env("XDG_STATE_HOME", &state);
                    let run = run_bounded(cmd);
                    assert_eq!(run.code, 0, "{}", run.stderr);
                    let v = run.json();
                    assert_eq!(v["is_error"], false, "a read failed mid-edit: {v}");
                    seen.push((v["details"]["bytes"].as_u64().unwrap(), text(&v)));
                }
                seen
            })
        })
        .collect();
    let flips = [
        ("HEAD-A\n", "HEAD-BBBB\n", "TAIL-A\n", "TAIL-BBBB\n"),
        ("HEAD-BBBB\n", "HEAD-A\n", "TAIL-BBBB\n", "TAIL-A\n"),
    ];
    for i in 0..8 {
        let (h0, h1, t0, t1) = flips[i % 2];
        ok(
            &sb,
            "edit",
            json!({"path": "race.txt", "edits": [
                {"old_string": h0, "new_string": h1},
                {"old_string": t0, "new_string": t1}
            ]}),
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut versions = std::collections::HashSet::new();
    for r in readers {
        for (bytes, t) in r.join().expect("reader thread") {
            assert!(
                sizes.contains(&bytes),
                "a read saw {bytes} bytes, neither {sizes:?}"
            );
            let head = if bytes == sizes[0] {
                "     1\tHEAD-A\n"
            } else {
                "     1\tHEAD-BBBB\n"
            };
            assert!(
                t.starts_with(head),
                "size and content disagree ({bytes} bytes): {t}"
            );
            assert!(t.contains("of 100002. Continue with offset=3."), "{t}");
            versions.insert(bytes);
        }
    }
    assert_eq!(
        get(&sb, "race.txt").len() as u64,
        sizes[0],
        "eight flips end on the old version"
    );
    assert!(!versions.is_empty());
}

// ---------------------------------------------------------------- ls

#[test]
fn ls_sorts_marks_dirs_and_symlinks_and_skips_git_contents() {
    let sb = Sandbox::new();
    put(&sb, "b.txt", "b");
    put(&sb, "A.md", "a");
    put(&sb, ".hidden", "h");
    put(&sb, "src/lib.rs", "");
    put(&sb, "src/deep/x.rs", "");
    put(&sb, ".git/HEAD", "ref");
    put(&sb, ".git/objects/aa", "");
    std::os::unix::fs::symlink("b.txt", sb.cwd().join("link")).unwrap();
    let (t, d) = ok(&sb, "ls", json!({}));
    assert_eq!(t, ".git/\n.hidden\nA.md\nb.txt\nlink@\nsrc/");
    assert_eq!(d["entries"], 6);
    let (t, _) = ok(&sb, "ls", json!({"path": ".", "depth": 3}));
    assert_eq!(
        t,
        ".git/\n.hidden\nA.md\nb.txt\nlink@\nsrc/\nsrc/deep/\nsrc/deep/x.rs\nsrc/lib.rs"
    );
    let (t, _) = ok(&sb, "ls", json!({"path": "src"}));
    assert_eq!(t, "deep/\nlib.rs");
}

#[test]
fn ls_caps_at_500_entries_and_counts_the_rest() {
    let sb = Sandbox::new();
    for i in 0..620 {
        put(&sb, &format!("many/f{i:04}"), "");
    }
    let (t, d) = ok(&sb, "ls", json!({"path": "many"}));
    let shown = body_lines(&t);
    assert_eq!(shown.len(), 500);
    assert_eq!((shown[0], shown[499]), ("f0000", "f0499"));
    assert!(
        t.ends_with("[fen: 120 more entries not shown; list a subdirectory or lower depth]"),
        "{}",
        &t[t.len() - 120..]
    );
    assert_eq!(d["truncated"], 120);
}

#[test]
fn ls_errors_and_empty_directories() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join("void")).unwrap();
    let (t, _) = ok(&sb, "ls", json!({"path": "void"}));
    assert_eq!(t, "(empty directory: void)");
    let e = fails(&sb, "ls", json!({"path": "nowhere"}));
    assert!(e.contains("not found") && e.contains("nowhere"), "{e}");
    put(&sb, "plain.txt", "x");
    let e = fails(&sb, "ls", json!({"path": "plain.txt"}));
    assert!(
        e.contains("not a directory") && e.contains("use read"),
        "{e}"
    );
}

// ---------------------------------------------------------------- strict session rules (library)

/// A kernel booted in the sandbox and a way to run tools through the real pipeline.
struct Session {
    k: fen::host::Kernel,
}

impl Session {
    fn new(sb: &Sandbox) -> Session {
        Session {
            k: fen::host::Kernel::boot(sb.boot_options()).expect("boot kernel"),
        }
    }
    fn strict(&self, on: bool) {
        self.k
            .lua
            .load(format!("require('fen.native').fs.set_strict({on})"))
            .exec()
            .expect("set_strict");
    }
    fn run(&self, name: &str, args: Value) -> fen::kernel::tools::ToolOutcome {
        fen::cmd::block_on(fen::kernel::tools::run_tool(
            &self.k.lua,
            &self.k.inner,
            name,
            args,
            Default::default(),
        ))
        .expect("runtime")
    }
    fn ok(&self, name: &str, args: Value) -> String {
        let o = self.run(name, args.clone());
        assert!(!o.is_error, "{name} {args}: {:?}", o.content);
        texts(&o)
    }
    fn fails(&self, name: &str, args: Value) -> String {
        let o = self.run(name, args.clone());
        assert!(
            o.is_error && o.ran,
            "{name} {args} should fail: {:?}",
            o.content
        );
        texts(&o)
    }
}

/// The text blocks of an outcome, one per line.
fn texts(o: &fen::kernel::tools::ToolOutcome) -> String {
    o.content
        .iter()
        .filter_map(|b| b.text())
        .collect::<Vec<_>>()
        .join("\n")
}

fn abs(sb: &Sandbox, rel: &str) -> String {
    sb.cwd().join(rel).to_string_lossy().into_owned()
}

#[test]
fn strict_write_refuses_unread_and_changed_files() {
    let sb = Sandbox::new();
    put(&sb, "existing.txt", "original\n");
    let s = Session::new(&sb);
    s.strict(true);
    let f = abs(&sb, "existing.txt");

    let e = s.fails("write", json!({"path": f, "content": "clobber\n"}));
    assert!(
        e.contains("has not read it") && e.contains("Read it first"),
        "{e}"
    );
    assert_eq!(get(&sb, "existing.txt"), b"original\n");

    // A new file needs no read.
    s.ok(
        "write",
        json!({"path": abs(&sb, "fresh/new.txt"), "content": "new\n"}),
    );
    assert_eq!(get(&sb, "fresh/new.txt"), b"new\n");

    // After a read, writing is allowed; the session's own write counts as read.
    s.ok("read", json!({"path": f}));
    s.ok("write", json!({"path": f, "content": "second\n"}));
    s.ok("write", json!({"path": f, "content": "third\n"}));
    assert_eq!(get(&sb, "existing.txt"), b"third\n");

    // Changed on disk since: refused with the reason.
    std::fs::write(sb.cwd().join("existing.txt"), "someone else\n").unwrap();
    let e = s.fails("write", json!({"path": f, "content": "mine\n"}));
    assert!(
        e.contains("changed on disk since last read") && e.contains("read it again"),
        "{e}"
    );
    assert_eq!(get(&sb, "existing.txt"), b"someone else\n");
    // Same size, different content: still caught (content hash, not just size).
    s.ok("read", json!({"path": f}));
    std::fs::write(sb.cwd().join("existing.txt"), "someone ELSE\n").unwrap();
    let e = s.fails("write", json!({"path": f, "content": "mine\n"}));
    assert!(e.contains("changed on disk"), "{e}");

    // A windowed read of part of the file still counts as having read it.
    s.ok("read", json!({"path": f, "offset": 1, "limit": 1}));
    s.ok("write", json!({"path": f, "content": "mine\n"}));
    assert_eq!(get(&sb, "existing.txt"), b"mine\n");

    // Outside strict mode (a `fen tool` call) overwriting an unread file is fine.
    put(&sb, "other.txt", "x\n");
    s.strict(false);
    s.ok(
        "write",
        json!({"path": abs(&sb, "other.txt"), "content": "y\n"}),
    );
    assert_eq!(get(&sb, "other.txt"), b"y\n");
}

#[test]
fn edit_refuses_a_file_changed_since_it_was_read() {
    let sb = Sandbox::new();
    put(&sb, "code.rs", "fn a() {}\nfn b() {}\n");
    let s = Session::new(&sb);
    s.strict(true);
    let f = abs(&sb, "code.rs");
    s.ok("read", json!({"path": f}));
    std::fs::write(
        sb.cwd().join("code.rs"),
        "fn a() {}\nfn b() {}\nfn c() {}\n",
    )
    .unwrap();
    let e = s.fails(
        "edit",
        json!({"path": f, "old_string": "fn a() {}", "new_string": "fn a2() {}"}),
    );
    assert!(
        e.contains("changed on disk since last read") && e.contains("read it again"),
        "{e}"
    );
    assert_eq!(get(&sb, "code.rs"), b"fn a() {}\nfn b() {}\nfn c() {}\n");

    // A stale file in a batch stops the whole batch.
    put(&sb, "other.rs", "fn o() {}\n");
    s.ok("read", json!({"path": abs(&sb, "other.rs")}));
    let e = s.fails(
        "edit",
        json!({"files": [
            {"path": abs(&sb, "other.rs"), "edits": [{"old_string": "fn o", "new_string": "fn p"}]},
            {"path": f, "edits": [{"old_string": "fn b", "new_string": "fn q"}]}
        ]}),
    );
    assert!(e.contains("changed on disk"), "{e}");
    assert_eq!(get(&sb, "other.rs"), b"fn o() {}\n");

    // Read again: the edit goes through, and the session's own edit does not make it stale.
    s.ok("read", json!({"path": f}));
    s.ok(
        "edit",
        json!({"path": f, "old_string": "fn a() {}", "new_string": "fn a2() {}"}),
    );
    s.ok(
        "edit",
        json!({"path": f, "old_string": "fn b() {}", "new_string": "fn b2() {}"}),
    );
    assert_eq!(get(&sb, "code.rs"), b"fn a2() {}\nfn b2() {}\nfn c() {}\n");
    // And a write after the session's edits is allowed too.
    s.ok("write", json!({"path": f, "content": "done\n"}));
}

#[test]
fn special_files_are_refused_instead_of_hanging() {
    let sb = Sandbox::new();
    let fifo = sb.cwd().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // run_bounded panics if opening the FIFO blocks.
    let e = fails(&sb, "read", json!({"path": "pipe"}));
    assert!(e.contains("not a regular file"), "{e}");
    let e = fails(&sb, "read", json!({"path": "/dev/zero"}));
    assert!(e.contains("not a regular file"), "{e}");
    let e = fails(&sb, "write", json!({"path": "pipe", "content": "x"}));
    assert!(e.contains("not a regular file"), "{e}");
    let e = fails(
        &sb,
        "edit",
        json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
    );
    assert!(
        e.contains("not a regular file") && e.contains("no file was changed"),
        "{e}"
    );
}

/// Issue 11.1: readable text in `not-an-image.png` (or .bmp/.tiff/.avif) was reported as a
/// binary "PNG image" while the same bytes in a `.txt` were shown.
#[test]
fn read_binary_detection_by_extension_shows_text_named_like_an_image() {
    let sb = Sandbox::new();
    for name in ["not-an-image.png", "x.bmp", "x.tiff", "x.avif"] {
        put(&sb, name, "plain words\nsecond line\n");
        let (t, d) = ok(&sb, "read", json!({"path": name}));
        assert!(
            t.contains("plain words") && t.contains("second line"),
            "{name}: {t}"
        );
        assert_eq!(d["kind"], "text", "{name}");
    }
    // `\xff\xfe` then ASCII is not UTF-16, and a short file with a few bad bytes is escaped.
    put(&sb, "ff.txt", b"\xff\xfehello\n");
    let (t, _) = ok(&sb, "read", json!({"path": "ff.txt"}));
    assert!(t.contains("\\xff\\xfehello"), "{t}");
    put(&sb, "short.txt", b"\xe9t\xe9\n");
    let (t, d) = ok(&sb, "read", json!({"path": "short.txt"}));
    assert!(t.contains("\\xe9t\\xe9"), "{t}");
    assert_eq!(d["escaped_bytes"], 2);
}

/// Issue 11.3: an empty old_string on a missing file said "no such file; check the path".
#[test]
fn edit_empty_old_string_on_a_missing_file_says_to_use_write() {
    let sb = Sandbox::new();
    let e = fails(
        &sb,
        "edit",
        json!({"path": "new.txt", "old_string": "", "new_string": "hello\n"}),
    );
    assert!(
        e.contains("old_string is empty") && e.contains("write"),
        "{e}"
    );
    assert!(!e.contains("no such file"), "{e}");
}

/// Issue 11.5: "use an offset between 1 and 0" for an empty file.
#[test]
fn read_offset_in_an_empty_file_says_the_file_is_empty() {
    let sb = Sandbox::new();
    put(&sb, "empty.txt", "");
    let e = fails(&sb, "read", json!({"path": "empty.txt", "offset": 3}));
    assert!(e.contains("is empty"), "{e}");
    assert!(!e.contains("between 1 and 0"), "{e}");
}

/// Issue 11.5: "4 matches on line 2", not "at lines 2, 2, 2, 2".
#[test]
fn edit_ambiguous_on_one_line_says_how_many_matches_on_that_line() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "x\nab ab ab ab\n");
    let e = fails(
        &sb,
        "edit",
        json!({"path": "a.txt", "old_string": "ab", "new_string": "c"}),
    );
    assert!(e.contains("4 matches on line 2"), "{e}");
    assert!(!e.contains("2, 2"), "{e}");
}

/// Issue 11.5: writing below a file said "cannot read"; an empty path said "error: : no such
/// file".
#[test]
fn write_under_a_file_or_to_an_empty_path_says_why() {
    let sb = Sandbox::new();
    put(&sb, "notes.txt", "n\n");
    let e = fails(
        &sb,
        "write",
        json!({"path": "notes.txt/sub", "content": "x"}),
    );
    assert!(e.contains("notes.txt is a file, not a directory"), "{e}");
    assert!(!e.contains("cannot read"), "{e}");
    let e = fails(&sb, "write", json!({"path": "", "content": "x"}));
    assert!(e.contains("path is empty"), "{e}");
}

fn encoded(img: image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).expect("encode fixture");
    out.into_inner()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Issue 16, images in read: a PNG, JPEG, GIF or WebP (by content, whatever its name) comes back
/// as an image block; one larger than 2000x2000 is scaled down to fit; a broken one is binary.
#[test]
fn read_of_an_image_returns_an_image_block() {
    use base64::Engine as _;
    let sb = Sandbox::new();
    let pixel = encoded(
        image::DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            1,
            1,
            image::Rgba([1, 2, 3, 255]),
        )),
        image::ImageFormat::Png,
    );
    put(&sb, "pixel.dat", &pixel);
    let v = tool(&sb, "read", &json!({"path": "pixel.dat"}));
    assert_eq!(v["is_error"], false, "{v}");
    assert!(
        v["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("PNG, 1x1"),
        "{v}"
    );
    assert_eq!(
        v["content"][1],
        json!({"type": "image", "mime_type": "image/png", "data": b64(&pixel)})
    );
    assert_eq!(v["details"]["kind"], "image");

    let wide = encoded(
        image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(3000, 60, |x, y| {
            image::Rgb([(x % 251) as u8, (y % 241) as u8, 9])
        })),
        image::ImageFormat::Jpeg,
    );
    put(&sb, "wide.jpg", &wide);
    let v = tool(&sb, "read", &json!({"path": "wide.jpg"}));
    let t = v["content"][0]["text"].as_str().unwrap();
    assert!(
        t.contains("JPEG, 3000x60") && t.contains("resized to 2000x40"),
        "{t}"
    );
    assert_eq!(v["content"][1]["mime_type"], "image/jpeg");
    let data = base64::engine::general_purpose::STANDARD
        .decode(v["content"][1]["data"].as_str().unwrap())
        .unwrap();
    let back = image::load_from_memory(&data).unwrap();
    assert_eq!((back.width(), back.height()), (2000, 40));

    // A GIF named .txt is an image too; a broken PNG is reported as binary, with why.
    let gif = encoded(
        image::DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            2,
            2,
            image::Rgba([0, 0, 0, 255]),
        )),
        image::ImageFormat::Gif,
    );
    put(&sb, "anim.txt", &gif);
    let v = tool(&sb, "read", &json!({"path": "anim.txt"}));
    assert_eq!(v["content"][1]["mime_type"], "image/gif", "{v}");
    put(&sb, "broken.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let (t, d) = ok(&sb, "read", json!({"path": "broken.png"}));
    assert!(
        t.starts_with("binary file") && t.contains("the PNG image is corrupt: "),
        "{t}"
    );
    assert_eq!(d["kind"], "binary");
}
