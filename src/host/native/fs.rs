//! Bindings of file reading, writing and listing: `native.fs`.

use super::{blocking, expand_path, failure, ledger, success};
use crate::native::fs::{self as nfs, FileStamp};
use crate::native::read::{self, ReadOptions, ReadOutcome};
use crate::native::search;
use mlua::{Lua, Table, Value};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("read", lua.create_async_function(read_fn)?)?;
    m.set("write", lua.create_async_function(write_fn)?)?;
    m.set("list", lua.create_async_function(list_fn)?)?;
    m.set(
        "expand",
        lua.create_function(|_, path: String| {
            Ok(expand_path(&path).to_string_lossy().into_owned())
        })?,
    )?;
    m.set(
        "set_strict",
        lua.create_function(|lua, strict: bool| {
            ledger::with(lua, |l| l.strict = strict);
            Ok(())
        })?,
    )?;
    m.set(
        "cwd",
        lua.create_function(|_, ()| {
            Ok(std::env::current_dir()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_else(|_| ".".into()))
        })?,
    )?;
    // `fs.read_text(path, max_bytes?, keep?)` -> text, or nil and why: a small file read at
    // once (discovery's settings and Markdown files), refused past `max_bytes` (default 1 MiB)
    // so it stays a bounded read, unless `keep` is "head" or "tail": then a larger file gives
    // its first or last `max_bytes` bytes. Bigger or slower reads go through the async `fs.read`.
    m.set(
        "read_text",
        lua.create_function(
            |lua, (path, max, keep): (String, Option<usize>, Option<String>)| {
                let max = max.unwrap_or(1 << 20);
                let keep = match keep.as_deref() {
                    None => Keep::Whole,
                    Some("head") => Keep::Head,
                    Some("tail") => Keep::Tail,
                    Some(other) => {
                        return Err(mlua::Error::runtime(format!(
                            "fs.read_text: keep must be \"head\" or \"tail\", not {other:?}"
                        )))
                    }
                };
                match read_bounded(&expand_path(&path), max, keep) {
                    Ok(bytes) => Ok((Value::String(lua.create_string(&bytes)?), Value::Nil)),
                    Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
                }
            },
        )?,
    )?;
    // `fs.write_small(path, content)` -> true, or nil and why: fen's own small state files
    // (approved rules, settings.local.json) written at once, atomically (a temporary file
    // renamed over the old one), parents created. It runs on the Lua thread because its callers
    // include event handlers, which cannot wait; it refuses more than 1 MiB. Not the ledger's
    // concern: the `write` tool's files go through the async `fs.write`.
    m.set(
        "write_small",
        lua.create_function(|lua, (path, content): (String, mlua::LuaString)| {
            let bytes = content.as_bytes();
            let target = expand_path(&path);
            let r = if bytes.len() > SMALL_WRITE_MAX {
                Err(format!(
                    "{path}: {} bytes is too large for write_small",
                    bytes.len()
                ))
            } else {
                nfs::write_atomic_create_dirs(&target, &bytes, None).map_err(|e| e.to_string())
            };
            match r {
                Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
            }
        })?,
    )?;
    // `fs.append(path, text)` -> true, or nil and why: appends a small record (a history line)
    // in one write, creating the file and its parents.
    m.set(
        "append",
        lua.create_function(|lua, (path, text): (String, mlua::LuaString)| {
            match append_small(&expand_path(&path), &text.as_bytes()) {
                Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
            }
        })?,
    )?;
    // `fs.stat(path)` -> `{size, mtime_ms, is_dir}` or nil: one metadata call, for caches
    // keyed by (path, mtime, size).
    m.set(
        "stat",
        lua.create_function(|lua, path: String| {
            let Ok(meta) = std::fs::metadata(expand_path(&path)) else {
                return Ok(Value::Nil);
            };
            let t = lua.create_table()?;
            t.set("size", meta.len())?;
            let mtime_ms = meta
                .modified()
                .ok()
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            t.set("mtime_ms", mtime_ms)?;
            t.set("is_dir", meta.is_dir())?;
            Ok(Value::Table(t))
        })?,
    )?;
    // `fs.mkdir(path)`: creates the directory and its parents; `true` or `nil, message`.
    m.set(
        "mkdir",
        lua.create_function(|lua, path: String| {
            match std::fs::create_dir_all(expand_path(&path)) {
                Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
                Err(e) => Ok((
                    Value::Nil,
                    Value::String(lua.create_string(format!("cannot create {path}: {e}"))?),
                )),
            }
        })?,
    )?;
    m.set(
        "is_dir",
        lua.create_function(|_, path: String| Ok(expand_path(&path).is_dir()))?,
    )?;
    Ok(m)
}

crate::lua_options! {
    pub(crate) struct ReadOpts as "fen.opts.FsRead" for "fs.read" {
        offset: Option<usize> => "integer?", "First line, 1-based (default 1).",
        limit: Option<usize> => "integer?", "Lines at most.",
        max_bytes: Option<usize> => "integer?", "Bytes of text at most.",
        max_columns: Option<usize> => "integer?", "Longer lines are clipped.",
        numbered: Option<bool> => "boolean?", "Prefix each line with its number.",
        images: Option<bool> => "boolean?", "A PNG, JPEG, GIF or WebP comes back as `kind = \"image\"`.",
    }
}

crate::lua_options! {
    pub(crate) struct ListOpts as "fen.opts.FsList" for "fs.list" {
        depth: Option<usize> => "integer?", "Levels listed (default 1).",
        limit: Option<usize> => "integer?", "Entries at most (default 500).",
    }
}

/// Files up to this size are read on the Lua thread (well under a millisecond).
const INLINE_READ_MAX: u64 = 1024 * 1024;

/// `fs.read(path, {offset, limit, max_bytes, max_columns, numbered, images})` -> `{kind =
/// "text" | "binary" | "image" | "directory", ...}` or `nil, message`. Text: `text, first_line,
/// last_line, total_lines, total_bytes, next_offset, truncated_by, clipped_lines,
/// first_clipped_line, escaped_bytes, crlf, bom`. Binary: `binary_kind, size, mime` (and
/// `image_error` when an image could not be prepared). With `images = true`, a PNG, JPEG, GIF
/// or WebP (by content) is `kind = "image"`: `mime_type, data` (base64), `size` (of the file),
/// `bytes` (sent), `width, height, original_width, original_height` (resized to fit
/// 2000x2000 when larger).
async fn read_fn(lua: Lua, (path, opts): (String, Value)) -> mlua::Result<(Value, Value)> {
    let t: ReadOpts = super::options(&lua, opts)?;
    let mut o = ReadOptions::default();
    o.offset = t.offset.unwrap_or(1);
    o.limit = t.limit.unwrap_or(o.limit);
    o.max_bytes = t.max_bytes.unwrap_or(o.max_bytes);
    o.max_columns = t.max_columns.unwrap_or(o.max_columns);
    o.numbered = t.numbered.unwrap_or(false);
    let images = t.images.unwrap_or(false);
    let full = expand_path(&path);
    let target = full.clone();
    // A small regular file is read right here: handing it to a worker thread costs more than
    // reading it, and the two thread wake-ups add latency on a busy machine.
    let small = std::fs::metadata(&full).is_ok_and(|m| m.is_file() && m.len() <= INLINE_READ_MAX);
    let result = if small {
        read::read(&target, &o)
    } else {
        blocking(move || read::read(&target, &o)).await?
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e) => return failure(&lua, e.to_string()),
    };
    let t = lua.create_table()?;
    match outcome {
        ReadOutcome::Directory => t.set("kind", "directory")?,
        ReadOutcome::Binary {
            kind,
            size,
            mime,
            stamp,
        } => {
            ledger::with(&lua, |l| l.record(&full, stamp));
            if images && mime.is_some() {
                // Decoding and resizing take milliseconds to seconds: off the Lua thread.
                let target = full.clone();
                let prepared = blocking(move || {
                    std::fs::read(&target)
                        .map_err(|e| e.to_string())
                        .and_then(|b| crate::native::image::prepare(&b).map_err(|e| e.to_string()))
                })
                .await?;
                match prepared {
                    Ok(img) => {
                        t.set("kind", "image")?;
                        t.set("mime_type", img.mime_type)?;
                        t.set("size", size)?;
                        t.set("bytes", img.bytes)?;
                        t.set("width", img.width)?;
                        t.set("height", img.height)?;
                        t.set("original_width", img.original_width)?;
                        t.set("original_height", img.original_height)?;
                        t.set("data", img.data)?;
                        return success(t);
                    }
                    Err(e) => t.set("image_error", e)?,
                }
            }
            t.set("kind", "binary")?;
            t.set("binary_kind", kind)?;
            t.set("size", size)?;
            t.set("mime", mime)?;
        }
        ReadOutcome::Text(w) => {
            ledger::with(&lua, |l| l.record(&full, w.stamp));
            t.set("kind", "text")?;
            t.set("text", w.text)?;
            t.set("first_line", w.first_line)?;
            t.set("last_line", w.last_line)?;
            t.set("total_lines", w.total_lines)?;
            t.set("total_bytes", w.total_bytes)?;
            t.set("next_offset", w.next_offset)?;
            t.set("truncated_by", w.truncated_by)?;
            t.set("clipped_lines", w.clipped_lines)?;
            t.set("first_clipped_line", w.first_clipped_line)?;
            t.set("escaped_bytes", w.escaped_bytes)?;
            t.set("crlf", w.crlf)?;
            t.set("bom", w.bom)?;
        }
    }
    success(t)
}

/// What a write reports: lines before, created, the new stamp, the diff (and whether it was
/// cut).
type Written = (usize, bool, FileStamp, Option<(String, bool)>);

/// Bytes of a `write` diff kept in the result (the TUI shows it; sessions store it).
const WRITE_DIFF_BYTES: usize = 64 * 1024;

/// The unified diff of a write (from nothing for a new file); none when either side is not
/// UTF-8 or both together exceed 4 MB (the diff would be cut anyway).
fn write_diff(label: &str, before: Option<&[u8]>, after: &[u8]) -> Option<(String, bool)> {
    let old = std::str::from_utf8(before.unwrap_or_default()).ok()?;
    let new = std::str::from_utf8(after).ok()?;
    if old.len() + new.len() > 4 * 1024 * 1024 {
        return None;
    }
    Some(crate::native::edit::unified_whole(
        label,
        old,
        new,
        WRITE_DIFF_BYTES,
    ))
}

/// `fs.write(path, content)` -> `{path, bytes, lines_before, lines_after, created, diff,
/// diff_truncated}` (`diff`: unified, at most 64 KB, absent for non-UTF-8 content) or
/// `nil, message`. Atomic, parents created, an existing file's mode kept. In a strict (agent)
/// session an existing file must have been read, and not changed since.
async fn write_fn(
    lua: Lua,
    (path, content): (String, mlua::LuaString),
) -> mlua::Result<(Value, Value)> {
    let full = expand_path(&path);
    let (strict, expected) = ledger::with(&lua, |l| (l.strict, l.get(&full)));
    let bytes = content.as_bytes().to_vec();
    let target = full.clone();
    let label = path.clone();
    let result = blocking(move || -> Result<Written, String> {
        if target.is_dir() {
            return Err(format!("{} is a directory; write needs a file path", target.display()));
        }
        refuse_special(&target)?;
        if let Some(file) = file_ancestor(&target) {
            return Err(format!(
                "cannot write {}: {} is a file, not a directory; choose a path whose parent is a directory",
                target.display(),
                file.display()
            ));
        }
        let before = match std::fs::read(&target) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", target.display())),
        };
        if before.is_some() && strict {
            {
                match &expected {
                    None => {
                        return Err(format!(
                            "refusing to overwrite {}: this session has not read it. Read it first, or change it with edit.",
                            target.display()
                        ))
                    }
                    Some(stamp) => nfs::check_fresh(&target, stamp).map_err(|e| format!("{e}; read it again before writing"))?,
                }
            }
        }
        nfs::write_atomic_create_dirs(&target, &bytes, None).map_err(|e| e.to_string())?;
        let meta = std::fs::metadata(&target).map_err(|e| e.to_string())?;
        let lines_before = before.as_deref().map_or(0, read::count_lines);
        let diff = write_diff(&label, before.as_deref(), &bytes);
        Ok((lines_before, before.is_none(), FileStamp::of_bytes(&meta, &bytes), diff))
    })
    .await?;
    match result {
        Ok((lines_before, created, stamp, diff)) => {
            ledger::with(&lua, |l| l.record(&full, stamp));
            let t = lua.create_table()?;
            t.set("path", full.to_string_lossy().as_ref())?;
            t.set("bytes", content.as_bytes().len())?;
            t.set("lines_before", lines_before)?;
            t.set("lines_after", read::count_lines(&content.as_bytes()))?;
            t.set("created", created)?;
            if let Some((diff, cut)) = diff {
                t.set("diff", diff)?;
                t.set("diff_truncated", cut)?;
            }
            success(t)
        }
        Err(msg) => failure(&lua, msg),
    }
}

/// `fs.list(path, {depth, limit})` -> `{text, total, truncated}` or `nil, message`.
async fn list_fn(lua: Lua, (path, opts): (String, Value)) -> mlua::Result<(Value, Value)> {
    let o: ListOpts = super::options(&lua, opts)?;
    let depth = o.depth.unwrap_or(1);
    let limit = o.limit.unwrap_or(500);
    let full = expand_path(&path);
    match blocking(move || search::list_dir(&full, depth, limit)).await? {
        Ok(r) => {
            let t = lua.create_table()?;
            t.set("text", search::render_list(&r))?;
            t.set("total", r.total)?;
            t.set("truncated", r.truncated)?;
            let entries = lua.create_table()?;
            for e in &r.entries {
                entries.push(e.display())?;
            }
            t.set("entries", entries)?;
            t.set("issues", super::array(&lua, &r.issues.messages)?)?;
            success(t)
        }
        Err(e) => failure(&lua, e.to_string()),
    }
}

/// The nearest ancestor of `path` that exists as a regular file (so `path` cannot be created).
fn file_ancestor(path: &std::path::Path) -> Option<std::path::PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.is_file())
        .map(|a| a.to_path_buf())
}

/// Refuses an existing path that is not a regular file (a FIFO, a device): opening one to read
/// it can block forever or never end. A missing path is fine (it will be created).
pub(super) fn refuse_special(path: &std::path::Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => Err(format!(
            "{} is not a regular file (a pipe, socket or device); give the path of a file",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// A regular file of at most `max` bytes, read whole; why not otherwise.
/// What `read_text` keeps of a file larger than its bound.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    Whole,
    Head,
    Tail,
}

/// Bytes `write_small` and `append` take at once (they run on the Lua thread).
const SMALL_WRITE_MAX: usize = 1 << 20;

#[cfg(test)]
fn read_small(path: &std::path::Path, max: usize) -> Result<Vec<u8>, String> {
    read_bounded(path, max, Keep::Whole)
}

fn read_bounded(path: &std::path::Path, max: usize, keep: Keep) -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if keep == Keep::Tail && meta.len() > max as u64 {
        f.seek(SeekFrom::Start(meta.len() - max as u64))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut out = Vec::new();
    f.take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if out.len() > max {
        if keep == Keep::Whole {
            return Err(format!("{} is larger than {max} bytes", path.display()));
        }
        out.truncate(max);
    }
    Ok(out)
}

fn append_small(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    if bytes.len() > SMALL_WRITE_MAX {
        return Err(format!(
            "{}: {} bytes is too large to append at once",
            path.display(),
            bytes.len()
        ));
    }
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    };
    let mut f = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            open()
        }
        other => other,
    }
    .map_err(|e| format!("{}: {e}", path.display()))?;
    // One write call: concurrent appenders (two fen windows) do not interleave a record.
    f.write_all(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod read_small_tests {
    use super::read_small;

    #[test]
    fn reads_small_files_and_refuses_large_ones_and_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a.md");
        std::fs::write(&f, "hello").expect("write");
        assert_eq!(read_small(&f, 5).expect("fits"), b"hello");
        assert!(read_small(&f, 4)
            .expect_err("over")
            .contains("larger than 4 bytes"));
        assert!(read_small(dir.path(), 10)
            .expect_err("dir")
            .contains("not a regular file"));
        assert!(read_small(&dir.path().join("none"), 10).is_err());
    }

    #[test]
    fn keeps_the_head_or_the_tail_of_a_larger_file() {
        use super::{read_bounded, Keep};
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("h.jsonl");
        std::fs::write(&f, "0123456789").expect("write");
        assert_eq!(read_bounded(&f, 4, Keep::Head).expect("head"), b"0123");
        assert_eq!(read_bounded(&f, 4, Keep::Tail).expect("tail"), b"6789");
        assert_eq!(
            read_bounded(&f, 40, Keep::Tail).expect("all"),
            b"0123456789"
        );
    }

    #[test]
    fn appends_creating_the_file_and_its_parents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a/b/h.jsonl");
        super::append_small(&f, b"one\n").expect("first");
        super::append_small(&f, b"two\n").expect("second");
        assert_eq!(std::fs::read(&f).expect("read"), b"one\ntwo\n");
    }
}
