//! Integration tests for `fen::native::search` on real temporary trees.

use std::fs;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use fen::native::search::{
    find, grep, list_dir, render_list, render_notes, render_text, EntryKind, FindOptions,
    GrepOptions, GrepResult, OutputMode, SearchError,
};

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, content).unwrap();
}

fn run(opts: &GrepOptions) -> GrepResult {
    grep(opts, &AtomicBool::new(false)).unwrap()
}

fn paths(result: &GrepResult) -> Vec<&str> {
    result.files.iter().map(|f| f.path.as_str()).collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A small project: nested ignore files with negation, a hidden dir, an ignored dir.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "build/\n*.log\n");
    write(root, "src/main.rs", "fn main() {\n    needle();\n}\n");
    write(root, "src/lib.rs", "pub fn needle() {}\n");
    write(root, "src/gen/.gitignore", "*.gen.rs\n!keep.gen.rs\n");
    write(root, "src/gen/skip.gen.rs", "needle\n");
    write(root, "src/gen/keep.gen.rs", "needle\n");
    write(root, "docs/.ignore", "draft.md\n");
    write(root, "docs/draft.md", "needle draft\n");
    write(root, "docs/guide.md", "a needle guide\n");
    write(root, "build/out.rs", "needle in build\n");
    write(root, "app.log", "needle log\n");
    write(root, ".hidden/stash.rs", "needle hidden\n");
    write(root, ".git/config", "needle in git\n");
    dir
}

#[test]
fn respects_nested_gitignore_negation_ignore_files_and_hidden() {
    let dir = project();
    let result = run(&GrepOptions::new("needle", dir.path()));
    assert_eq!(
        paths(&result),
        vec![
            "docs/guide.md",
            "src/gen/keep.gen.rs",
            "src/lib.rs",
            "src/main.rs"
        ]
    );
    // skip.gen.rs, draft.md, build/out.rs, app.log are ignored; .hidden is hidden (not ignored).
    assert_eq!(result.ignored_matching_files, 4);
    assert!(result.ignored_scan_complete);
    let notes = render_notes(&result).join("\n");
    assert!(
        notes.contains("4 ignored files also match; pass no_ignore=true"),
        "{notes}"
    );
}

#[test]
fn no_ignore_and_include_hidden_widen_the_search_but_never_enter_git() {
    let dir = project();
    let mut opts = GrepOptions::new("needle", dir.path());
    opts.no_ignore = true;
    opts.include_hidden = true;
    let result = run(&opts);
    let found = paths(&result);
    for expected in [
        ".hidden/stash.rs",
        "app.log",
        "build/out.rs",
        "docs/draft.md",
        "src/gen/skip.gen.rs",
    ] {
        assert!(
            found.contains(&expected),
            "{expected} missing from {found:?}"
        );
    }
    assert!(!found.iter().any(|p| p.starts_with(".git/")), "{found:?}");
    assert_eq!(result.ignored_matching_files, 0);

    let mut hidden_only = GrepOptions::new("needle", dir.path());
    hidden_only.include_hidden = true;
    let found = run(&hidden_only);
    assert!(paths(&found).contains(&".hidden/stash.rs"));
    assert!(!paths(&found).contains(&"build/out.rs"));
}

#[test]
fn explicitly_named_ignored_or_hidden_paths_are_searched() {
    let dir = project();
    let build = run(&GrepOptions::new("needle", dir.path().join("build")));
    assert_eq!(paths(&build), vec!["out.rs"]);
    let hidden = run(&GrepOptions::new("needle", dir.path().join(".hidden")));
    assert_eq!(paths(&hidden), vec!["stash.rs"]);
    let log_path = dir.path().join("app.log");
    let log = run(&GrepOptions::new("needle", &log_path));
    assert_eq!(log.files.len(), 1);
    assert_eq!(log.files[0].path, log_path.to_string_lossy());
    assert_eq!(log.files[0].matches[0].text, "needle log");
}

#[test]
fn binary_files_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "needle\n");
    fs::write(dir.path().join("blob.dat"), b"needle\x00\x01\x02needle").unwrap();
    fs::write(dir.path().join("img.png"), b"needle").unwrap();
    let result = run(&GrepOptions::new("needle", dir.path()));
    // Content decides: text named like an image is searched, NUL-holding data is skipped.
    assert_eq!(paths(&result), vec!["a.txt", "img.png"]);
    assert_eq!(result.skipped_binary, 1);
    assert_eq!(result.searched_binary, None);
}

/// Issue 11.5: a binary file named explicitly was skipped; it is searched, and said so.
#[test]
fn grep_skips_a_binary_file_named_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("blob.dat"), b"needle\x00\x01\x02needle\n").unwrap();
    let explicit = run(&GrepOptions::new("needle", dir.path().join("blob.dat")));
    assert_eq!(explicit.files.len(), 1);
    assert_eq!(explicit.skipped_binary, 0);
    assert_eq!(explicit.searched_binary.as_deref(), Some("binary data"));
    let notes = render_notes(&explicit);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("is binary") && n.contains("searched it anyway")),
        "{notes:?}"
    );
}

#[test]
fn regex_errors_carry_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let err = grep(
        &GrepOptions::new("foo(bar", dir.path()),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    match &err {
        SearchError::Pattern {
            offset, message, ..
        } => {
            assert_eq!(*offset, Some(3));
            assert!(message.contains("unclosed group"), "{message}");
        }
        other => panic!("expected a pattern error, got {other:?}"),
    }
    assert!(err.to_string().contains("literal=true"));
}

#[test]
fn literal_patterns_with_metacharacters_and_option_like_patterns() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.txt",
        "call foo(bar) here\nfooXbar\n-e flag\n",
    );
    let mut opts = GrepOptions::new("foo(bar)", dir.path());
    opts.literal = true;
    let result = run(&opts);
    assert_eq!(result.total_matches, 1);
    assert_eq!(result.files[0].matches[0].line_number, 1);

    let dash = run(&GrepOptions::new("-e", dir.path()));
    assert_eq!(dash.total_matches, 1);
    assert_eq!(dash.files[0].matches[0].text, "-e flag");
}

#[test]
fn ignore_case() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "Needle\nNEEDLE\nneedle\nhay\n");
    assert_eq!(
        run(&GrepOptions::new("needle", dir.path())).total_matches,
        1
    );
    let mut opts = GrepOptions::new("needle", dir.path());
    opts.ignore_case = true;
    assert_eq!(run(&opts).total_matches, 3);
}

#[test]
fn context_lines_are_marked_and_groups_separated() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (1..=20)
        .map(|i| {
            if i == 5 || i == 15 {
                format!("match {i}")
            } else {
                format!("line {i}")
            }
        })
        .collect();
    write(dir.path(), "a.txt", &(lines.join("\n") + "\n"));
    let mut opts = GrepOptions::new("match", dir.path());
    opts.context = 1;
    let result = run(&opts);
    let file = &result.files[0];
    let shape: Vec<(u64, bool)> = file
        .matches
        .iter()
        .map(|l| (l.line_number, l.is_context))
        .collect();
    assert_eq!(
        shape,
        vec![
            (4, true),
            (5, false),
            (6, true),
            (14, true),
            (15, false),
            (16, true)
        ]
    );
    let text = render_text(&result, OutputMode::Content);
    assert_eq!(
        text,
        "a.txt-4-line 4\na.txt:5:match 5\na.txt-6-line 6\n--\n\
         a.txt-14-line 14\na.txt:15:match 15\na.txt-16-line 16\n"
    );
}

#[test]
fn output_modes_render_like_ripgrep() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b.txt", "x\nx\ny\n");
    write(dir.path(), "a.txt", "x\n");
    write(dir.path(), "c.txt", "y\n");

    let content = run(&GrepOptions::new("x", dir.path()));
    assert_eq!(
        render_text(&content, OutputMode::Content),
        "a.txt:1:x\nb.txt:1:x\nb.txt:2:x\n"
    );

    let mut opts = GrepOptions::new("x", dir.path());
    opts.output_mode = OutputMode::FilesWithMatches;
    let files = run(&opts);
    assert!(files.files.iter().all(|f| f.matches.is_empty()));
    assert_eq!(
        render_text(&files, OutputMode::FilesWithMatches),
        "a.txt\nb.txt\n"
    );

    opts.output_mode = OutputMode::Count;
    let counts = run(&opts);
    assert_eq!(counts.total_matches, 3);
    assert_eq!(
        render_text(&counts, OutputMode::Count),
        "a.txt:1\nb.txt:2\n"
    );
}

#[test]
fn head_limit_truncates_and_reports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write(dir.path(), &format!("f{i}.txt"), "hit\nhit\nhit\n");
    }
    let mut opts = GrepOptions::new("hit", dir.path());
    opts.head_limit = 4;
    let result = run(&opts);
    let shown: usize = result
        .files
        .iter()
        .map(|f| f.matches.iter().filter(|l| !l.is_context).count())
        .sum();
    assert_eq!(shown, 4);
    assert_eq!(paths(&result), vec!["f0.txt", "f1.txt"]);
    assert!(result.truncated);
    assert_eq!(result.total_matches, 15);
    assert_eq!(result.omitted_matches, 11);
    assert_eq!(result.omitted_files, 3);

    opts.output_mode = OutputMode::FilesWithMatches;
    opts.head_limit = 2;
    let files = run(&opts);
    assert_eq!(paths(&files), vec!["f0.txt", "f1.txt"]);
    assert!(files.truncated);
    assert_eq!(files.omitted_files, 3);
    assert_eq!(files.total_files, 5);
}

#[test]
fn results_are_deterministic_and_sorted_by_path() {
    let dir = tempfile::tempdir().unwrap();
    for i in (0..60).rev() {
        write(dir.path(), &format!("d{}/f{i:02}.txt", i % 7), "hit\n");
    }
    let first = run(&GrepOptions::new("hit", dir.path()));
    let mut sorted = paths(&first);
    sorted.sort();
    assert_eq!(paths(&first), sorted);
    for _ in 0..5 {
        assert_eq!(run(&GrepOptions::new("hit", dir.path())), first);
    }
}

#[test]
fn glob_filter_by_name_path_and_list() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/a.rs", "hit\n");
    write(dir.path(), "src/deep/b.ts", "hit\n");
    write(dir.path(), "lib/c.ts", "hit\n");
    write(dir.path(), "Cargo.toml", "hit\n");
    let with = |glob: &str| {
        let mut opts = GrepOptions::new("hit", dir.path());
        opts.glob = Some(glob.to_string());
        paths(&run(&opts))
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(with("*.rs"), vec!["src/a.rs"]);
    assert_eq!(with("src/**/*.ts"), vec!["src/deep/b.ts"]);
    assert_eq!(with("*.rs,*.toml"), vec!["Cargo.toml", "src/a.rs"]);
    assert_eq!(with("*.{ts,toml}").len(), 3);
}

#[test]
fn long_lines_are_clipped_around_the_match() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}NEEDLE{}\n", "x".repeat(5000), "y".repeat(5000));
    write(dir.path(), "min.js", &line);
    let result = run(&GrepOptions::new("NEEDLE", dir.path()));
    let text = &result.files[0].matches[0].text;
    assert!(text.contains("NEEDLE"));
    assert!(text.starts_with("...") && text.ends_with("..."));
    assert!(text.chars().count() <= 306, "{}", text.len());
}

#[test]
fn missing_root_suggests_similar_names() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "Sources/a.txt", "x\n");
    let err = grep(
        &GrepOptions::new("x", dir.path().join("sources")),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(
        matches!(&err, SearchError::NotFound { suggestions, .. } if suggestions == &vec!["Sources".to_string()]),
        "{err:?}"
    );
    assert!(err.to_string().contains("did you mean: Sources?"));
}

#[test]
fn cancellation_stops_the_search() {
    let dir = project();
    let cancel = AtomicBool::new(true);
    assert!(matches!(
        grep(&GrepOptions::new("needle", dir.path()), &cancel),
        Err(SearchError::Cancelled)
    ));
    assert!(matches!(
        find(&FindOptions::new("*", dir.path()), &cancel),
        Err(SearchError::Cancelled)
    ));
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn find_orders_by_mtime_newest_first_ties_by_path() {
    let dir = project();
    let root = dir.path();
    set_mtime(&root.join("src/main.rs"), 300);
    set_mtime(&root.join("src/lib.rs"), 10);
    set_mtime(&root.join("src/gen/keep.gen.rs"), 1000);
    let result = find(&FindOptions::new("**/*.rs", root), &AtomicBool::new(false)).unwrap();
    assert_eq!(
        result.entries,
        vec!["src/lib.rs", "src/main.rs", "src/gen/keep.gen.rs"]
    );
    assert_eq!(result.total_matched, 3);

    // Equal mtimes fall back to path order.
    let same = SystemTime::now() - Duration::from_secs(50);
    for name in ["c.md", "a.md", "b.md"] {
        write(root, &format!("eq/{name}"), "x");
        let f = fs::OpenOptions::new()
            .write(true)
            .open(root.join("eq").join(name))
            .unwrap();
        f.set_modified(same).unwrap();
    }
    let eq = find(&FindOptions::new("eq/*.md", root), &AtomicBool::new(false)).unwrap();
    assert_eq!(eq.entries, vec!["eq/a.md", "eq/b.md", "eq/c.md"]);
}

#[test]
fn find_name_pattern_matches_at_any_depth_and_respects_ignores() {
    let dir = project();
    let result = find(
        &FindOptions::new("*.md", dir.path()),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(result.entries, vec!["docs/guide.md"]);
    let mut opts = FindOptions::new("*.md", dir.path());
    opts.no_ignore = true;
    let mut all = find(&opts, &AtomicBool::new(false)).unwrap().entries;
    all.sort();
    assert_eq!(all, vec!["docs/draft.md", "docs/guide.md"]);
}

#[test]
fn find_limit_reports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write(dir.path(), &format!("f{i}.txt"), "x");
    }
    let mut opts = FindOptions::new("*.txt", dir.path());
    opts.limit = 10;
    let result = find(&opts, &AtomicBool::new(false)).unwrap();
    assert_eq!(result.entries.len(), 10);
    assert_eq!(result.total_matched, 30);
    assert_eq!(result.truncated, 20);
}

#[test]
fn find_with_symlink_loop_terminates_and_counts_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a/file.rs", "x");
    std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("a/loop")).unwrap();
    let mut opts = FindOptions::new("*.rs", dir.path());
    opts.follow_symlinks = true;
    let started = Instant::now();
    let result = find(&opts, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(result.entries, vec!["a/file.rs"]);
    assert!(result.issues.loops >= 1, "{:?}", result.issues);

    // Not following: the link is not descended and nothing is reported.
    let plain = find(
        &FindOptions::new("*.rs", dir.path()),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(plain.entries, vec!["a/file.rs"]);
    assert_eq!(plain.issues.total(), 0);

    let mut g = GrepOptions::new("x", dir.path());
    g.follow_symlinks = true;
    let grep_result = run(&g);
    assert_eq!(paths(&grep_result), vec!["a/file.rs"]);
    assert!(grep_result.issues.loops >= 1);
}

#[test]
fn permission_denied_directory_does_not_fail_the_search() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "open/a.txt", "hit\n");
    write(dir.path(), "locked/b.txt", "hit\n");
    let locked = dir.path().join("locked");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();

    let grep_result = grep(
        &GrepOptions::new("hit", dir.path()),
        &AtomicBool::new(false),
    );
    let find_result = find(
        &FindOptions::new("*.txt", dir.path()),
        &AtomicBool::new(false),
    );
    let list_result = list_dir(dir.path(), 2, 100);
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();

    let grep_result = grep_result.unwrap();
    let find_result = find_result.unwrap();
    let list_result = list_result.unwrap();
    assert!(paths(&grep_result).contains(&"open/a.txt"));
    assert!(find_result.entries.contains(&"open/a.txt".to_string()));
    if !is_root() {
        assert_eq!(paths(&grep_result), vec!["open/a.txt"]);
        assert!(grep_result.issues.permission_denied >= 1);
        assert!(find_result.issues.permission_denied >= 1);
        assert_eq!(list_result.issues.permission_denied, 1);
    }
}

#[test]
fn list_dir_marks_sorts_caps_and_skips_git_contents() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "b.txt", "");
    write(root, "A.txt", "");
    write(root, ".env", "");
    write(root, "src/main.rs", "");
    write(root, "src/util/mod.rs", "");
    write(root, ".git/HEAD", "");
    write(root, "target/debug/x", "");
    std::os::unix::fs::symlink(root.join("b.txt"), root.join("link")).unwrap();

    let flat = list_dir(root, 1, 500).unwrap();
    let shown: Vec<String> = flat.entries.iter().map(|e| e.display()).collect();
    assert_eq!(
        shown,
        vec![".env", ".git/", "A.txt", "b.txt", "link@", "src/", "target/"]
    );
    assert_eq!(flat.truncated, 0);

    let deep = list_dir(root, 2, 500).unwrap();
    let shown: Vec<String> = deep.entries.iter().map(|e| e.display()).collect();
    assert_eq!(
        shown,
        vec![
            ".env",
            ".git/",
            "A.txt",
            "b.txt",
            "link@",
            "src/",
            "src/main.rs",
            "src/util/",
            "target/",
            "target/debug/"
        ]
    );
    assert!(deep
        .entries
        .iter()
        .any(|e| e.path == "src/util" && e.kind == EntryKind::Dir));

    let capped = list_dir(root, 2, 3).unwrap();
    assert_eq!(capped.entries.len(), 3);
    assert_eq!(capped.total, 10);
    assert_eq!(capped.truncated, 7);
    assert!(render_list(&capped)
        .ends_with("... 7 more entries not shown (raise limit or list a subdirectory)\n"));

    assert!(matches!(
        list_dir(&root.join("b.txt"), 1, 10),
        Err(SearchError::Io { .. })
    ));
}

#[test]
fn gitignore_applies_outside_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".gitignore", "out/\n");
    write(dir.path(), "out/a.txt", "hit\n");
    write(dir.path(), "in/b.txt", "hit\n");
    assert!(!dir.path().join(".git").exists());
    let result = run(&GrepOptions::new("hit", dir.path()));
    assert_eq!(paths(&result), vec!["in/b.txt"]);
    assert_eq!(result.ignored_matching_files, 1);
}

#[test]
fn crlf_lines_match_end_anchors_and_are_shown_without_cr() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "win.txt", "the end\r\nnot the end here\r\n");
    let result = run(&GrepOptions::new("end$", dir.path()));
    assert_eq!(result.total_matches, 1);
    assert_eq!(result.files[0].matches[0].text, "the end");
}

#[test]
fn ignored_pass_is_skipped_when_head_limit_already_hit_and_bounded_by_scan_limit() {
    let dir = project();
    let mut opts = GrepOptions::new("needle", dir.path());
    opts.head_limit = 2;
    let result = run(&opts);
    assert!(result.truncated);
    assert_eq!(result.ignored_matching_files, 0);
    assert!(!result.ignored_scan_complete);

    let mut bounded = GrepOptions::new("needle", dir.path());
    bounded.ignored_scan_limit = 1;
    let result = run(&bounded);
    assert_eq!(result.ignored_matching_files, 1);
    assert!(!result.ignored_scan_complete);
    assert!(render_notes(&result)
        .join("\n")
        .contains("at least 1 ignored files also match"));
}
