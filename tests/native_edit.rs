//! Integration tests of the edit engine and the atomic-write helpers: in-memory cases as a table,
//! then real files in temp dirs for batches, stale reads, symlinks and permissions.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use fen::native::edit::{
    apply_batch, apply_edits, apply_edits_owned, BatchError, Edit, EditError, FileEdits, Strategy,
};
use fen::native::fs::{self as nfs, FileStamp};

/// What a table case expects.
enum Expect {
    /// New content and the strategy of each edit.
    Ok(&'static str, &'static [Strategy]),
    /// Fragments the error message must contain.
    Err(&'static [&'static str]),
}

struct Case {
    name: &'static str,
    file: &'static str,
    edits: Vec<Edit>,
    expect: Expect,
}

fn case(name: &'static str, file: &'static str, edits: Vec<Edit>, expect: Expect) -> Case {
    Case {
        name,
        file,
        edits,
        expect,
    }
}

fn e(old: &str, new: &str) -> Edit {
    Edit::new(old, new)
}

fn cases() -> Vec<Case> {
    use Expect::{Err, Ok};
    use Strategy::*;
    vec![
        // ---- strategies ----
        case(
            "exact",
            "fn a() {}\nfn b() {}\n",
            vec![e("fn b() {}", "fn b() { 1 }")],
            Ok("fn a() {}\nfn b() { 1 }\n", &[Exact]),
        ),
        case(
            "line endings: LF old_string in CRLF file, new gets CRLF",
            "a\r\nb\r\nc\r\n",
            vec![e("a\nb\n", "x\ny\n")],
            Ok("x\r\ny\r\nc\r\n", &[LineEndings]),
        ),
        case(
            "line endings: CRLF old_string in LF file",
            "a\nb\nc\n",
            vec![e("a\r\nb", "x\r\ny")],
            Ok("x\ny\nc\n", &[LineEndings]),
        ),
        case(
            "exact single line in CRLF file: multi-line new_string gets CRLF",
            "a\r\nb\r\n",
            vec![e("a", "a1\na2")],
            Ok("a1\r\na2\r\nb\r\n", &[Exact]),
        ),
        case(
            "trailing whitespace",
            "let x = 1;   \nlet y = 2;\t\n",
            vec![e("let x = 1;\nlet y = 2;", "let x = 3;\nlet y = 4;")],
            Ok("let x = 3;\nlet y = 4;\t\n", &[TrailingWhitespace]),
        ),
        case(
            "trailing whitespace + CRLF",
            "a  \r\nb \r\nc\r\n",
            vec![e("a\nb\n", "x\n")],
            Ok("x\r\nc\r\n", &[TrailingWhitespace]),
        ),
        case(
            "indentation: file indented deeper, new_string re-indented",
            "fn f() {\n    if a {\n        b();\n    }\n}\n",
            vec![e("if a {\n    b();\n}\n", "if a {\n    c();\n\n    d();\n}\n")],
            Ok(
                "fn f() {\n    if a {\n        c();\n\n        d();\n    }\n}\n",
                &[Indentation],
            ),
        ),
        case(
            "indentation: old_string indented deeper than file",
            "if a {\n\tb();\n}\n",
            vec![e("\tif a {\n\t\tb();\n\t}", "\tif a {\n\t\tc();\n\t}")],
            Ok("if a {\n\tc();\n}\n", &[Indentation]),
        ),
        case(
            "indentation in a CRLF file keeps CRLF",
            "{\r\n    a();\r\n    b();\r\n}\r\n",
            vec![e("a();\nb();\n", "x();\ny();\n")],
            Ok("{\r\n    x();\r\n    y();\r\n}\r\n", &[Indentation]),
        ),
        case(
            "unicode with replace_all",
            "\u{201C}a\u{201D} and \u{201C}a\u{201D}\n",
            vec![Edit::all("\"a\"", "'b'")],
            Ok("'b' and 'b'\n", &[Unicode]),
        ),
        case(
            "unicode: curly quotes and em dash",
            "say(\u{201C}hi\u{201D}) \u{2014} ok\n",
            vec![e("say(\"hi\") - ok", "say(\"bye\")")],
            Ok("say(\"bye\")\n", &[Unicode]),
        ),
        case(
            "unicode: non-breaking space and single quotes",
            "it\u{2019}s\u{00A0}here\n",
            vec![e("it's here", "gone")],
            Ok("gone\n", &[Unicode]),
        ),
        case(
            "block anchor: middle line differs",
            "fn compute() {\n    let a = 1;\n    let b = 2;\n    let c = a + b;\n    c\n}\nfn other() {}\n",
            vec![e(
                "fn compute() {\n    let a = 1;\n    let b = 3;\n    let c = a + b;\n    c\n}",
                "fn compute() {\n    42\n}",
            )],
            Ok("fn compute() {\n    42\n}\nfn other() {}\n", &[BlockAnchor]),
        ),
        case(
            "block anchor: indentation shift applied to new_string",
            "impl X {\n    fn f() {\n        one();\n        two();\n        three();\n    }\n}\n",
            vec![e(
                "fn f() {\n    one();\n    tow();\n    three();\n}\n",
                "fn f() {\n    four();\n}\n",
            )],
            Ok("impl X {\n    fn f() {\n        four();\n    }\n}\n", &[BlockAnchor]),
        ),
        // Issue 11.2: the header moved by one amount and the body by another; re-indenting by
        // the first line's shift moved the body from 4 spaces to 2.
        case(
            "block anchor flattens indentation: refused when lines shifted by different amounts",
            "if ready:\n    start()\n    wait()\n    finish()\nend\n",
            vec![e(
                "  if ready:\n    start()\n    wiat()\n    finish()\n  end\n",
                "  if ready:\n    begin()\n  end\n",
            )],
            Err(&["edit 1:", "lines 1-5", "block anchor", "indented differently", "copy old_string exactly"]),
        ),
        case(
            "block anchor: a uniform shift with fewer lines keeps relative indentation",
            "    if ready:\n        start()\n        finish()\n    end\n",
            vec![e(
                "if ready:\n    start()\n    wait()\n    finish()\nend\n",
                "if ready:\n    begin()\nend\n",
            )],
            Ok("    if ready:\n        begin()\n    end\n", &[BlockAnchor]),
        ),
        // Issue 11.5: "at lines 2, 2, 2, 2" for four matches on one line.
        case(
            "ambiguous matches on one line say how many on that line",
            "x\nab ab ab ab\n",
            vec![e("ab", "c")],
            Err(&["edit 1: old_string is not unique: 4 matches on line 2 (exact match)", "replace_all"]),
        ),
        case(
            "ambiguous matches group repeated lines",
            "ab ab\nx\nab\n",
            vec![e("ab", "c")],
            Err(&["matches 3 places (exact match) at lines 1 (2 matches), 3"]),
        ),
        case(
            "replace_all",
            "a.b a.b\na.b",
            vec![Edit::all("a.b", "c")],
            Ok("c c\nc", &[Exact]),
        ),
        case(
            "edits apply to the original snapshot, not sequentially",
            "a b",
            vec![e("a", "b"), e("b", "c")],
            Ok("b c", &[Exact, Exact]),
        ),
        // ---- preservation ----
        case(
            "BOM kept, match after BOM",
            "\u{FEFF}hello\nworld\n",
            vec![e("hello", "bye")],
            Ok("\u{FEFF}bye\nworld\n", &[Exact]),
        ),
        case(
            "BOM + CRLF",
            "\u{FEFF}a\r\nb\r\n",
            vec![e("a\nb", "x\ny")],
            Ok("\u{FEFF}x\r\ny\r\n", &[LineEndings]),
        ),
        case(
            "mixed endings: LF region stays LF",
            "a\r\nb\nc\r\n",
            vec![e("b\n", "x\ny\n")],
            Ok("a\r\nx\ny\nc\r\n", &[Exact]),
        ),
        case(
            "mixed endings: CRLF region becomes CRLF",
            "a\r\nb\nc\r\n",
            vec![e("a\r\n", "p\nq\n")],
            Ok("p\r\nq\r\nb\nc\r\n", &[Exact]),
        ),
        case(
            "no trailing newline stays absent",
            "a\nb",
            vec![e("b", "c")],
            Ok("a\nc", &[Exact]),
        ),
        case(
            "trailing newline kept with fuzzy last-line match",
            "x = 1 \ny = 2 \n",
            vec![e("x = 1\ny = 2", "z = 3")],
            Ok("z = 3 \n", &[TrailingWhitespace]),
        ),
        // ---- errors ----
        case(
            "not found: closest region and first difference",
            "fn main() {\n    let x = 1;\n    println!(x);\n}\n",
            vec![e("    let x = 2;\n    println!(x);", "")],
            Err(&[
                "edit 1: old_string not found",
                "closest region: lines 2-3",
                "first difference at line 2, column 13",
                "file:       \"    let x = 1;\"",
                "old_string: \"    let x = 2;\"",
            ]),
        ),
        case(
            "not found: single line similar",
            "alpha\nlet value = compute(1);\nomega\n",
            vec![e("let value = compute(2);", "x")],
            Err(&["lines 2-2", "line 2, column 21"]),
        ),
        case(
            "not found: second edit is named",
            "one\ntwo\n",
            vec![e("one", "1"), e("three", "3")],
            Err(&["edit 2: old_string not found"]),
        ),
        case(
            "ambiguous lists every line",
            "foo\nbar\nfoo\nfoo bar\n",
            vec![e("foo", "baz")],
            Err(&["edit 1: old_string matches 3 places", "exact", "lines 1, 3, 4", "replace_all"]),
        ),
        case(
            "ambiguous counts overlapping occurrences",
            "aaa\n",
            vec![e("aa", "b")],
            Err(&["2 matches on line 1"]),
        ),
        case(
            "replace_all with overlapping occurrences",
            "aaa\n",
            vec![Edit::all("aa", "b")],
            Err(&["edit 1: replace_all: occurrences of old_string overlap each other"]),
        ),
        case(
            "ambiguous fuzzy match",
            "if a {\n    x();\n}\nif a {\n    x();\n}\n",
            vec![e("  if a {\n      x();\n  }", "y")],
            Err(&["matches 2 places", "indentation", "lines 1, 4"]),
        ),
        case(
            "overlapping edits",
            "abc\ndef\nghi\n",
            vec![e("ghi", "G"), e("abc\ndef", "x"), e("def\ngh", "y")],
            Err(&["edits 2 and 3 overlap (lines 1-2 and 2-3)"]),
        ),
        case(
            "CRLF hint when LF old_string still fails",
            "a\r\nb\r\n",
            vec![e("a\nc", "x")],
            Err(&["hint: file uses CRLF line endings; old_string uses LF"]),
        ),
        case(
            "no-op edit",
            "a\n",
            vec![e("a", "a")],
            Err(&["edit 1: old_string and new_string are identical"]),
        ),
        case(
            "no changes overall",
            "x  \n",
            vec![e("x\n", "x  \n")],
            Err(&["no changes"]),
        ),
        case(
            "empty old_string points to write",
            "a\n",
            vec![e("", "b")],
            Err(&["edit 1: old_string is empty", "write tool"]),
        ),
        case("no edits", "a\n", vec![], Err(&["no edits given"])),
    ]
}

#[test]
fn table_of_in_memory_cases() {
    let mut failures = Vec::new();
    for c in cases() {
        let result = apply_edits(c.file.as_bytes(), &c.edits);
        match (&c.expect, result) {
            (Expect::Ok(want, strategies), Ok(out)) => {
                let owned = apply_edits_owned(c.file.as_bytes().to_vec(), &c.edits, "file");
                if owned.as_ref().ok() != Some(&out) {
                    failures.push(format!("{}: in-place variant differs: {owned:?}", c.name));
                }
                let got = String::from_utf8_lossy(&out.new_bytes);
                if got != *want || out.strategies != *strategies {
                    failures.push(format!(
                        "{}: got {:?} via {:?}, want {:?} via {:?}",
                        c.name, got, out.strategies, want, strategies
                    ));
                }
            }
            (Expect::Err(fragments), Err(err)) => {
                let msg = err.to_string();
                for f in fragments.iter() {
                    if !msg.contains(f) {
                        failures.push(format!("{}: message lacks {f:?}:\n{msg}", c.name));
                    }
                }
            }
            (Expect::Ok(..), Err(err)) => {
                failures.push(format!("{}: unexpected error: {err}", c.name))
            }
            (Expect::Err(_), Ok(out)) => failures.push(format!(
                "{}: expected an error, got {:?}",
                c.name,
                String::from_utf8_lossy(&out.new_bytes)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn outcome_reports_diff_count_and_first_line() {
    let file = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\n";
    let out = apply_edits(file.as_bytes(), &[e("l6", "six"), Edit::all("l2", "two")]).unwrap();
    assert_eq!(out.replacements, 2);
    assert_eq!(out.first_changed_line, 2);
    assert!(out.diff.contains("@@ -1,8 +1,8 @@"), "{}", out.diff);
    assert!(
        out.diff.contains("-l2\n+two\n") && out.diff.contains("-l6\n+six\n"),
        "{}",
        out.diff
    );
}

#[test]
fn non_utf8_is_refused() {
    let err = apply_edits(b"ok\n\xff\xfe\n", &[e("ok", "fine")]).unwrap_err();
    assert!(
        matches!(err, EditError::NotUtf8 { offset: 3, line: 2 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("not valid UTF-8"));
}

#[test]
fn ambiguity_message_is_bounded() {
    let file = "x\n".repeat(1000);
    let err = apply_edits(file.as_bytes(), &[e("x", "y")]).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("matches 1000 places") && msg.contains("and 980 more"),
        "{msg}"
    );
    assert!(msg.len() < 500, "{msg}");
}

// ---------------------------------------------------------------- files

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, content).unwrap();
    p
}

fn fe(path: &Path, edits: Vec<Edit>) -> FileEdits {
    FileEdits {
        path: path.to_path_buf(),
        edits,
        expected: None,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn batch_writes_all_files_and_returns_fresh_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.txt", b"alpha\n");
    let b = write(dir.path(), "b.txt", b"beta\r\n");
    let out = apply_batch(&[
        fe(&a, vec![e("alpha", "ALPHA")]),
        fe(&b, vec![e("beta\n", "B\nB\n")]),
    ])
    .unwrap();
    assert_eq!(fs::read(&a).unwrap(), b"ALPHA\n");
    assert_eq!(fs::read(&b).unwrap(), b"B\r\nB\r\n");
    assert_eq!(out[1].outcome.strategies, vec![Strategy::LineEndings]);
    assert_eq!(out[0].stamp, nfs::stamp(&a).unwrap());
    assert_eq!(out[1].stamp, nfs::stamp(&b).unwrap());
    assert!(out[0].outcome.diff.contains("a.txt"));
    assert_eq!(entries(dir.path()), vec!["a.txt", "b.txt"]);
}

#[test]
fn batch_is_all_or_nothing_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.txt", b"keep me\n");
    let b = write(dir.path(), "b.txt", b"other\n");
    let before = fs::metadata(&a).unwrap();
    let err = apply_batch(&[
        fe(&a, vec![e("keep", "change")]),
        fe(&b, vec![e("other", "x"), e("missing", "y")]),
    ])
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("b.txt") && msg.contains("edit 2: old_string not found"),
        "{msg}"
    );
    assert!(msg.contains("no file was changed"), "{msg}");
    assert_eq!(fs::read(&a).unwrap(), b"keep me\n");
    let after = fs::metadata(&a).unwrap();
    assert_eq!(
        (before.mtime(), before.mtime_nsec(), before.ino()),
        (after.mtime(), after.mtime_nsec(), after.ino())
    );
    assert_eq!(fs::read(&b).unwrap(), b"other\n");
    assert_eq!(entries(dir.path()), vec!["a.txt", "b.txt"]);
}

#[test]
fn batch_refuses_same_file_twice_even_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.txt", b"one two\n");
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    for second in [&a, &link] {
        let err = apply_batch(&[fe(&a, vec![e("one", "1")]), fe(second, vec![e("two", "2")])])
            .unwrap_err();
        assert!(
            matches!(
                err,
                BatchError::DuplicatePath {
                    first: 1,
                    second: 2,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("listed twice"), "{err}");
    }
    assert_eq!(fs::read(&a).unwrap(), b"one two\n");
}

#[test]
fn stale_reads_are_refused_but_touch_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "s.txt", b"value = 1\n");
    let stamp: FileStamp = nfs::stamp(&p).unwrap();
    let with_stamp = |s: FileStamp| FileEdits {
        path: p.clone(),
        edits: vec![e("value", "val")],
        expected: Some(s),
    };

    // Content change, same size.
    fs::write(&p, b"value = 2\n").unwrap();
    let msg = apply_batch(&[with_stamp(stamp)]).unwrap_err().to_string();
    assert!(
        msg.contains("changed on disk since last read") && msg.contains("same size"),
        "{msg}"
    );
    assert_eq!(fs::read(&p).unwrap(), b"value = 2\n");

    // Size change.
    fs::write(&p, b"value = 10\n").unwrap();
    let msg = apply_batch(&[with_stamp(stamp)]).unwrap_err().to_string();
    assert!(msg.contains("size 10 -> 11 bytes"), "{msg}");

    // Touch only: same content, new mtime -> allowed.
    fs::write(&p, b"value = 1\n").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(30);
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(later)
        .unwrap();
    apply_batch(&[with_stamp(stamp)]).unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"val = 1\n");
}

#[test]
fn symlink_target_is_edited_and_link_kept() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("real")).unwrap();
    let target = write(&dir.path().join("real"), "t.txt", b"hello\n");
    let link = dir.path().join("l.txt");
    std::os::unix::fs::symlink("real/t.txt", &link).unwrap();
    let out = apply_batch(&[fe(&link, vec![e("hello", "bye")])]).unwrap();
    assert_eq!(out[0].target, target);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_link(&link).unwrap(), PathBuf::from("real/t.txt"));
    assert_eq!(fs::read(&target).unwrap(), b"bye\n");
}

#[test]
fn file_mode_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "run.sh", b"#!/bin/sh\necho a\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    apply_batch(&[fe(&p, vec![e("echo a", "echo b")])]).unwrap();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    assert_eq!(fs::read(&p).unwrap(), b"#!/bin/sh\necho b\n");
}

#[test]
fn missing_file_and_non_utf8_file_are_reported_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.txt");
    let msg = apply_batch(&[fe(&missing, vec![e("a", "b")])])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("nope.txt") && msg.contains("no such file"),
        "{msg}"
    );

    let bin = write(dir.path(), "bin.dat", b"abc\x80\n");
    let msg = apply_batch(&[fe(&bin, vec![e("abc", "x")])])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("bin.dat") && msg.contains("not valid UTF-8"),
        "{msg}"
    );
    assert_eq!(fs::read(&bin).unwrap(), b"abc\x80\n");
}

/// Permission checks mean nothing to root, so as root this re-runs the named test as `nobody`.
/// Returns true when the caller should run the body itself.
fn run_unprivileged(test_name: &str) -> bool {
    let euid = fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    if euid != 0 {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    // Inside the one test binary, a test's full name carries its module.
    let full_name = format!("native_edit::{test_name}");
    let out = {
        use std::os::unix::process::CommandExt;
        Command::new(exe)
            .args([
                full_name.as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TMPDIR", "/tmp")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "unprivileged run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

#[test]
fn read_only_directory_gives_clear_error_and_leaves_nothing() {
    if !run_unprivileged("read_only_directory_gives_clear_error_and_leaves_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let p = write(&ro, "f.txt", b"content\n");
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    let err = apply_batch(&[fe(&p, vec![e("content", "changed")])]).unwrap_err();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("permission denied") && msg.contains("temporary file"),
        "{msg}"
    );
    assert_eq!(fs::read(&p).unwrap(), b"content\n");
    assert_eq!(entries(&ro), vec!["f.txt"]);
}

#[test]
fn read_only_file_is_not_replaced() {
    if !run_unprivileged("read_only_file_is_not_replaced") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ro.txt", b"content\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
    let msg = apply_batch(&[fe(&p, vec![e("content", "changed")])])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("permission denied") && msg.contains("read-only"),
        "{msg}"
    );
    assert_eq!(fs::read(&p).unwrap(), b"content\n");
    assert_eq!(entries(dir.path()), vec!["ro.txt"]);
}
