//! The edit-apply engine: replaces `old_string`s with `new_string`s in files, all or nothing.
//!
//! * Every edit of a file is matched against the ORIGINAL content (never sequentially), edits
//!   must not overlap, and a failing edit anywhere in a batch means nothing is written anywhere.
//! * Matching is exact first, then a fixed ordered set of fallbacks (see [`Strategy`]); the
//!   outcome says which strategy matched each edit.
//! * The file keeps its line endings (CRLF/LF/mixed), UTF-8 BOM, mode and final newline (or its
//!   absence). Non-UTF-8 files are refused, never mangled.
//! * Edits are numbered from 1 in every message: "edit 2" is the second entry of `edits`.
//! * An empty `old_string` is an error that points at the write tool (no create-via-edit).
//! * Writing goes through [`crate::native::fs`]: stamps for stale-read protection, staged
//!   atomic writes, symlinks written through to their target.

mod diagnose;
mod diff;
mod error;
mod matching;

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

pub use diff::unified_whole;
pub use error::{BatchError, Closest, EditError};

use crate::native::fs::{self as nfs, FileStamp, FsError, StagedWrite};
use matching::{Haystack, Match};

/// The UTF-8 byte order mark, kept in front of the content and never matched against.
const BOM: &str = "\u{FEFF}";

/// One replacement asked for by the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Text to find; must be non-empty and, unless `replace_all`, match exactly one place.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every match instead of requiring a unique one.
    pub replace_all: bool,
}

impl Edit {
    /// An edit that must match exactly once.
    pub fn new(old_string: impl Into<String>, new_string: impl Into<String>) -> Self {
        Edit {
            old_string: old_string.into(),
            new_string: new_string.into(),
            replace_all: false,
        }
    }

    /// An edit that replaces every match.
    pub fn all(old_string: impl Into<String>, new_string: impl Into<String>) -> Self {
        Edit {
            replace_all: true,
            ..Edit::new(old_string, new_string)
        }
    }
}

/// The edits for one file of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdits {
    /// File to edit (symlinks are followed; the link itself is kept).
    pub path: PathBuf,
    /// Edits, all matched against the file as it is before any of them.
    pub edits: Vec<Edit>,
    /// Stamp from when the caller last read the file; the batch is refused if it changed since.
    pub expected: Option<FileStamp>,
}

/// Which matching strategy found an edit's `old_string`, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Byte-exact.
    Exact,
    /// Equal once CRLF and LF are treated alike; `new_string` gets the file's line endings.
    LineEndings,
    /// Equal once trailing whitespace of every line is ignored.
    TrailingWhitespace,
    /// Whole lines equal after one uniform indentation shift; `new_string` is shifted likewise.
    Indentation,
    /// Equal once curly quotes, dashes and odd spaces are folded to ASCII.
    Unicode,
    /// >= 3 lines: first and last line equal after trimming, the middle at least 80% similar.
    BlockAnchor,
}

impl Strategy {
    /// Stable snake_case name (for Lua / JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::LineEndings => "line_endings",
            Strategy::TrailingWhitespace => "trailing_whitespace",
            Strategy::Indentation => "indentation",
            Strategy::Unicode => "unicode",
            Strategy::BlockAnchor => "block_anchor",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of applying one file's edits in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutcome {
    /// The new file content (BOM included when the file had one).
    pub new_bytes: Vec<u8>,
    /// Unified diff of the change, with real line numbers in the hunk headers.
    pub diff: String,
    /// Number of places replaced (several per edit with `replace_all`).
    pub replacements: usize,
    /// 1-based line of the first changed line in the new content.
    pub first_changed_line: usize,
    /// The strategy that matched each edit, in edit order.
    pub strategies: Vec<Strategy>,
}

/// The result of one file of a batch, after it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    /// The path as given in the batch.
    pub path: PathBuf,
    /// The file actually written (symlinks resolved).
    pub target: PathBuf,
    /// What changed.
    pub outcome: EditOutcome,
    /// Stamp of the file as written, to use as `expected` for the next edit.
    pub stamp: FileStamp,
}

/// Applies `edits` to a file's `bytes` in memory. The diff is labelled "file".
pub fn apply_edits(bytes: &[u8], edits: &[Edit]) -> Result<EditOutcome, EditError> {
    apply_edits_labeled(bytes, edits, "file")
}

/// Applies `edits` to `bytes`, labelling the diff with `label` (usually the path).
pub fn apply_edits_labeled(
    bytes: &[u8],
    edits: &[Edit],
    label: &str,
) -> Result<EditOutcome, EditError> {
    let plan = plan(bytes, edits, label)?;
    let new_bytes = splice_copy(bytes, &plan);
    Ok(plan.into_outcome(new_bytes))
}

/// Like [`apply_edits_labeled`] but consumes the buffer: a single replacement is spliced in
/// place, saving a full copy of the file (which on a 50 MB file costs as much as the rest).
pub fn apply_edits_owned(
    mut bytes: Vec<u8>,
    edits: &[Edit],
    label: &str,
) -> Result<EditOutcome, EditError> {
    let plan = plan(&bytes, edits, label)?;
    match plan.placed.as_slice() {
        [(_, m)] => {
            let range = plan.bom_len + m.start..plan.bom_len + m.end;
            bytes.splice(range, m.replacement.bytes());
        }
        _ => bytes = splice_copy(&bytes, &plan),
    }
    Ok(plan.into_outcome(bytes))
}

/// Everything about an edit except the new bytes: where to put what, the diff, the strategies.
struct Plan {
    bom_len: usize,
    placed: Vec<(usize, Match)>,
    diff: String,
    first_changed_line: usize,
    strategies: Vec<Strategy>,
}

impl Plan {
    fn into_outcome(self, new_bytes: Vec<u8>) -> EditOutcome {
        EditOutcome {
            new_bytes,
            diff: self.diff,
            replacements: self.placed.len(),
            first_changed_line: self.first_changed_line,
            strategies: self.strategies,
        }
    }
}

/// Validates the edits, decodes the file, matches every edit against the original text and
/// checks that together they are disjoint and change something.
fn plan(bytes: &[u8], edits: &[Edit], label: &str) -> Result<Plan, EditError> {
    validate_edits(edits)?;
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        EditError::NotUtf8 {
            offset,
            line: memchr::memchr_iter(b'\n', &bytes[..offset]).count() + 1,
        }
    })?;
    let (bom_len, body) = match text.strip_prefix(BOM) {
        Some(body) => (BOM.len(), body),
        None => (0, text),
    };
    let hay = Haystack::new(body);

    let mut strategies = Vec::with_capacity(edits.len());
    let mut placed: Vec<(usize, Match)> = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let found = matching::find(&hay, edit, i + 1)?;
        strategies.push(found.strategy);
        placed.extend(found.matches.into_iter().map(|m| (i + 1, m)));
    }
    placed.sort_by_key(|(_, m)| m.start);
    check_overlaps(&hay, &placed)?;
    if placed
        .iter()
        .all(|(_, m)| body[m.start..m.end] == m.replacement)
    {
        return Err(EditError::NoChanges);
    }

    let start = changed_start(body, &placed);
    // The text before `start` is the same in both versions, so count lines in the old one.
    let first_changed_line = memchr::memchr_iter(b'\n', &body.as_bytes()[..start]).count() + 1;
    let diff = diff::unified(label, body, &placed, start);
    Ok(Plan {
        bom_len,
        placed,
        diff,
        first_changed_line,
        strategies,
    })
}

/// Rejects empty lists, empty `old_string`s and no-op edits before looking at the file.
fn validate_edits(edits: &[Edit]) -> Result<(), EditError> {
    if edits.is_empty() {
        return Err(EditError::NoEdits);
    }
    for (i, edit) in edits.iter().enumerate() {
        if edit.old_string.is_empty() {
            return Err(EditError::EmptyOldString { edit: i + 1 });
        }
        if edit.old_string == edit.new_string {
            return Err(EditError::NoOp { edit: i + 1 });
        }
    }
    Ok(())
}

/// Matches sorted by start must not overlap (an edit's own matches were checked already).
fn check_overlaps(hay: &Haystack, placed: &[(usize, Match)]) -> Result<(), EditError> {
    for pair in placed.windows(2) {
        let ((a, ma), (b, mb)) = (&pair[0], &pair[1]);
        if mb.start < ma.end {
            let (a_lines, b_lines) = (
                hay.line_span(ma.start, ma.end),
                hay.line_span(mb.start, mb.end),
            );
            let (first, second, first_lines, second_lines) = if a <= b {
                (*a, *b, a_lines, b_lines)
            } else {
                (*b, *a, b_lines, a_lines)
            };
            return Err(EditError::Overlap {
                first,
                second,
                first_lines,
                second_lines,
            });
        }
    }
    Ok(())
}

/// The new file as a fresh buffer: BOM, then the body with the matches replaced.
fn splice_copy(bytes: &[u8], plan: &Plan) -> Vec<u8> {
    let (bom, body) = bytes.split_at(plan.bom_len);
    let grow: usize = plan.placed.iter().map(|(_, m)| m.replacement.len()).sum();
    let mut out = Vec::with_capacity(bytes.len() + grow);
    out.extend_from_slice(bom);
    let mut at = 0;
    for (_, m) in &plan.placed {
        out.extend_from_slice(&body[at..m.start]);
        out.extend_from_slice(m.replacement.as_bytes());
        at = m.end;
    }
    out.extend_from_slice(&body[at..]);
    out
}

/// First byte that really changes (a replacement may share a prefix with what it replaces),
/// kept on a char boundary.
fn changed_start(body: &str, placed: &[(usize, Match)]) -> usize {
    let Some((_, first)) = placed.first() else {
        return 0;
    };
    let shared = common_prefix(
        &body.as_bytes()[first.start..first.end],
        first.replacement.as_bytes(),
    );
    let mut start = first.start + shared;
    while !(body.is_char_boundary(start) && first.replacement.is_char_boundary(start - first.start))
    {
        start -= 1;
    }
    start
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A file of a batch, read and edited in memory, not yet written.
struct Prepared {
    path: PathBuf,
    target: PathBuf,
    /// Kept for rollback in multi-file batches only.
    original: Option<Vec<u8>>,
    read_stamp: FileStamp,
    outcome: EditOutcome,
}

/// Applies a multi-file batch: reads every file, checks its stamp, computes every edit against
/// the original contents, stages every new file next to its target and only then renames them
/// into place. Any failure before the renames leaves every file untouched.
pub fn apply_batch(files: &[FileEdits]) -> Result<Vec<FileOutcome>, BatchError> {
    if files.is_empty() {
        return Err(BatchError::Empty);
    }
    let prepared = prepare_all(files)?;
    let mut staged = Vec::with_capacity(prepared.len());
    for p in &prepared {
        let stage = nfs::stage_write(&p.target, &p.outcome.new_bytes, None, false)
            .map_err(|source| BatchError::Fs { source })?;
        staged.push(stage);
    }
    // Last look before renaming: a writer that slipped in since the read makes us stop.
    for p in &prepared {
        recheck_fresh(p).map_err(|source| BatchError::Fs { source })?;
    }
    commit_all(&prepared, staged)?;
    prepared
        .into_iter()
        .map(|p| {
            let stamp = stamp_written(&p.target, &p.outcome.new_bytes)
                .map_err(|source| BatchError::Fs { source })?;
            Ok(FileOutcome {
                path: p.path,
                target: p.target,
                outcome: p.outcome,
                stamp,
            })
        })
        .collect()
}

/// Reads, stamps and edits every file in memory; refuses duplicates.
fn prepare_all(files: &[FileEdits]) -> Result<Vec<Prepared>, BatchError> {
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    let mut prepared = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        // An empty old_string on a missing file means "create it": say to use write rather
        // than "no such file".
        validate_edits(&file.edits).map_err(|source| BatchError::Edit {
            path: file.path.clone(),
            source,
        })?;
        let fs_err = |source| BatchError::Fs { source };
        let target = nfs::resolve_symlinks(&file.path).map_err(fs_err)?;
        let (original, read_stamp) = nfs::read_with_stamp(&target).map_err(fs_err)?;
        // Same file through different spellings or links counts as a duplicate.
        let key = fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
        if let Some(first) = seen.insert(key, i + 1) {
            return Err(BatchError::DuplicatePath {
                path: file.path.clone(),
                first,
                second: i + 1,
            });
        }
        if let Some(expected) = &file.expected {
            expected
                .ensure_unchanged(&file.path, &read_stamp)
                .map_err(fs_err)?;
        }
        let label = file.path.to_string_lossy();
        // A lone file needs no rollback copy, so its buffer can be edited in place.
        let (outcome, original) = if files.len() == 1 {
            (apply_edits_owned(original, &file.edits, &label), None)
        } else {
            let outcome = apply_edits_labeled(&original, &file.edits, &label);
            (outcome, Some(original))
        };
        let outcome = outcome.map_err(|source| BatchError::Edit {
            path: file.path.clone(),
            source,
        })?;
        prepared.push(Prepared {
            path: file.path.clone(),
            target,
            original,
            read_stamp,
            outcome,
        });
    }
    Ok(prepared)
}

/// Cheap metadata check; only when size or mtime moved is the content re-hashed (so a mere
/// `touch` in between is still fine).
fn recheck_fresh(p: &Prepared) -> Result<(), FsError> {
    let meta = fs::metadata(&p.target).map_err(|_| FsError::NotFound {
        path: p.target.clone(),
    })?;
    if p.read_stamp.same_metadata(&meta) {
        return Ok(());
    }
    nfs::check_fresh(&p.target, &p.read_stamp).map_err(|e| match e {
        FsError::Stale { what, .. } => FsError::Stale {
            path: p.path.clone(),
            what,
        },
        other => other,
    })
}

/// Renames every staged file into place. If a rename fails, files already renamed get their
/// original content back (best effort) and the error says which.
fn commit_all(prepared: &[Prepared], staged: Vec<StagedWrite>) -> Result<(), BatchError> {
    let mut done: Vec<&Prepared> = Vec::new();
    for (p, stage) in prepared.iter().zip(staged) {
        if let Err(source) = stage.commit() {
            let (mut restored, mut unrestored) = (Vec::new(), Vec::new());
            for q in done {
                let restore = match &q.original {
                    Some(original) => nfs::write_atomic(&q.target, original, None).is_ok(),
                    None => false,
                };
                if restore {
                    restored.push(q.path.clone());
                } else {
                    unrestored.push(q.path.clone());
                }
            }
            return Err(BatchError::CommitFailed {
                source,
                restored,
                unrestored,
            });
        }
        done.push(p);
    }
    Ok(())
}

/// Stamp of a file just written with `bytes` (no re-read: we know the content).
fn stamp_written(target: &Path, bytes: &[u8]) -> Result<FileStamp, FsError> {
    let meta = fs::metadata(target).map_err(|_| FsError::NotFound {
        path: target.to_path_buf(),
    })?;
    Ok(FileStamp::of_bytes(&meta, bytes))
}
