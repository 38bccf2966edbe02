//! YAML front matter of Markdown files (SKILL.md, agent definitions): the `---` block at the
//! top parsed as YAML (yaml-rust2) into JSON values, and the body after it byte for byte;
//! [`scan`] finds and parses `ROOT/NAME/FILE` documents (skill directories). A
//! UTF-8 byte-order mark and CRLF line endings are accepted (a BOM once dropped whole skills in
//! another agent).

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

/// Why a document's front matter could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrontMatterError {
    /// The document does not start with a `---` line.
    #[error("no front matter: the file must start with a line `---`")]
    Missing,
    /// The opening `---` has no closing `---` line.
    #[error("front matter is not closed: add a line `---` after it")]
    Unclosed,
    /// The block is not valid YAML.
    #[error("front matter is not valid YAML: {0}")]
    Yaml(String),
    /// The block is valid YAML but not a mapping of keys to values.
    #[error("front matter must be a mapping of keys to values")]
    NotMapping,
}

/// A parsed document.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontMatter {
    /// The front matter's keys and values (keys as strings).
    pub fields: Map<String, Value>,
    /// Everything after the closing `---` line, unchanged.
    pub body: String,
}

/// Splits `text` into front matter and body and parses the front matter.
pub fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').map_or(text.len(), |i| i + 1);
    if text[..first_end].trim_end_matches(['\r', '\n']).trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut pos = first_end;
    let (yaml_end, body_start) = loop {
        if pos >= text.len() {
            return Err(FrontMatterError::Unclosed);
        }
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = text[pos..end].trim_end_matches(['\r', '\n']).trim_end();
        if line == "---" || line == "..." {
            break (pos, end);
        }
        pos = end;
    };
    // yaml-rust2 handles CR in line breaks, but normalising keeps block scalars free of CRs.
    let yaml = text[first_end..yaml_end].replace("\r\n", "\n");
    let docs =
        YamlLoader::load_from_str(&yaml).map_err(|e| FrontMatterError::Yaml(e.to_string()))?;
    let fields = match docs.into_iter().next() {
        None | Some(Yaml::Null) => Map::new(),
        Some(Yaml::Hash(h)) => {
            let mut out = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => return Err(FrontMatterError::NotMapping),
                };
                out.insert(key, to_json(v));
            }
            out
        }
        Some(_) => return Err(FrontMatterError::NotMapping),
    };
    Ok(FrontMatter {
        fields,
        body: text[body_start..].to_string(),
    })
}

/// A document found by [`scan`].
#[derive(Debug, Clone, PartialEq)]
pub struct FoundDoc {
    /// Index of the root it was found in.
    pub root: usize,
    /// The directory holding it (`root/NAME`).
    pub dir: PathBuf,
    /// The document itself (`root/NAME/FILE`).
    pub file: PathBuf,
    /// Its front matter and body (empty when only the front matter was read: [`scan`]), or
    /// why it could not be read.
    pub parsed: Result<FrontMatter, String>,
    /// The body's length in bytes.
    pub body_bytes: usize,
}

/// Every `ROOT/NAME/file_name` of the given roots, in root order and by name within a root.
/// Names starting with `.` are skipped; missing roots are not an error. Only each file's front
/// matter is read (the listing in the system prompt needs names and descriptions, not bodies);
/// `body` is empty and [`FoundDoc::body_bytes`] says how long it is.
pub fn scan(roots: &[PathBuf], file_name: &str) -> Vec<FoundDoc> {
    scan_with(roots, false, |_, entry, kind| {
        (kind == Kind::Dir).then(|| (entry.clone(), entry.join(file_name)))
    })
}

/// Every `ROOT/*{suffix}` file of the given roots (agent definitions: `agents/NAME.md`), in
/// root order and by name within a root; `dir` is the root. Names starting with `.` are
/// skipped; missing roots are not an error.
pub fn scan_files(roots: &[PathBuf], suffix: &str) -> Vec<FoundDoc> {
    scan_with(roots, true, |root, entry, kind| {
        let named = entry.file_name()?.to_string_lossy().ends_with(suffix);
        (named && kind == Kind::File).then(|| (root.to_path_buf(), entry.clone()))
    })
}

/// Every file ending in `suffix` under each root, nested directories included (to `depth`
/// levels; entries starting with `.` skipped), sorted per directory; `dir` is the file's own
/// directory. Markdown commands (`/dir:name`) are found this way.
pub fn scan_tree(roots: &[PathBuf], suffix: &str, depth: usize) -> Vec<FoundDoc> {
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let mut dirs = vec![(root.clone(), 0usize)];
        while let Some((dir, level)) = dirs.pop() {
            let found = scan_files(std::slice::from_ref(&dir), suffix);
            out.extend(found.into_iter().map(|mut d| {
                d.root = i;
                d
            }));
            if level >= depth {
                continue;
            }
            let Some(entries) = cache::list(&dir) else {
                continue;
            };
            let mut subs: Vec<PathBuf> = entries
                .iter()
                .filter(|(_, k)| *k == Kind::Dir)
                .map(|(p, _)| p.clone())
                .collect();
            subs.reverse();
            dirs.extend(subs.into_iter().map(|p| (p, level + 1)));
        }
    }
    out
}

/// What a directory entry is (symlinks followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Other,
}

/// The documents `pick` names (its dir and file) among each root's entries not starting with
/// `.`, sorted; a file that does not exist is skipped, one that cannot be read is kept with
/// the reason. `whole`: read the body too, else only the front matter.
fn scan_with(
    roots: &[PathBuf],
    whole: bool,
    mut pick: impl FnMut(&Path, &PathBuf, Kind) -> Option<(PathBuf, PathBuf)>,
) -> Vec<FoundDoc> {
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let Some(entries) = cache::list(root) else {
            continue;
        };
        for (dir, file) in entries.iter().filter_map(|(p, k)| pick(root, p, *k)) {
            let Some(read) = cache::read(&file, whole) else {
                continue;
            };
            out.push(FoundDoc {
                root: i,
                dir,
                file,
                parsed: read.parsed,
                body_bytes: read.body_bytes,
            });
        }
    }
    out
}

/// The directory listings and documents scans read, kept for the process and reused while
/// each path's stamp (device, inode, size, modification time) is unchanged: the several
/// companions that look for Markdown documents (skills, agents, commands) and every reload
/// list each directory and parse each file once, and a reload pays one `stat` per path that
/// did not change. A path changed within the racy margin of its reading is never reused
/// (file system clocks tick coarsely; git's "racy timestamp" rule).
mod cache {
    use super::{parse, FrontMatter, Kind};
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Stamp {
        dev: u64,
        ino: u64,
        size: u64,
        mtime: i64,
        mtime_nsec: i64,
    }

    const RACY_MARGIN: Duration = Duration::from_millis(100);

    /// The stamp of `p` (following symlinks) and whether it is recent enough to be racy.
    fn stamp(p: &Path) -> Option<(Stamp, bool)> {
        let m = std::fs::metadata(p).ok()?;
        let s = Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        };
        let changed = s.mtime as i128 * 1_000_000_000 + s.mtime_nsec as i128;
        let limit = SystemTime::now()
            .checked_sub(RACY_MARGIN)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Some((s, changed >= limit))
    }

    /// What reading one document gave.
    #[derive(Clone)]
    pub(super) struct Read {
        pub parsed: Result<FrontMatter, String>,
        pub body_bytes: usize,
    }

    type Listing = Arc<Vec<(PathBuf, Kind)>>;

    #[derive(Default)]
    struct Store {
        dirs: HashMap<PathBuf, (Stamp, Listing)>,
        /// Keyed by path and whether the body was read.
        docs: HashMap<(PathBuf, bool), (Stamp, Read)>,
    }

    /// Bounds the store (a long session reloading over many projects).
    const MAX_ENTRIES: usize = 4096;

    fn store() -> std::sync::MutexGuard<'static, Store> {
        static S: OnceLock<Mutex<Store>> = OnceLock::new();
        S.get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The entries of `dir` not starting with `.`, sorted by path, each with its kind; `None`
    /// when `dir` cannot be listed.
    pub(super) fn list(dir: &Path) -> Option<Listing> {
        let (st, racy) = stamp(dir)?;
        if let Some((s, l)) = store().dirs.get(dir) {
            if *s == st {
                return Some(l.clone());
            }
        }
        let mut entries: Vec<(PathBuf, Kind)> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| {
                let p = e.path();
                // The entry's type, following a symlink only when it is one.
                let kind = match e.file_type() {
                    Ok(t) if t.is_dir() => Kind::Dir,
                    Ok(t) if t.is_file() => Kind::File,
                    _ => match std::fs::metadata(&p) {
                        Ok(m) if m.is_dir() => Kind::Dir,
                        Ok(m) if m.is_file() => Kind::File,
                        _ => Kind::Other,
                    },
                };
                (p, kind)
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let listing = Arc::new(entries);
        if !racy {
            let mut s = store();
            if s.dirs.len() >= MAX_ENTRIES {
                s.dirs.clear();
            }
            s.dirs.insert(dir.to_path_buf(), (st, listing.clone()));
        }
        Some(listing)
    }

    /// Reads and parses `file` (its front matter only unless `whole`); `None` when it does not
    /// exist.
    pub(super) fn read(file: &Path, whole: bool) -> Option<Read> {
        let st = stamp(file);
        let key = (file.to_path_buf(), whole);
        if let Some((s, _)) = st {
            if let Some((cs, r)) = store().docs.get(&key) {
                if *cs == s {
                    return Some(r.clone());
                }
            }
        }
        let read = match read_doc(file, whole) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => Read {
                parsed: Err(format!("cannot read {}: {e}", file.display())),
                body_bytes: 0,
            },
        };
        if let Some((s, false)) = st {
            let mut store = store();
            if store.docs.len() >= MAX_ENTRIES {
                store.docs.clear();
            }
            store.docs.insert(key, (s, read.clone()));
        }
        Some(read)
    }

    fn read_doc(file: &Path, whole: bool) -> std::io::Result<Read> {
        let utf8 = |bytes: Vec<u8>| {
            String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", file.display()))
        };
        if whole {
            let text = utf8(std::fs::read(file)?);
            let parsed = text.and_then(|t| parse(&t).map_err(|e| e.to_string()));
            let body_bytes = parsed.as_ref().map_or(0, |f| f.body.len());
            return Ok(Read { parsed, body_bytes });
        }
        let (head, size) = read_head(file)?;
        let unread = (size as usize).saturating_sub(head.len());
        let parsed = utf8(head).and_then(|t| parse(&t).map_err(|e| e.to_string()));
        let (parsed, body_bytes) = match parsed {
            Ok(mut fm) => {
                // What was read past the front matter, plus what was not read.
                let read_past = std::mem::take(&mut fm.body).len();
                (Ok(fm), read_past + unread)
            }
            Err(e) => (Err(e), 0),
        };
        Ok(Read { parsed, body_bytes })
    }

    /// The start of `file` up to the end of its front matter (the closing `---` line), or the
    /// whole file when it has none; cut back to a character boundary. Also the file's size.
    fn read_head(file: &Path) -> std::io::Result<(Vec<u8>, u64)> {
        use std::io::Read as _;
        let mut f = std::fs::File::open(file)?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let mut buf = Vec::with_capacity(size.min(8192) as usize);
        let mut chunk = [0u8; 8192];
        loop {
            let n = f.read(&mut chunk)?;
            if n == 0 {
                return Ok((buf, size));
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = front_matter_end(&buf) {
                buf.truncate(end);
                return Ok((buf, size));
            }
            // Not front matter at all: no need to read further.
            if buf.len() >= 4 && !starts_front_matter(&buf) {
                return Ok((buf, size));
            }
        }
    }

    fn starts_front_matter(b: &[u8]) -> bool {
        let b = b.strip_prefix("\u{feff}".as_bytes()).unwrap_or(b);
        b.starts_with(b"---")
    }

    /// The byte offset just past the closing `---` (or `...`) line, when `b` holds it.
    fn front_matter_end(b: &[u8]) -> Option<usize> {
        let first = memchr::memchr(b'\n', b)? + 1;
        let mut pos = first;
        while let Some(i) = memchr::memchr(b'\n', &b[pos..]) {
            let end = pos + i + 1;
            let line = b[pos..end].trim_ascii_end();
            if line == b"---" || line == b"..." {
                return Some(end);
            }
            pos = end;
        }
        None
    }
}

fn to_json(y: Yaml) -> Value {
    match y {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(r), Value::Number),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s,
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        other => format!("{other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_keeps_the_body_byte_for_byte() {
        let doc = "---\nname: pdf\ndescription: >\n  Fill PDF forms\n  and more.\ndisable-model-invocation: true\nmetadata:\n  a: 1\n---\n# Body\r\n\nline\n";
        let fm = parse(doc).unwrap();
        assert_eq!(fm.fields["name"], "pdf");
        assert_eq!(fm.fields["description"], "Fill PDF forms and more.\n");
        assert_eq!(fm.fields["disable-model-invocation"], true);
        assert_eq!(fm.fields["metadata"]["a"], 1);
        assert_eq!(fm.body, "# Body\r\n\nline\n");
    }

    #[test]
    fn a_bom_and_crlf_endings_parse() {
        let doc = "\u{feff}---\r\nname: x\r\ndescription: \"quoted: yes\"\r\n---\r\nbody\r\n";
        let fm = parse(doc).unwrap();
        assert_eq!(fm.fields["name"], "x");
        assert_eq!(fm.fields["description"], "quoted: yes");
        assert_eq!(fm.body, "body\r\n");
    }

    #[test]
    fn malformed_documents_say_why() {
        assert_eq!(parse("# no front matter"), Err(FrontMatterError::Missing));
        assert_eq!(parse("---\nname: x\n"), Err(FrontMatterError::Unclosed));
        assert!(matches!(
            parse("---\nname: [x\n---\n"),
            Err(FrontMatterError::Yaml(_))
        ));
        assert_eq!(parse("---\n- a\n---\n"), Err(FrontMatterError::NotMapping));
        assert!(parse("---\n---\n").unwrap().fields.is_empty());
    }

    #[test]
    fn scan_files_reads_each_markdown_file_of_each_root_in_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("z.md"), "---\nname: z\n---\nZ body\n").unwrap();
        std::fs::write(a.path().join("a.md"), "no front matter").unwrap();
        std::fs::write(a.path().join(".hidden.md"), "---\nname: h\n---\n").unwrap();
        std::fs::write(a.path().join("notes.txt"), "---\nname: t\n---\n").unwrap();
        std::fs::create_dir(a.path().join("dir.md")).unwrap();
        std::fs::write(b.path().join("b.md"), "---\nname: b\n---\n").unwrap();
        let roots = [
            a.path().to_path_buf(),
            PathBuf::from("/nonexistent"),
            b.path().to_path_buf(),
        ];
        let found = scan_files(&roots, ".md");
        let names: Vec<(usize, String)> = found
            .iter()
            .map(|d| {
                (
                    d.root,
                    d.file.file_name().unwrap().to_string_lossy().into_owned(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (0, "a.md".to_string()),
                (0, "z.md".into()),
                (2, "b.md".into())
            ]
        );
        assert!(found[0].parsed.is_err());
        let z = found[1].parsed.as_ref().unwrap();
        assert_eq!(z.fields["name"], "z");
        assert_eq!(z.body, "Z body\n");
    }

    #[test]
    fn scan_reads_front_matter_only_and_sees_every_change() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("pdf");
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("SKILL.md");
        let body = "# Body\n".repeat(5000);
        std::fs::write(
            &file,
            format!("---\nname: pdf\ndescription: d\n---\n{body}"),
        )
        .unwrap();
        let roots = [t.path().to_path_buf()];
        let found = scan(&roots, "SKILL.md");
        let fm = found[0].parsed.as_ref().unwrap();
        assert_eq!(fm.fields["name"], "pdf");
        assert_eq!(fm.body, "", "the body is not read");
        assert_eq!(found[0].body_bytes, body.len());
        // Whole reads (agents, commands) still get the body.
        let whole = scan_files(std::slice::from_ref(&dir), ".md");
        assert_eq!(whole[0].parsed.as_ref().unwrap().body, body);
        // A change (same size even) and a new directory are seen by the next scan.
        std::fs::write(
            &file,
            format!("---\nname: pdq\ndescription: d\n---\n{body}"),
        )
        .unwrap();
        std::fs::create_dir(t.path().join("new")).unwrap();
        std::fs::write(t.path().join("new/SKILL.md"), "---\nname: new\n---\n").unwrap();
        let again = scan(&roots, "SKILL.md");
        assert_eq!(again.len(), 2);
        assert_eq!(again[1].parsed.as_ref().unwrap().fields["name"], "pdq");
    }
}
