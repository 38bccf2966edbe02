//! The built-in grep and find tools through the real `fen tool` binary, in sandbox trees with
//! .gitignore/.ignore files, hidden directories, binaries, symlinks and loops.

use crate::common;
use crate::tools_support;

use common::Sandbox;
use serde_json::json;
use std::time::{Duration, SystemTime};
use tools_support::*;

/// A small project: ignored files at two levels, a hidden dir, a binary.
fn project(sb: &Sandbox) {
    put(sb, ".gitignore", "gen.txt\n*.log\n");
    put(sb, ".ignore", "skip.txt\n");
    put(sb, "gen.txt", "needle in gen\n");
    put(sb, "app.log", "needle in log\n");
    put(sb, "skip.txt", "needle in skip\n");
    put(sb, "local.txt", "needle at root\n");
    put(sb, "src/main.rs", "fn main() {\n    let needle = 1;\n}\n");
    put(sb, "src/lib.rs", "// Needle, capitalised\npub fn f() {}\n");
    // Nested .gitignore: applies below src/sub only.
    put(sb, "src/sub/.gitignore", "local.txt\n");
    put(
        sb,
        "src/sub/local.txt",
        "needle ignored by the nested rule\n",
    );
    put(sb, "src/sub/kept.txt", "needle kept\n");
    put(sb, ".hidden/h.txt", "needle hidden\n");
    put(sb, "blob.bin", b"needle\0\x01\x02binary");
}

// ---------------------------------------------------------------- grep

#[test]
fn grep_prints_grouped_path_line_text_in_path_order() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, d) = ok(&sb, "grep", json!({"pattern": "needle"}));
    let lines = body_lines(&t);
    assert_eq!(
        lines,
        [
            "local.txt:1:needle at root",
            "src/main.rs:2:    let needle = 1;",
            "src/sub/kept.txt:1:needle kept"
        ]
    );
    assert_eq!(
        (d["matches"].as_u64(), d["files"].as_u64()),
        (Some(3), Some(3))
    );
    // Stable: the same call gives the same text.
    let (again, _) = ok(&sb, "grep", json!({"pattern": "needle"}));
    assert_eq!(t, again);
}

#[test]
fn grep_respects_gitignore_ignore_nested_rules_and_hidden_dirs_and_says_so() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, d) = ok(&sb, "grep", json!({"pattern": "needle"}));
    for hidden in [
        "gen.txt",
        "app.log",
        "skip.txt",
        "src/sub/local.txt",
        ".hidden",
    ] {
        assert!(
            !body_lines(&t).iter().any(|l| l.starts_with(hidden)),
            "{hidden} searched: {t}"
        );
    }
    assert!(
        t.contains("[fen: 4 ignored files also match; pass no_ignore=true to include them]"),
        "{t}"
    );
    assert_eq!(d["ignored_matching_files"], 4);

    let (t, _) = ok(&sb, "grep", json!({"pattern": "needle", "no_ignore": true}));
    for f in [
        "gen.txt:1:",
        "app.log:1:",
        "skip.txt:1:",
        "src/sub/local.txt:1:",
    ] {
        assert!(t.contains(f), "{f} missing with no_ignore: {t}");
    }
    assert!(!t.contains(".hidden/"), "{t}");
    let (t, _) = ok(
        &sb,
        "grep",
        json!({"pattern": "needle", "include_hidden": true}),
    );
    assert!(t.contains(".hidden/h.txt:1:needle hidden"), "{t}");
    assert!(!t.contains("gen.txt:1:"), "{t}");
    // The nested rule does not reach the root-level file of the same name.
    assert!(t.contains("local.txt:1:needle at root"), "{t}");
}

#[test]
fn grep_always_searches_a_path_named_explicitly() {
    let sb = Sandbox::new();
    project(&sb);
    for (path, expect) in [
        ("gen.txt", "gen.txt:1:needle in gen"),
        (
            "src/sub/local.txt",
            "src/sub/local.txt:1:needle ignored by the nested rule",
        ),
        (".hidden/h.txt", ".hidden/h.txt:1:needle hidden"),
    ] {
        let (t, _) = ok(&sb, "grep", json!({"pattern": "needle", "path": path}));
        assert_eq!(body_lines(&t), [expect], "{path}");
    }
    // A directory named explicitly is searched, its ignored files still skipped.
    let (t, _) = ok(&sb, "grep", json!({"pattern": "needle", "path": "src/sub"}));
    assert!(
        t.contains("src/sub/kept.txt:1:") && !t.contains("src/sub/local.txt:1:"),
        "{t}"
    );
}

#[test]
fn grep_skips_binary_files_and_reports_them() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, _) = ok(&sb, "grep", json!({"pattern": "binary|needle"}));
    assert!(!t.contains("blob.bin:"), "{t}");
    assert!(
        t.contains("binary files skipped]") || t.contains("binary file skipped]"),
        "{t}"
    );
}

#[test]
fn grep_options_ignore_case_literal_glob_and_context() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, _) = ok(
        &sb,
        "grep",
        json!({"pattern": "NEEDLE", "ignore_case": true, "glob": "*.rs"}),
    );
    assert_eq!(
        body_lines(&t),
        [
            "src/lib.rs:1:// Needle, capitalised",
            "src/main.rs:2:    let needle = 1;"
        ]
    );

    put(&sb, "re.md", "x = a.b(c)\naxb(\n");
    let (t, _) = ok(&sb, "grep", json!({"pattern": "a.b(", "literal": true}));
    assert_eq!(body_lines(&t), ["re.md:1:x = a.b(c)"]);
    let (t, _) = ok(&sb, "grep", json!({"pattern": "a.b\\(", "glob": "*.md"}));
    assert_eq!(body_lines(&t), ["re.md:1:x = a.b(c)", "re.md:2:axb("]);

    put(&sb, "ctx.md", "a\nb\nneedle one\nc\nd\ne\nf\nneedle two\n");
    let (t, _) = ok(
        &sb,
        "grep",
        json!({"pattern": "needle", "context": 1, "path": "ctx.md"}),
    );
    assert_eq!(
        t,
        "ctx.md-2-b\nctx.md:3:needle one\nctx.md-4-c\n--\nctx.md-7-f\nctx.md:8:needle two"
    );
}

#[test]
fn grep_output_modes_files_and_counts() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "x\nx\nx\n");
    put(&sb, "b.txt", "x\n");
    put(&sb, "c.txt", "y\n");
    let (t, _) = ok(
        &sb,
        "grep",
        json!({"pattern": "x", "output_mode": "files_with_matches"}),
    );
    assert_eq!(t, "a.txt\nb.txt");
    let (t, d) = ok(&sb, "grep", json!({"pattern": "x", "output_mode": "count"}));
    assert_eq!(t, "a.txt:3\nb.txt:1");
    assert_eq!(d["matches"], 4);
}

#[test]
fn grep_shows_100_results_by_default_and_says_how_to_get_more() {
    let sb = Sandbox::new();
    let body: String = (1..=150).map(|i| format!("hit {i}\n")).collect();
    put(&sb, "hits.txt", &body);
    let (t, d) = ok(&sb, "grep", json!({"pattern": "hit"}));
    assert_eq!(body_lines(&t).len(), 100);
    assert!(
        t.contains("hits.txt:100:hit 100") && !t.contains("hits.txt:101:"),
        "{t}"
    );
    assert!(
        t.contains("head_limit"),
        "the note says how to see more: {}",
        &t[t.len() - 200..]
    );
    assert_eq!(d["truncated"], true);
    let (t, _) = ok(&sb, "grep", json!({"pattern": "hit", "head_limit": 5}));
    assert_eq!(body_lines(&t).len(), 5);
    let (t, d) = ok(&sb, "grep", json!({"pattern": "hit", "head_limit": 1000}));
    assert_eq!(body_lines(&t).len(), 150);
    assert_eq!(d["truncated"], false);
}

#[test]
fn grep_errors_name_the_problem() {
    let sb = Sandbox::new();
    put(&sb, "a.txt", "a\n");
    let e = fails(&sb, "grep", json!({"pattern": "fn (main"}));
    assert!(
        e.contains("unclosed group") && e.contains("literal=true"),
        "{e}"
    );
    // The caret points at the position of the error.
    let caret = e.lines().find(|l| l.trim() == "^").expect("a caret line");
    let pat = e
        .lines()
        .find(|l| l.trim() == "fn (main")
        .expect("the pattern line");
    assert_eq!(caret.find('^'), pat.find('('), "{e}");
    let e = fails(&sb, "grep", json!({"pattern": "a", "path": "nowhere"}));
    assert!(e.contains("not found") && e.contains("nowhere"), "{e}");
    let (t, d) = ok(&sb, "grep", json!({"pattern": "zzz"}));
    assert_eq!(t, "no matches for \"zzz\" in .");
    assert_eq!(d["matches"], 0);
}

#[test]
fn grep_and_find_in_a_permission_denied_directory() {
    let sb = Sandbox::new();
    put(&sb, "open/a.txt", "needle\n");
    put(&sb, "locked/b.txt", "needle\n");
    let locked = sb.cwd().join("locked");
    chmod(&locked, 0o000);
    let g = tool(&sb, "grep", &json!({"pattern": "needle"}));
    let f = tool(&sb, "find", &json!({"pattern": "*.txt"}));
    chmod(&locked, 0o755);
    // Neither fails: what can be read is reported.
    assert_eq!(g["is_error"], false, "{g}");
    assert_eq!(f["is_error"], false, "{f}");
    assert!(text(&g).contains("open/a.txt:1:needle"), "{g}");
    assert!(text(&f).contains("open/a.txt"), "{f}");
    if is_root() {
        // root bypasses permission bits: the locked directory is searched like any other.
        assert!(text(&g).contains("locked/b.txt:1:needle"), "{g}");
        assert!(text(&f).contains("locked/b.txt"), "{f}");
    } else {
        assert!(!text(&g).contains("locked/b.txt"), "{g}");
        assert!(text(&f).contains("permission denied"), "{f}");
        assert_eq!(f["details"]["permission_denied"], 1);
    }
}

// ---------------------------------------------------------------- find

#[test]
fn find_matches_globs_relative_to_the_search_path() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.rs"}));
    let mut got = body_lines(&t);
    got.sort();
    assert_eq!(got, ["src/lib.rs", "src/main.rs"]);
    let (t, _) = ok(&sb, "find", json!({"pattern": "src/**/*.txt"}));
    assert_eq!(body_lines(&t), ["src/sub/kept.txt"]);
    let (t, d) = ok(&sb, "find", json!({"pattern": "*.txt", "path": "src"}));
    assert_eq!(body_lines(&t), ["sub/kept.txt"]);
    assert_eq!(d["path"], "src");
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.zig"}));
    assert_eq!(t, "no files match \"*.zig\" in .");
    let e = fails(&sb, "find", json!({"pattern": "src/[a"}));
    assert!(e.contains("invalid glob"), "{e}");
    let e = fails(&sb, "find", json!({"pattern": "*", "path": "nowhere"}));
    assert!(e.contains("not found"), "{e}");
}

#[test]
fn find_uses_the_same_ignore_rules_as_grep() {
    let sb = Sandbox::new();
    project(&sb);
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.txt"}));
    let mut got = body_lines(&t);
    got.sort();
    assert_eq!(got, ["local.txt", "src/sub/kept.txt"]);
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.txt", "no_ignore": true}));
    let mut got = body_lines(&t);
    got.sort();
    assert_eq!(
        got,
        [
            "gen.txt",
            "local.txt",
            "skip.txt",
            "src/sub/kept.txt",
            "src/sub/local.txt"
        ]
    );
    let (t, _) = ok(
        &sb,
        "find",
        json!({"pattern": "*.txt", "include_hidden": true}),
    );
    assert!(body_lines(&t).contains(&".hidden/h.txt"), "{t}");
}

#[test]
fn find_lists_newest_first() {
    let sb = Sandbox::new();
    let now = SystemTime::now();
    for (name, age_s) in [("old.md", 3000), ("newest.md", 10), ("middle.md", 500)] {
        let p = put(&sb, name, "x");
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(now - Duration::from_secs(age_s)).unwrap();
    }
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.md"}));
    assert_eq!(t, "newest.md\nmiddle.md\nold.md");
}

#[test]
fn find_shows_1000_paths_by_default_and_counts_the_rest() {
    let sb = Sandbox::new();
    for i in 0..1150 {
        put(&sb, &format!("d{}/f{i:04}.dat", i % 7), "");
    }
    let (t, d) = ok(&sb, "find", json!({"pattern": "*.dat"}));
    assert_eq!(body_lines(&t).len(), 1000);
    assert!(
        t.ends_with("[fen: 150 more matches not shown; narrow the pattern or raise limit]"),
        "{}",
        &t[t.len() - 100..]
    );
    assert_eq!(
        (d["total"].as_u64(), d["rest"].as_u64()),
        (Some(1150), Some(150))
    );
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.dat", "limit": 10}));
    assert_eq!(body_lines(&t).len(), 10);
    assert!(t.contains("1140 more matches"), "{t}");
}

#[test]
fn find_does_not_follow_symlinks_unless_asked() {
    let sb = Sandbox::new();
    put(&sb, "real/inside.txt", "x");
    std::os::unix::fs::symlink("real", sb.cwd().join("alias")).unwrap();
    let (t, _) = ok(&sb, "find", json!({"pattern": "*.txt"}));
    assert_eq!(body_lines(&t), ["real/inside.txt"]);
    let (t, _) = ok(
        &sb,
        "find",
        json!({"pattern": "*.txt", "follow_symlinks": true}),
    );
    let mut got = body_lines(&t);
    got.sort();
    assert_eq!(got, ["alias/inside.txt", "real/inside.txt"]);
}

#[test]
fn find_following_a_symlink_loop_terminates_and_reports_it() {
    let sb = Sandbox::new();
    put(&sb, "a/file.txt", "x");
    std::os::unix::fs::symlink("..", sb.cwd().join("a/up")).unwrap();
    std::os::unix::fs::symlink("../a", sb.cwd().join("a/self")).unwrap();
    // run_bounded panics if this hangs.
    let (t, d) = ok(
        &sb,
        "find",
        json!({"pattern": "*.txt", "follow_symlinks": true}),
    );
    assert_eq!(body_lines(&t), ["a/file.txt"], "{t}");
    assert!(t.contains("symlink loop") && t.contains("skipped"), "{t}");
    assert!(d["loops"].as_u64().unwrap() >= 1, "{d}");
    // Without following, the links are plain entries and nothing loops.
    let (t, d) = ok(&sb, "find", json!({"pattern": "*.txt"}));
    assert_eq!(t, "a/file.txt");
    assert_eq!(d["loops"], 0);
    // grep over the same tree terminates too.
    let (t, _) = ok(&sb, "grep", json!({"pattern": "x"}));
    assert!(t.starts_with("a/file.txt:1:x"), "{t}");
}

/// Issue 11.5: a binary file named explicitly was skipped; it is searched, and said so.
#[test]
fn grep_skips_a_binary_file_named_explicitly() {
    let sb = Sandbox::new();
    put(&sb, "blob.bin", b"needle\0\x01\x02binary\n");
    let (t, _) = ok(
        &sb,
        "grep",
        json!({"pattern": "needle", "path": "blob.bin"}),
    );
    assert!(t.contains("1:needle"), "{t}");
    assert!(
        t.contains("is binary") && t.contains("searched it anyway"),
        "{t}"
    );
}
