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
    /// Its front matter and body, or why it could not be read.
    pub parsed: Result<FrontMatter, String>,
}

/// Every `ROOT/NAME/file_name` of the given roots, in root order and by name within a root.
/// Names starting with `.` are skipped; missing roots are not an error.
pub fn scan(roots: &[PathBuf], file_name: &str) -> Vec<FoundDoc> {
    scan_with(roots, |_, entry| {
        entry
            .is_dir()
            .then(|| (entry.clone(), entry.join(file_name)))
    })
}

/// Every `ROOT/*{suffix}` file of the given roots (agent definitions: `agents/NAME.md`), in
/// root order and by name within a root; `dir` is the root. Names starting with `.` are
/// skipped; missing roots are not an error.
pub fn scan_files(roots: &[PathBuf], suffix: &str) -> Vec<FoundDoc> {
    scan_with(roots, |root, entry| {
        let named = entry.file_name()?.to_string_lossy().ends_with(suffix);
        (named && entry.is_file()).then(|| (root.to_path_buf(), entry.clone()))
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
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut subs: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            subs.sort();
            subs.reverse();
            dirs.extend(subs.into_iter().map(|p| (p, level + 1)));
        }
    }
    out
}

/// The documents `pick` names (its dir and file) among each root's entries not starting with
/// `.`, sorted; a file that does not exist is skipped, one that cannot be read is kept with
/// the reason.
fn scan_with(
    roots: &[PathBuf],
    mut pick: impl FnMut(&Path, &PathBuf) -> Option<(PathBuf, PathBuf)>,
) -> Vec<FoundDoc> {
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        paths.sort();
        for (dir, file) in paths.iter().filter_map(|p| pick(root, p)) {
            let parsed = match std::fs::read(&file) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => parse(&text).map_err(|e| e.to_string()),
                    Err(_) => Err(format!("{} is not UTF-8", file.display())),
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => Err(format!("cannot read {}: {e}", file.display())),
            };
            out.push(FoundDoc {
                root: i,
                dir,
                file,
                parsed,
            });
        }
    }
    out
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
}
