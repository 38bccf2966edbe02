//! Errors of the edit engine. Every message names the edit by its 1-based position ("edit 2"
//! is the second entry of the `edits` array) and says what to change so that one retry fixes it.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use super::Strategy;
use crate::native::fs::FsError;

/// At most this many line numbers are listed in an ambiguity message.
const MAX_LISTED_LINES: usize = 20;

/// Where a failed `old_string` came closest to matching, for the "not found" message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closest {
    /// First line (1-based) of the closest region.
    pub start_line: usize,
    /// Last line (1-based) of the closest region.
    pub end_line: usize,
    /// First differing line (1-based) inside the region.
    pub diff_line: usize,
    /// First differing column (1-based, in characters) on that line.
    pub column: usize,
    /// The file's actual line there (possibly clipped around the column).
    pub actual: String,
    /// The corresponding line of `old_string` (possibly clipped around the column).
    pub expected: String,
}

/// Why one file's edits could not be applied. Nothing is written when any of these occurs.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EditError {
    /// The batch for a file has no edits.
    #[error("no edits given; pass at least one {{old_string, new_string}}")]
    NoEdits,
    /// `old_string` is empty.
    #[error(
        "edit {edit}: old_string is empty; to create or overwrite a whole file use the write tool"
    )]
    EmptyOldString {
        /// 1-based edit number.
        edit: usize,
    },
    /// `old_string == new_string`.
    #[error("edit {edit}: old_string and new_string are identical, so the edit changes nothing; fix new_string or drop the edit")]
    NoOp {
        /// 1-based edit number.
        edit: usize,
    },
    /// The file is not UTF-8 text.
    #[error("file is not valid UTF-8 (invalid byte at offset {offset}, line {line}); edit only changes UTF-8 text, so the file was left untouched")]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// 1-based line of that byte.
        line: usize,
    },
    /// No strategy found `old_string`.
    #[error("{}", not_found_message(*.edit, .closest.as_ref(), *.crlf_hint))]
    NotFound {
        /// 1-based edit number.
        edit: usize,
        /// Closest region, when anything came close.
        closest: Option<Closest>,
        /// The file uses CRLF and `old_string` LF, and that still did not match.
        crlf_hint: bool,
    },
    /// `old_string` matched more than once and `replace_all` is not set.
    #[error("edit {edit}: {}; add surrounding text to make it unique, or set replace_all to change every one", Places(.lines, *.strategy))]
    Ambiguous {
        /// 1-based edit number.
        edit: usize,
        /// Strategy that found the matches.
        strategy: Strategy,
        /// 1-based first line of every match (overlapping ones included).
        lines: Vec<usize>,
    },
    /// `replace_all` with occurrences that overlap one another ("aa" in "aaa").
    #[error("edit {edit}: replace_all: occurrences of old_string overlap each other (at lines {lines}), so replacing all of them is ill-defined; make old_string longer", lines = LineList(.lines))]
    OverlappingOccurrences {
        /// 1-based edit number.
        edit: usize,
        /// 1-based first line of every occurrence.
        lines: Vec<usize>,
    },
    /// A block-anchor match whose lines are indented differently from `old_string` by
    /// different amounts: one shift cannot re-indent `new_string` faithfully.
    #[error("edit {edit}: old_string matches lines {start_line}-{end_line} only loosely (block anchor), and those lines are indented differently from old_string by different amounts, so new_string cannot be re-indented safely; re-read the lines and copy old_string exactly, indentation included")]
    IndentationMismatch {
        /// 1-based edit number.
        edit: usize,
        /// 1-based first line of the loose match.
        start_line: usize,
        /// 1-based last line of the loose match.
        end_line: usize,
    },
    /// Two edits of one file touch overlapping text.
    #[error("edits {first} and {second} overlap (lines {}-{} and {}-{}); merge them into one edit or make them disjoint", .first_lines.0, .first_lines.1, .second_lines.0, .second_lines.1)]
    Overlap {
        /// 1-based number of the earlier edit in the list.
        first: usize,
        /// 1-based number of the later edit in the list.
        second: usize,
        /// Line span of the first edit's match.
        first_lines: (usize, usize),
        /// Line span of the second edit's match.
        second_lines: (usize, usize),
    },
    /// The edits, applied, leave the file byte-identical.
    #[error("no changes: the edits leave the file exactly as it was; check new_string")]
    NoChanges,
}

/// The "not found" message, with the closest region and the CRLF hint when known.
fn not_found_message(edit: usize, closest: Option<&Closest>, crlf_hint: bool) -> String {
    let mut msg = format!("edit {edit}: old_string not found in the file.");
    if let Some(c) = closest {
        msg.push_str(&format!(
            "\n  closest region: lines {}-{}; first difference at line {}, column {}:\n    file:       {:?}\n    old_string: {:?}",
            c.start_line, c.end_line, c.diff_line, c.column, c.actual, c.expected
        ));
    }
    if crlf_hint {
        msg.push_str("\n  hint: file uses CRLF line endings; old_string uses LF");
    }
    msg.push_str("\n  re-read the file and copy old_string exactly from it");
    msg
}

/// Where an ambiguous `old_string` matched: "old_string matches 3 places (exact match) at
/// lines 3, 9 (2 matches)" or, all on one line, "old_string is not unique: 4 matches on line 2
/// (exact match)".
struct Places<'a>(&'a [usize], Strategy);

impl fmt::Display for Places<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lines, strategy) = (self.0, self.1);
        match lines {
            [first, rest @ ..] if rest.iter().all(|l| l == first) => write!(
                f,
                "old_string is not unique: {} matches on line {first} ({strategy} match)",
                lines.len()
            ),
            _ => write!(
                f,
                "old_string matches {} places ({strategy} match) at lines {}",
                lines.len(),
                LineList(lines)
            ),
        }
    }
}

/// Formats line numbers as "3, 9 (2 matches), 17", clipped after [`MAX_LISTED_LINES`] lines.
struct LineList<'a>(&'a [usize]);

impl fmt::Display for LineList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut groups: Vec<(usize, usize)> = Vec::new();
        for &line in self.0 {
            match groups.last_mut() {
                Some((l, n)) if *l == line => *n += 1,
                _ => groups.push((line, 1)),
            }
        }
        for (i, (line, n)) in groups.iter().take(MAX_LISTED_LINES).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{line}")?;
            if *n > 1 {
                write!(f, " ({n} matches)")?;
            }
        }
        if groups.len() > MAX_LISTED_LINES {
            write!(f, " and {} more lines", groups.len() - MAX_LISTED_LINES)?;
        }
        Ok(())
    }
}

/// Why a multi-file batch was refused. Nothing was written (except as stated by
/// [`BatchError::CommitFailed`], the one failure that can strike after renaming began).
#[derive(Debug, Error)]
pub enum BatchError {
    /// The batch lists no files.
    #[error("no files given; pass at least one {{path, edits}} entry")]
    Empty,
    /// One file's edits failed.
    #[error("{path}: {source}; no file was changed", path = .path.display())]
    Edit {
        /// The path as given in the batch.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: EditError,
    },
    /// Reading, stamping or staging a file failed.
    #[error("{source}; no file was changed")]
    Fs {
        /// The file-system error (it names the path).
        #[source]
        source: FsError,
    },
    /// The same file appears twice (directly or through a symlink).
    #[error("{path}: listed twice in the batch (files {first} and {second}); put all of its edits in one entry", path = .path.display())]
    DuplicatePath {
        /// The path as given the second time.
        path: PathBuf,
        /// 1-based position of the first entry.
        first: usize,
        /// 1-based position of the second entry.
        second: usize,
    },
    /// Renaming a staged file into place failed after others were renamed.
    #[error("{source}; files already written were restored: {restored}; could not restore: {unrestored}", restored = paths(.restored), unrestored = paths(.unrestored))]
    CommitFailed {
        /// The failure.
        #[source]
        source: FsError,
        /// Files put back to their original content.
        restored: Vec<PathBuf>,
        /// Files left with the new content because restoring failed.
        unrestored: Vec<PathBuf>,
    },
}

/// "a, b" or "none".
fn paths(list: &[PathBuf]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    list.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
