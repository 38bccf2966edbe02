//! Content search: the core of the `grep` tool.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use grep_matcher::LineTerminator;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{DirEntry, WalkState};

use super::glob::PathGlob;
use super::walk::{self, WalkConfig, WalkIssues};
use super::{check_root, display_rel, SearchError};
use crate::native::filetype::{self, FileKind};

/// What [`grep`] collects and [`render_text`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Matching lines (with context lines when asked), grouped by file.
    #[default]
    Content,
    /// Only the paths of files that match (each file's search stops at its first match).
    FilesWithMatches,
    /// The number of matching lines per file.
    Count,
}

/// Parameters of one [`grep`] call. Build with [`GrepOptions::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct GrepOptions {
    /// Regex (Rust `regex` syntax), or plain text when `literal`.
    pub pattern: String,
    /// A file or a directory to search.
    pub path: PathBuf,
    /// Only search files selected by this glob list (`*.rs`, `src/**/*.ts`, `*.{rs,toml}`,
    /// `*.rs,*.toml`, `!*_test.go`). Not applied when `path` is itself a file.
    pub glob: Option<String>,
    /// Case-insensitive matching.
    pub ignore_case: bool,
    /// Treat `pattern` as text, not as a regex.
    pub literal: bool,
    /// Lines of context before and after each match (Content mode).
    pub context: usize,
    /// What to collect.
    pub output_mode: OutputMode,
    /// Cap on matching lines (Content) or files (FilesWithMatches, Count); 0 = no cap.
    pub head_limit: usize,
    /// Lines longer than this many characters are clipped around the match with `...`
    /// markers; 0 = no clipping.
    pub max_line_columns: usize,
    /// Also search hidden files and directories (`.git` is still skipped).
    pub include_hidden: bool,
    /// Ignore `.gitignore` / `.ignore` / git excludes.
    pub no_ignore: bool,
    /// Follow symbolic links (loops are detected and counted).
    pub follow_symlinks: bool,
    /// Upper bound on ignored files examined for [`GrepResult::ignored_matching_files`];
    /// 0 disables that second pass.
    pub ignored_scan_limit: usize,
}

impl GrepOptions {
    /// Options with the defaults: Content mode, head_limit 100, lines clipped at 300 chars,
    /// no context, ignore rules and hidden-skipping on, up to 10,000 ignored files examined.
    pub fn new(pattern: impl Into<String>, path: impl Into<PathBuf>) -> GrepOptions {
        GrepOptions {
            pattern: pattern.into(),
            path: path.into(),
            glob: None,
            ignore_case: false,
            literal: false,
            context: 0,
            output_mode: OutputMode::Content,
            head_limit: 100,
            max_line_columns: 300,
            include_hidden: false,
            no_ignore: false,
            follow_symlinks: false,
            ignored_scan_limit: 10_000,
        }
    }
}

/// One line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// 1-based line number.
    pub line_number: u64,
    /// The line without its terminator, lossily decoded, clipped to `max_line_columns`.
    pub text: String,
    /// True for a context line, false for a matching line.
    pub is_context: bool,
}

/// The results for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatches {
    /// Path relative to the search root (`/`-separated); a file root is shown as given.
    pub path: String,
    /// Lines kept for display (Content mode only; empty in the other modes).
    pub matches: Vec<GrepLine>,
    /// Matching lines in the file (1 in FilesWithMatches mode: the search stops there).
    pub count: usize,
}

/// The outcome of [`grep`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepResult {
    /// The search root as given.
    pub root: PathBuf,
    /// The mode the search ran in.
    pub mode: OutputMode,
    /// Context lines requested (drives `--` separators in [`render_text`]).
    pub context: usize,
    /// Files shown, sorted by path.
    pub files: Vec<FileMatches>,
    /// Matching lines over all files, before `head_limit` (FilesWithMatches: one per file).
    pub total_matches: usize,
    /// Files with at least one match, before `head_limit`.
    pub total_files: usize,
    /// True when `head_limit` cut the output.
    pub truncated: bool,
    /// Matching lines left out by `head_limit`.
    pub omitted_matches: usize,
    /// Files left out entirely by `head_limit`.
    pub omitted_files: usize,
    /// Files skipped as binary (a NUL byte met while searching).
    pub skipped_binary: usize,
    /// Secret-like files (`.env`, keys, `*token*`, ...) met on a directory walk and not
    /// searched: a search must not leak them. A file named explicitly is searched (and judged by
    /// the permission policy before that).
    pub skipped_secrets: usize,
    /// A file named explicitly as the search path whose content is binary: searched anyway
    /// (the user asked for it), and said so.
    pub searched_binary: Option<String>,
    /// Ignored files (by .gitignore etc.) that would match; 0 when `no_ignore`.
    pub ignored_matching_files: usize,
    /// False when the ignored-files pass stopped at `ignored_scan_limit` (making
    /// `ignored_matching_files` a lower bound) or was skipped because `head_limit` was already
    /// hit (the pass only runs when the model might otherwise conclude a match is absent).
    pub ignored_scan_complete: bool,
    /// Walk problems (unreadable directories, symlink loops) that did not stop the search.
    pub issues: WalkIssues,
}

/// Searches `opts.path` for `opts.pattern`. Polls `cancel` for every file.
pub fn grep(opts: &GrepOptions, cancel: &AtomicBool) -> Result<GrepResult, SearchError> {
    let matcher = build_matcher(opts)?;
    let glob = opts.glob.as_deref().map(PathGlob::new).transpose()?;
    let root_meta = check_root(&opts.path)?;
    let cfg = WalkConfig {
        include_hidden: opts.include_hidden,
        no_ignore: opts.no_ignore,
        follow_symlinks: opts.follow_symlinks,
    };
    let scan_ignored = !opts.no_ignore && root_meta.is_dir() && opts.ignored_scan_limit > 0;
    let job = Job {
        opts,
        matcher: &matcher,
        glob: glob.as_ref(),
        cancel,
        cancelled: AtomicBool::new(false),
        shared: Mutex::new(Shared::default()),
        record_seen: scan_ignored,
    };
    job.run(cfg);
    if job.cancelled.load(Ordering::Relaxed) {
        return Err(SearchError::Cancelled);
    }
    let shared = job
        .shared
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());

    let mut files = shared.files;
    // When the head limit is already hit the model has more than it can see; the hint about
    // ignored files only matters when it might conclude something is absent.
    let shown_units = match opts.output_mode {
        OutputMode::Content => files.iter().map(|f| f.1.count).sum(),
        OutputMode::FilesWithMatches | OutputMode::Count => files.len(),
    };
    let head_limit_hit = opts.head_limit > 0 && shown_units > opts.head_limit;
    let (ignored_matching_files, ignored_scan_complete) = if scan_ignored && !head_limit_hit {
        let seen: HashSet<PathBuf> = shared.seen.into_iter().collect();
        let scan = IgnoredScan {
            opts,
            matcher: &matcher,
            glob: glob.as_ref(),
            cancel,
            seen: &seen,
            examined: AtomicUsize::new(0),
            matching: AtomicUsize::new(0),
            incomplete: AtomicBool::new(false),
        };
        scan.run();
        if cancel.load(Ordering::Relaxed) {
            return Err(SearchError::Cancelled);
        }
        (
            scan.matching.load(Ordering::Relaxed),
            !scan.incomplete.load(Ordering::Relaxed),
        )
    } else {
        (0, !head_limit_hit)
    };

    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut result = GrepResult {
        root: opts.path.clone(),
        mode: opts.output_mode,
        context: opts.context,
        total_matches: files.iter().map(|f| f.1.count).sum(),
        total_files: files.len(),
        files: files.into_iter().map(|(_, f)| f).collect(),
        truncated: false,
        omitted_matches: 0,
        omitted_files: 0,
        skipped_binary: shared.skipped_binary,
        skipped_secrets: shared.skipped_secrets,
        searched_binary: shared.searched_binary,
        ignored_matching_files,
        ignored_scan_complete,
        issues: shared.issues,
    };
    apply_head_limit(&mut result, opts.head_limit);
    Ok(result)
}

/// Validates the pattern with regex-syntax (for the error position), then builds the matcher.
fn build_matcher(opts: &GrepOptions) -> Result<RegexMatcher, SearchError> {
    let pattern = if opts.literal {
        regex_syntax::escape(&opts.pattern)
    } else {
        opts.pattern.clone()
    };
    let pattern_error = |message: String, offset: Option<usize>| SearchError::Pattern {
        pattern: opts.pattern.clone(),
        message,
        offset,
    };
    if let Err(err) = regex_syntax::ParserBuilder::new()
        .case_insensitive(opts.ignore_case)
        .build()
        .parse(&pattern)
    {
        let offset = match &err {
            regex_syntax::Error::Parse(e) => Some(e.span().start.offset),
            regex_syntax::Error::Translate(e) => Some(e.span().start.offset),
            _ => None,
        };
        return Err(pattern_error(err.to_string(), offset));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(opts.ignore_case)
        .line_terminator(Some(b'\n'))
        // With the searcher's CRLF terminator below, `$` also matches before "\r\n".
        .crlf(true)
        .build(&pattern)
        .map_err(|err| pattern_error(err.to_string(), None))
}

/// State shared by the walker threads of the main pass.
#[derive(Default)]
struct Shared {
    files: Vec<(PathBuf, FileMatches)>,
    seen: Vec<PathBuf>,
    skipped_binary: usize,
    skipped_secrets: usize,
    searched_binary: Option<String>,
    issues: WalkIssues,
}

/// One main-pass search.
struct Job<'a> {
    opts: &'a GrepOptions,
    matcher: &'a RegexMatcher,
    glob: Option<&'a PathGlob>,
    cancel: &'a AtomicBool,
    cancelled: AtomicBool,
    shared: Mutex<Shared>,
    record_seen: bool,
}

impl Job<'_> {
    fn run(&self, cfg: WalkConfig) {
        let mut builder = walk::builder(&self.opts.path, cfg);
        builder.threads(walk::threads());
        builder.build_parallel().run(|| {
            let mut worker = Worker {
                job: self,
                // Stop at the first NUL: the file is binary and gets counted as skipped.
                searcher: new_searcher(self.opts, BinaryDetection::quit(b'\x00')),
                local: Shared::default(),
            };
            Box::new(move |entry| worker.visit(entry))
        });
    }
}

/// Per-thread state; flushes into [`Job::shared`] when the walker drops it.
struct Worker<'a> {
    job: &'a Job<'a>,
    searcher: Searcher,
    local: Shared,
}

impl Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.job.cancel.load(Ordering::Relaxed) {
            self.job.cancelled.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                self.local.issues.record(&err);
                return WalkState::Continue;
            }
        };
        if !is_searchable_file(&entry, self.job.glob, &self.job.opts.path) {
            return WalkState::Continue;
        }
        let path = entry.path();
        if self.job.record_seen {
            self.local.seen.push(path.to_path_buf());
        }
        let mut sink = FileSink::new(self.job.opts, self.job.matcher);
        // A file named explicitly is searched even when binary (and the result says so);
        // files met on the walk are skipped at their first NUL.
        let explicit = entry.depth() == 0;
        if !explicit
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(crate::native::policy::paths::secret_name)
        {
            self.local.skipped_secrets += 1;
            return WalkState::Continue;
        }
        let searched = if explicit {
            if let Ok(FileKind::Binary { kind }) = filetype::detect_file(path) {
                self.local.searched_binary = Some(kind);
            }
            new_searcher(self.job.opts, BinaryDetection::none()).search_path(
                self.job.matcher,
                path,
                &mut sink,
            )
        } else {
            self.searcher.search_path(self.job.matcher, path, &mut sink)
        };
        if let Err(err) = searched {
            self.local.issues.record_io(path, &err);
            return WalkState::Continue;
        }
        if sink.binary {
            self.local.skipped_binary += 1;
        } else if sink.count > 0 {
            let rel = display_rel(&self.job.opts.path, path);
            let group = FileMatches {
                path: rel.to_string_lossy().into_owned(),
                matches: sink.lines,
                count: sink.count,
            };
            self.local.files.push((rel, group));
        }
        WalkState::Continue
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        let mut shared = self
            .job
            .shared
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        shared.files.extend(local.files);
        shared.seen.extend(local.seen);
        shared.skipped_binary += local.skipped_binary;
        shared.skipped_secrets += local.skipped_secrets;
        if local.searched_binary.is_some() {
            shared.searched_binary = local.searched_binary;
        }
        shared.issues.merge(local.issues);
    }
}

/// A regular file (or, when following links, a link to one) selected by the glob. The glob
/// does not apply to a root that is itself a file: the caller named it.
fn is_searchable_file(entry: &DirEntry, glob: Option<&PathGlob>, root: &Path) -> bool {
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return false;
    }
    if entry.depth() == 0 {
        return true;
    }
    match glob {
        Some(glob) => glob.is_match(entry.path().strip_prefix(root).unwrap_or(entry.path())),
        None => true,
    }
}

fn new_searcher(opts: &GrepOptions, binary: BinaryDetection) -> Searcher {
    let context = if opts.output_mode == OutputMode::Content {
        opts.context
    } else {
        0
    };
    SearcherBuilder::new()
        .line_terminator(LineTerminator::crlf())
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(binary)
        .build()
}

/// Collects one file's matches.
struct FileSink<'a> {
    mode: OutputMode,
    matcher: &'a RegexMatcher,
    /// At most this many matching lines are kept per file (the head limit can show no more).
    keep: usize,
    max_cols: usize,
    lines: Vec<GrepLine>,
    kept: usize,
    count: usize,
    binary: bool,
}

impl<'a> FileSink<'a> {
    fn new(opts: &GrepOptions, matcher: &'a RegexMatcher) -> FileSink<'a> {
        FileSink {
            mode: opts.output_mode,
            matcher,
            keep: if opts.head_limit == 0 {
                usize::MAX
            } else {
                opts.head_limit
            },
            max_cols: opts.max_line_columns,
            lines: Vec::new(),
            kept: 0,
            count: 0,
            binary: false,
        }
    }

    fn push(&mut self, line_number: u64, bytes: &[u8], is_context: bool) {
        let text = clip_line(self.matcher, trim_eol(bytes), self.max_cols, is_context);
        self.lines.push(GrepLine {
            line_number,
            text,
            is_context,
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            self.count += 1;
            if self.mode == OutputMode::Content && self.kept < self.keep {
                self.kept += 1;
                self.push(first + i as u64, line, false);
            }
        }
        Ok(self.mode != OutputMode::FilesWithMatches)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        // Context after the last kept match is still wanted; context for later matches is not.
        let after_last_kept = self.kept == self.count;
        if self.kept < self.keep || after_last_kept {
            let n = ctx.line_number().unwrap_or(0);
            self.push(n, ctx.bytes(), true);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn trim_eol(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// Decodes a line and, when longer than `max_cols` characters, keeps a window of `max_cols`
/// characters around the first match (the start of the line for context lines), marking cut
/// ends with `...`.
fn clip_line(matcher: &RegexMatcher, line: &[u8], max_cols: usize, is_context: bool) -> String {
    let text = String::from_utf8_lossy(line);
    if max_cols == 0 || text.len() <= max_cols || text.chars().count() <= max_cols {
        return text.into_owned();
    }
    let match_range = if is_context {
        None
    } else {
        matcher.find(line).ok().flatten()
    };
    // Work in chars of the decoded text; map the byte offset of the match via a prefix decode.
    let (match_start, match_len) = match match_range {
        Some(m) => {
            let start = String::from_utf8_lossy(&line[..m.start()]).chars().count();
            let len = String::from_utf8_lossy(&line[m.start()..m.end()])
                .chars()
                .count();
            (start, len)
        }
        None => (0, 0),
    };
    let total = text.chars().count();
    let slack = max_cols.saturating_sub(match_len) / 2;
    let start = match_start
        .saturating_sub(slack)
        .min(total.saturating_sub(max_cols));
    let end = (start + max_cols).min(total);
    let mut out = String::with_capacity(max_cols * 4 + 6);
    if start > 0 {
        out.push_str("...");
    }
    out.extend(text.chars().skip(start).take(end - start));
    if end < total {
        out.push_str("...");
    }
    out
}

/// Cuts the sorted result down to `limit` matching lines (Content) or files (other modes).
fn apply_head_limit(result: &mut GrepResult, limit: usize) {
    if limit == 0 {
        return;
    }
    match result.mode {
        OutputMode::Content => limit_content(result, limit),
        OutputMode::FilesWithMatches | OutputMode::Count => {
            if result.files.len() > limit {
                let rest = result.files.split_off(limit);
                result.omitted_files = rest.len();
                result.omitted_matches = rest.iter().map(|f| f.count).sum();
                result.truncated = true;
            }
        }
    }
}

fn limit_content(result: &mut GrepResult, limit: usize) {
    let mut budget = limit;
    let context = result.context as u64;
    let mut kept_files = Vec::with_capacity(result.files.len());
    for mut file in std::mem::take(&mut result.files) {
        if budget == 0 {
            result.omitted_files += 1;
            result.omitted_matches += file.count;
            continue;
        }
        let mut taken = 0;
        let mut cut_at = file.matches.len();
        let mut last_match_line = 0;
        for (i, line) in file.matches.iter().enumerate() {
            if taken == budget {
                // Keep only the after-context of the last taken match.
                if line.is_context && line.line_number <= last_match_line + context {
                    continue;
                }
                cut_at = i;
                break;
            }
            if !line.is_context {
                taken += 1;
                last_match_line = line.line_number;
            }
        }
        file.matches.truncate(cut_at);
        budget -= taken;
        result.omitted_matches += file.count - taken;
        kept_files.push(file);
    }
    result.files = kept_files;
    result.truncated = result.omitted_matches > 0;
}

/// The second pass: counts files that only the ignore rules kept out and that would match.
struct IgnoredScan<'a> {
    opts: &'a GrepOptions,
    matcher: &'a RegexMatcher,
    glob: Option<&'a PathGlob>,
    cancel: &'a AtomicBool,
    seen: &'a HashSet<PathBuf>,
    examined: AtomicUsize,
    matching: AtomicUsize,
    incomplete: AtomicBool,
}

impl IgnoredScan<'_> {
    fn run(&self) {
        let cfg = WalkConfig {
            include_hidden: self.opts.include_hidden,
            no_ignore: true,
            follow_symlinks: self.opts.follow_symlinks,
        };
        let mut builder = walk::builder(&self.opts.path, cfg);
        builder.threads(walk::threads());
        builder.build_parallel().run(|| {
            let mut searcher = SearcherBuilder::new()
                .line_terminator(LineTerminator::crlf())
                .binary_detection(BinaryDetection::quit(b'\x00'))
                .build();
            Box::new(move |entry| self.visit(&mut searcher, entry))
        });
    }

    fn visit(&self, searcher: &mut Searcher, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.cancel.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if !is_searchable_file(&entry, self.glob, &self.opts.path)
            || self.seen.contains(entry.path())
        {
            return WalkState::Continue;
        }
        if self.examined.fetch_add(1, Ordering::Relaxed) >= self.opts.ignored_scan_limit {
            self.incomplete.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        let mut sink = FirstMatch::default();
        if searcher
            .search_path(self.matcher, entry.path(), &mut sink)
            .is_ok()
            && sink.found
            && !sink.binary
        {
            self.matching.fetch_add(1, Ordering::Relaxed);
        }
        WalkState::Continue
    }
}

/// Stops at the first match.
#[derive(Default)]
struct FirstMatch {
    found: bool,
    binary: bool,
}

impl Sink for FirstMatch {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.found = true;
        Ok(false)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Formats a result like ripgrep for the model: `path:line:text` for matching lines,
/// `path-line-text` for context lines and `--` between non-adjacent groups (only when context
/// was requested); `path` per line for FilesWithMatches; `path:count` for Count.
/// Rendering a result in a richer mode than it was searched in shows what it holds.
pub fn render_text(result: &GrepResult, mode: OutputMode) -> String {
    let mut out = String::new();
    match mode {
        OutputMode::Content => render_content(result, &mut out),
        OutputMode::FilesWithMatches => {
            for file in &result.files {
                out.push_str(&file.path);
                out.push('\n');
            }
        }
        OutputMode::Count => {
            for file in &result.files {
                out.push_str(&format!("{}:{}\n", file.path, file.count));
            }
        }
    }
    out
}

fn render_content(result: &GrepResult, out: &mut String) {
    let separate = result.context > 0;
    let mut printed_any = false;
    for file in &result.files {
        let mut prev: Option<u64> = None;
        for line in &file.matches {
            let adjacent = prev.is_some_and(|p| line.line_number == p + 1);
            if separate && printed_any && !adjacent {
                out.push_str("--\n");
            }
            let sep = if line.is_context { '-' } else { ':' };
            out.push_str(&format!(
                "{}{sep}{}{sep}{}\n",
                file.path, line.line_number, line.text
            ));
            prev = Some(line.line_number);
            printed_any = true;
        }
    }
}

/// Short notes for the model about what the output leaves out: head-limit truncation,
/// ignored files that also match, skipped binary files, unreadable paths and symlink loops.
pub fn render_notes(result: &GrepResult) -> Vec<String> {
    let mut notes = Vec::new();
    if result.truncated {
        notes.push(match result.mode {
            OutputMode::Content => format!(
                "results truncated: {} more matching lines ({} more files) not shown; narrow the pattern or path, or raise head_limit",
                result.omitted_matches, result.omitted_files
            ),
            _ => format!(
                "results truncated: {} more files not shown; narrow the pattern or path, or raise head_limit",
                result.omitted_files
            ),
        });
    }
    if result.ignored_matching_files > 0 {
        let at_least = if result.ignored_scan_complete {
            ""
        } else {
            "at least "
        };
        notes.push(format!(
            "{at_least}{} ignored files also match; pass no_ignore=true to include them",
            result.ignored_matching_files
        ));
    }
    if result.skipped_secrets > 0 {
        notes.push(format!(
            "{} secret-like files skipped (.env, keys, tokens); name one as the path to search it",
            result.skipped_secrets
        ));
    }
    if result.skipped_binary > 0 {
        notes.push(format!("{} binary files skipped", result.skipped_binary));
    }
    if let Some(kind) = &result.searched_binary {
        notes.push(format!(
            "{} is binary ({kind}); searched it anyway because it was named, so matched lines may hold escaped bytes",
            result.root.display()
        ));
    }
    if result.issues.total() > 0 {
        notes.push(format!(
            "{} paths could not be searched ({} permission denied, {} symlink loops): {}",
            result.issues.total(),
            result.issues.permission_denied,
            result.issues.loops,
            result.issues.messages.join("; ")
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(p: &str) -> RegexMatcher {
        RegexMatcher::new(p).unwrap()
    }

    #[test]
    fn clip_centres_on_match() {
        let line = format!("{}NEEDLE{}", "a".repeat(500), "b".repeat(500));
        let out = clip_line(&matcher("NEEDLE"), line.as_bytes(), 50, false);
        assert!(out.starts_with("...") && out.ends_with("..."), "{out}");
        assert!(out.contains("NEEDLE"));
        assert_eq!(out.chars().count(), 56);
    }

    #[test]
    fn clip_context_keeps_head_and_multibyte_chars() {
        let line = "é".repeat(400);
        let out = clip_line(&matcher("x"), line.as_bytes(), 10, true);
        assert_eq!(out, format!("{}...", "é".repeat(10)));
    }

    #[test]
    fn short_lines_untouched() {
        assert_eq!(clip_line(&matcher("a"), b"abc", 300, false), "abc");
    }
}
