//! Reading a window of a file for the `read` tool: binary detection, a 1-based line window
//! (`offset`, `limit`) under a byte budget, long lines clipped, invalid UTF-8 escaped, and the
//! stamp of what was read (for stale-edit protection). Pure Rust; callers run it off the Lua
//! thread.

use super::filetype::{self, FileKind};
use super::fs::{self, FileStamp, FsError};
use super::sanitize;
use super::truncate;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// `window` checks whether the text is clean (nothing to escape) this many bytes at a time,
/// extended to whole lines.
const CLEAN_CHUNK_BYTES: usize = 16 * 1024;

/// Defaults of the `read` tool.
pub const DEFAULT_LIMIT: usize = 2000;
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
pub const DEFAULT_MAX_COLUMNS: usize = 2000;

#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// First line to show, 1-based.
    pub offset: usize,
    /// Most lines to show.
    pub limit: usize,
    /// Byte budget of the shown text.
    pub max_bytes: usize,
    /// Lines longer than this many characters are clipped.
    pub max_columns: usize,
    /// The caller shows each line behind a `cat -n` style number (`{:>6}\t`): count those
    /// bytes against `max_bytes` too, so the budget bounds what the model actually receives.
    pub numbered: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            offset: 1,
            limit: DEFAULT_LIMIT,
            max_bytes: DEFAULT_MAX_BYTES,
            max_columns: DEFAULT_MAX_COLUMNS,
            numbered: false,
        }
    }
}

/// The shown part of a text file.
#[derive(Debug, Clone)]
pub struct TextWindow {
    /// The lines shown, without line numbers; valid UTF-8 (invalid bytes escaped as `\xNN`).
    pub text: String,
    pub first_line: usize,
    /// Last line shown (0 when the file is empty).
    pub last_line: usize,
    pub total_lines: usize,
    pub total_bytes: usize,
    /// Where to continue, when lines remain after the window.
    pub next_offset: Option<usize>,
    /// `Some("lines")` or `Some("bytes")` when the window was cut by that limit.
    pub truncated_by: Option<&'static str>,
    pub clipped_lines: usize,
    /// Line number of the first clipped line (the one a slicing hint should name).
    pub first_clipped_line: Option<usize>,
    pub escaped_bytes: usize,
    pub crlf: bool,
    pub bom: bool,
    pub stamp: FileStamp,
}

#[derive(Debug, Clone)]
pub enum ReadOutcome {
    Text(TextWindow),
    Binary {
        kind: String,
        size: u64,
        mime: Option<&'static str>,
        stamp: FileStamp,
    },
    Directory,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("file not found: {path}{}", suggestion(.similar))]
    NotFound { path: PathBuf, similar: Vec<String> },
    #[error("offset {offset} is past the end of {path} ({total_lines} lines); use an offset between 1 and {total_lines}")]
    OffsetPastEnd {
        path: PathBuf,
        offset: usize,
        total_lines: usize,
    },
    #[error("{path} is empty (0 lines, {bytes} bytes), so there is no line {offset}; read it without an offset")]
    OffsetInEmptyFile {
        path: PathBuf,
        offset: usize,
        bytes: usize,
    },
    #[error(transparent)]
    Fs(#[from] FsError),
}

fn suggestion(similar: &[String]) -> String {
    if similar.is_empty() {
        String::new()
    } else {
        format!(" (did you mean: {}?)", similar.join(", "))
    }
}

/// Reads the window of `path` described by `opts`.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<ReadOutcome, ReadError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Ok(ReadOutcome::Directory),
        // Checked before opening: opening a FIFO blocks until a writer comes, forever.
        Ok(m) if !m.is_file() => {
            return Err(ReadError::Fs(FsError::NotAFile {
                path: path.to_path_buf(),
            }))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let similar = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                // A bare name ("a.tx") has an empty parent: look in the working directory.
                (Some(dir), Some(name)) if dir.as_os_str().is_empty() => {
                    filetype::similar_names(Path::new("."), name, 3)
                }
                // Suggest paths usable as given, in the same directory as the request.
                (Some(dir), Some(name)) => filetype::similar_names(dir, name, 3)
                    .into_iter()
                    .map(|n| dir.join(n).to_string_lossy().into_owned())
                    .collect(),
                _ => Vec::new(),
            };
            return Err(ReadError::NotFound {
                path: path.to_path_buf(),
                similar,
            });
        }
        Err(_) => {}
    }
    let (bytes, stamp) = fs::read_with_stamp(path)?;
    let head = &bytes[..bytes.len().min(8192)];
    if let FileKind::Binary { kind } = filetype::detect(path, head) {
        return Ok(ReadOutcome::Binary {
            kind,
            size: bytes.len() as u64,
            mime: filetype::image_mime(head),
            stamp,
        });
    }
    window(path, &bytes, stamp, opts).map(ReadOutcome::Text)
}

fn window(
    path: &Path,
    bytes: &[u8],
    stamp: FileStamp,
    opts: &ReadOptions,
) -> Result<TextWindow, ReadError> {
    window_in_chunks(path, bytes, stamp, opts, CLEAN_CHUNK_BYTES)
}

/// [`window`], checking cleanliness `chunk` bytes (and the rest of a line) at a time.
fn window_in_chunks(
    path: &Path,
    bytes: &[u8],
    stamp: FileStamp,
    opts: &ReadOptions,
    chunk: usize,
) -> Result<TextWindow, ReadError> {
    let bom = bytes.starts_with(b"\xEF\xBB\xBF");
    let body = if bom { &bytes[3..] } else { bytes };
    let total_lines = count_lines(body);
    let offset = opts.offset.max(1);
    if offset > 1 && total_lines == 0 {
        return Err(ReadError::OffsetInEmptyFile {
            path: path.to_path_buf(),
            offset,
            bytes: bytes.len(),
        });
    }
    if offset > total_lines.max(1) {
        return Err(ReadError::OffsetPastEnd {
            path: path.to_path_buf(),
            offset,
            total_lines,
        });
    }
    // Byte position of the first shown line.
    let mut start = 0;
    for _ in 1..offset {
        match memchr::memchr(b'\n', &body[start..]) {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    let mut end = start;
    let mut shown = 0;
    let mut used = 0;
    let mut truncated_by = None;
    let mut clipped_lines = 0;
    let mut first_clipped_line = None;
    let mut text = String::new();
    let mut escaped_bytes = 0;
    // Most files are clean text: check a chunk of whole lines at a time (one pass each); the
    // lines of a clean chunk need neither escaping nor (when short) clipping. A chunk with
    // something to escape goes line by line.
    let mut clean_chunk = "";
    let mut chunk_start = start;
    let mut chunk_end = start;
    while end < body.len() {
        if shown == opts.limit {
            truncated_by = Some("lines");
            break;
        }
        if end == chunk_end {
            let want = end.saturating_add(chunk).min(body.len());
            chunk_end = memchr::memchr(b'\n', &body[want..]).map_or(body.len(), |i| want + i + 1);
            chunk_start = end;
            clean_chunk = sanitize::clean_str(&body[end..chunk_end]).unwrap_or("");
        }
        let line_end = memchr::memchr(b'\n', &body[end..]).map_or(body.len(), |i| end + i + 1);
        let (clean, escaped) = if chunk_start + clean_chunk.len() == chunk_end {
            let at = end - chunk_start;
            (Cow::Borrowed(&clean_chunk[at..at + (line_end - end)]), 0)
        } else {
            sanitize::escape(&body[end..line_end])
        };
        // A line of at most `max_columns` bytes has at most that many characters.
        let (line, clipped) = if clean.len() <= opts.max_columns {
            (clean, 0)
        } else {
            let (l, c) = truncate::clip_long_lines(&clean, opts.max_columns);
            (Cow::Owned(l), c)
        };
        let cost = line.len()
            + if opts.numbered {
                number_width(offset + shown)
            } else {
                0
            };
        if shown > 0 && used + cost > opts.max_bytes {
            truncated_by = Some("bytes");
            break;
        }
        escaped_bytes += escaped;
        clipped_lines += clipped;
        if clipped > 0 && first_clipped_line.is_none() {
            first_clipped_line = Some(offset + shown);
        }
        used += cost;
        text.push_str(&line);
        shown += 1;
        end = line_end;
    }
    let last_line = if shown == 0 { 0 } else { offset + shown - 1 };
    let next_offset = (last_line < total_lines && shown > 0).then_some(last_line + 1);
    Ok(TextWindow {
        text,
        first_line: offset,
        last_line,
        total_lines,
        total_bytes: bytes.len(),
        next_offset,
        truncated_by: if next_offset.is_some() {
            truncated_by.or(Some("lines"))
        } else {
            None
        },
        clipped_lines,
        first_clipped_line,
        escaped_bytes,
        crlf: memchr::memmem::find(body, b"\r\n").is_some(),
        bom,
        stamp,
    })
}

/// Bytes of the `{:>6}\t` prefix of line `n`.
fn number_width(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1).max(6) + 1
}

/// Lines in a text: a final line without a newline counts; a trailing newline does not start one.
pub fn count_lines(bytes: &[u8]) -> usize {
    if bytes.is_empty() {
        return 0;
    }
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    if bytes.ends_with(b"\n") {
        newlines
    } else {
        newlines + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The window loop before the one-pass check: every line escaped and clipped on its own.
    /// `(text, shown, truncated_by, clipped, first_clipped, escaped)`.
    #[allow(clippy::type_complexity)]
    fn line_by_line(
        body: &[u8],
        offset: usize,
        opts: &ReadOptions,
    ) -> (
        String,
        usize,
        Option<&'static str>,
        usize,
        Option<usize>,
        usize,
    ) {
        let mut start = 0;
        for _ in 1..offset {
            match memchr::memchr(b'\n', &body[start..]) {
                Some(i) => start += i + 1,
                None => break,
            }
        }
        let (mut end, mut shown, mut used, mut truncated_by) = (start, 0, 0, None);
        let (mut clipped_lines, mut first_clipped, mut escaped_bytes) = (0, None, 0);
        let mut text = String::new();
        while end < body.len() {
            if shown == opts.limit {
                truncated_by = Some("lines");
                break;
            }
            let line_end = memchr::memchr(b'\n', &body[end..]).map_or(body.len(), |i| end + i + 1);
            let (clean, escaped) = sanitize::escape(&body[end..line_end]);
            let (line, clipped) = truncate::clip_long_lines(&clean, opts.max_columns);
            let cost = line.len()
                + if opts.numbered {
                    number_width(offset + shown)
                } else {
                    0
                };
            if shown > 0 && used + cost > opts.max_bytes {
                truncated_by = Some("bytes");
                break;
            }
            escaped_bytes += escaped;
            clipped_lines += clipped;
            if clipped > 0 && first_clipped.is_none() {
                first_clipped = Some(offset + shown);
            }
            used += cost;
            text.push_str(&line);
            shown += 1;
            end = line_end;
        }
        (
            text,
            shown,
            truncated_by,
            clipped_lines,
            first_clipped,
            escaped_bytes,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// Checking cleanliness a chunk at a time gives exactly what line-by-line escaping
        /// gives, whatever the chunk size.
        #[test]
        fn one_pass_window_matches_line_by_line(
            body in proptest::collection::vec(
                prop_oneof![
                    20 => Just(&b"a"[..]), 8 => Just(&b"\n"[..]), 3 => Just("ж".as_bytes()),
                    2 => Just(&b"\r\n"[..]), 1 => Just(&b"\t"[..]), 1 => Just(&b"\0"[..]),
                    1 => Just(&b"\x1b"[..]), 1 => Just("\u{85}".as_bytes()),
                    1 => Just(&b"\xc2"[..]), 1 => Just(&b"\xff"[..]), 1 => Just(&b"\xb6"[..]),
                ],
                0..120,
            ).prop_map(|parts| parts.concat()),
            offset in 1usize..6,
            limit in 1usize..30,
            max_bytes in 1usize..200,
            max_columns in 1usize..20,
            numbered: bool,
            chunk in 0usize..150,
        ) {
            let opts = ReadOptions { offset, limit, max_bytes, max_columns, numbered };
            let stamp = FileStamp { mtime_ns: 0, size: 0, hash: 0 };
            let total = count_lines(&body);
            let got = window_in_chunks(Path::new("p"), &body, stamp, &opts, chunk);
            if offset > total.max(1) {
                prop_assert!(got.is_err());
                return Ok(());
            }
            let w = got.unwrap();
            let (text, shown, truncated_by, clipped, first_clipped, escaped) =
                line_by_line(&body, offset, &opts);
            prop_assert_eq!(&w.text, &text);
            prop_assert_eq!(w.last_line, if shown == 0 { 0 } else { offset + shown - 1 });
            prop_assert_eq!(w.clipped_lines, clipped);
            prop_assert_eq!(w.first_clipped_line, first_clipped);
            prop_assert_eq!(w.escaped_bytes, escaped);
            if w.next_offset.is_some() {
                prop_assert_eq!(w.truncated_by, truncated_by.or(Some("lines")));
            }
        }
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn text(outcome: ReadOutcome) -> TextWindow {
        match outcome {
            ReadOutcome::Text(t) => t,
            other => panic!("expected text, got {other:?}"),
        }
    }

    #[test]
    fn windows_by_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let p = write(dir.path(), "a.txt", body.as_bytes());
        let w = text(
            read(
                &p,
                &ReadOptions {
                    offset: 3,
                    limit: 4,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        assert_eq!(w.text, "line 3\nline 4\nline 5\nline 6\n");
        assert_eq!(
            (w.first_line, w.last_line, w.total_lines, w.next_offset),
            (3, 6, 10, Some(7))
        );
        assert_eq!(w.truncated_by, Some("lines"));
        let w = text(
            read(
                &p,
                &ReadOptions {
                    offset: 9,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        assert_eq!(
            (w.last_line, w.next_offset, w.truncated_by),
            (10, None, None)
        );
    }

    #[test]
    fn byte_budget_cuts_on_a_line_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "b.txt", "0123456789\n".repeat(100).as_bytes());
        let w = text(
            read(
                &p,
                &ReadOptions {
                    max_bytes: 55,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        assert_eq!(w.last_line, 5);
        assert_eq!(w.truncated_by, Some("bytes"));
        assert_eq!(w.next_offset, Some(6));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read(&fifo, &ReadOptions::default()).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn numbered_budget_counts_the_line_number_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "n.txt", "0123456789\n".repeat(100).as_bytes());
        // 11 bytes a line + 7 for "     1\t": three lines fit 55 bytes, not five.
        let o = ReadOptions {
            max_bytes: 55,
            numbered: true,
            ..Default::default()
        };
        let w = text(read(&p, &o).unwrap());
        assert_eq!((w.last_line, w.next_offset), (3, Some(4)));
        assert_eq!((number_width(999_999), number_width(1_000_000)), (7, 8));
    }

    #[test]
    fn invalid_utf8_is_escaped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "c.txt", b"ok\nbad \xff here\nend\n");
        let w = text(read(&p, &ReadOptions::default()).unwrap());
        assert_eq!(w.text, "ok\nbad \\xff here\nend\n");
        assert_eq!(w.escaped_bytes, 1);
    }

    #[test]
    fn empty_binary_missing_directory_and_past_end() {
        let dir = tempfile::tempdir().unwrap();
        let empty = write(dir.path(), "empty.txt", b"");
        let w = text(read(&empty, &ReadOptions::default()).unwrap());
        assert_eq!((w.total_lines, w.last_line, w.text.as_str()), (0, 0, ""));
        let png = write(dir.path(), "x.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        assert!(matches!(
            read(&png, &ReadOptions::default()).unwrap(),
            ReadOutcome::Binary { .. }
        ));
        assert!(matches!(
            read(dir.path(), &ReadOptions::default()).unwrap(),
            ReadOutcome::Directory
        ));
        let err = read(&dir.path().join("empty.tx"), &ReadOptions::default()).unwrap_err();
        let expected = format!("did you mean: {}", dir.path().join("empty.txt").display());
        assert!(err.to_string().contains(&expected), "{err}");
        let err = read(
            &empty,
            &ReadOptions {
                offset: 5,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(matches!(err, ReadError::OffsetInEmptyFile { .. }), "{err}");
        assert!(err.to_string().contains("is empty"), "{err}");
    }

    #[test]
    fn bom_and_crlf_are_reported_and_long_lines_clipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = b"\xEF\xBB\xBFa\r\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 5000));
        let p = write(dir.path(), "d.txt", &bytes);
        let w = text(read(&p, &ReadOptions::default()).unwrap());
        assert!(w.bom && w.crlf);
        assert!(w.text.starts_with("a\r\n"));
        assert_eq!(w.clipped_lines, 1);
        assert_eq!(w.first_clipped_line, Some(2));
        assert!(w.text.contains("[line clipped: 5000 chars]"));
    }
}
