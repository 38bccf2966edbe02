//! Extension discovery: which roots to search, in which priority, and what each holds.
//!
//! Roots, highest priority first (DESIGN "Extensions"):
//! 1. `--extension PATH` (always loads, even when its manifest disables it by default)
//! 2. `--extension-root DIR` / `FEN_EXTENSION_ROOT`: a first-party source checkout (searched
//!    recursively through its category folders, like the embedded set)
//! 3. `.fen/extensions/` in the working directory and each parent up to the repository root
//! 4. `FEN_EXTENSIONS_PATH` (colon-separated), then `$XDG_CONFIG_HOME/fen/extensions/`
//! 5. the first-party extensions embedded in the binary
//!
//! An extension is a directory holding `init.lua` or `manifest.lua`, or a single `.lua` file.
//! Entries whose names start with `.` or `_` are skipped; a directory beats a file of the same
//! name. This module only finds candidates; the host evaluates manifests, picks the first
//! candidate per name and records the shadowed ones.

use std::path::{Path, PathBuf};

/// One first-party file embedded at build time from `extensions/`.
#[derive(Debug)]
pub struct EmbeddedFile {
    /// Path relative to `extensions/`, e.g. `behaviors/kernel/builtin-tools/init.lua`.
    pub path: &'static str,
    pub source: &'static str,
    /// Lua 5.4 bytecode of `source` compiled by build.rs under the chunk name
    /// `@<embedded>/extensions/{path}`, debug information kept; empty when it did not compile
    /// (the source is loaded then, which reports the error).
    pub bytecode: &'static [u8],
}

/// The first-party extension files, embedded at build time from `extensions/`, sorted by path.
pub static EMBEDDED: &[EmbeddedFile] =
    include!(concat!(env!("OUT_DIR"), "/embedded_extensions.rs"));

/// Which kind of root a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    Explicit,
    Overlay,
    Project,
    User,
    Embedded,
}

impl RootKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RootKind::Explicit => "explicit",
            RootKind::Overlay => "overlay",
            RootKind::Project => "project",
            RootKind::User => "user",
            RootKind::Embedded => "embedded",
        }
    }
    /// First-party code: the embedded set and a first-party source checkout.
    pub fn first_party(self) -> bool {
        matches!(self, RootKind::Overlay | RootKind::Embedded)
    }
}

/// One place to search, in priority order.
#[derive(Debug, Clone)]
pub struct Root {
    pub kind: RootKind,
    /// Directory (or, for `Explicit`, the extension itself); `None` for the embedded set.
    pub path: Option<PathBuf>,
    /// Position in the root list: lower wins.
    pub rank: usize,
}

impl Root {
    pub fn display(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "<embedded>".to_string(),
        }
    }
}

/// Where an extension's files are.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// A directory on disk with `init.lua`/`manifest.lua`.
    Dir(PathBuf),
    /// A single `.lua` file on disk.
    File(PathBuf),
    /// A directory of the embedded set (path relative to `extensions/`).
    EmbeddedDir(String),
}

impl Location {
    /// Reads a file of the extension by path relative to the extension's directory.
    pub fn read(&self, rel: &str) -> std::io::Result<String> {
        match self {
            Location::Dir(dir) => std::fs::read_to_string(dir.join(rel)),
            Location::File(file) => {
                let dir = file.parent().unwrap_or(Path::new("."));
                std::fs::read_to_string(dir.join(rel))
            }
            Location::EmbeddedDir(_) => self.code(rel).map(|c| c.source().to_string()),
        }
    }

    /// A file of the extension as code to load: the source read from disk, or the embedded
    /// file (source and bytecode).
    pub fn code(&self, rel: &str) -> std::io::Result<Code> {
        match self {
            Location::Dir(_) | Location::File(_) => self.read(rel).map(Code::Source),
            Location::EmbeddedDir(prefix) => {
                let key = format!("{prefix}/{rel}");
                embedded(&key).map(Code::Embedded).ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no embedded file {key}"),
                    )
                })
            }
        }
    }

    /// Whether the extension has the file `rel`.
    pub fn has_file(&self, rel: &str) -> bool {
        match self {
            Location::Dir(dir) => dir.join(rel).is_file(),
            Location::File(file) => file.parent().unwrap_or(Path::new(".")).join(rel).is_file(),
            Location::EmbeddedDir(prefix) => embedded(&format!("{prefix}/{rel}")).is_some(),
        }
    }

    /// The path shown to users for a file of this extension (errors, tracebacks).
    pub fn display_file(&self, rel: &str) -> String {
        match self {
            Location::Dir(dir) => dir.join(rel).display().to_string(),
            Location::File(file) => match file.parent() {
                Some(dir) if rel != file.file_name().and_then(|n| n.to_str()).unwrap_or("") => {
                    dir.join(rel).display().to_string()
                }
                _ => file.display().to_string(),
            },
            Location::EmbeddedDir(prefix) => format!("<embedded>/extensions/{prefix}/{rel}"),
        }
    }

    /// The entry file when no manifest names one.
    pub fn default_entry(&self) -> String {
        match self {
            Location::File(f) => f
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("init.lua")
                .to_string(),
            _ => "init.lua".to_string(),
        }
    }

    pub fn has_manifest(&self) -> bool {
        match self {
            Location::Dir(dir) => dir.join("manifest.lua").is_file(),
            Location::File(_) => false,
            Location::EmbeddedDir(_) => self.has_file("manifest.lua"),
        }
    }
}

/// Code of one extension file, ready for `crate::host::vm::load_code`.
#[derive(Debug, Clone)]
pub enum Code {
    /// Source read from disk (user extensions, `--extension-root`).
    Source(String),
    /// A first-party file embedded in the binary: loaded from its bytecode.
    Embedded(&'static EmbeddedFile),
}

impl Code {
    pub fn source(&self) -> &str {
        match self {
            Code::Source(s) => s,
            Code::Embedded(f) => f.source,
        }
    }
}

/// The embedded file at `path` (relative to `extensions/`).
pub fn embedded(path: &str) -> Option<&'static EmbeddedFile> {
    EMBEDDED
        .binary_search_by(|f| f.path.cmp(path))
        .ok()
        .map(|i| &EMBEDDED[i])
}

/// A found extension, before its manifest is read.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Name from the directory or file stem; the manifest may rename it.
    pub default_name: String,
    pub root: Root,
    pub location: Location,
    /// Set when a directory of the same name in the same root beat this file.
    pub shadowed_by_dir: bool,
}

/// What the roots are made from.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryConfig {
    pub explicit: Vec<PathBuf>,
    pub overlay: Option<PathBuf>,
    pub cwd: PathBuf,
    pub extensions_path: Vec<PathBuf>,
    pub config_dir: PathBuf,
    pub embedded: bool,
    /// Whether project extensions (`.fen/extensions/`) may run: the folder is trusted.
    pub project_trusted: bool,
}

/// The roots in priority order.
pub fn roots(cfg: &DiscoveryConfig) -> Vec<Root> {
    let mut roots = Vec::new();
    let mut push = |kind, path: Option<PathBuf>| {
        let rank = roots.len();
        roots.push(Root { kind, path, rank });
    };
    for p in &cfg.explicit {
        push(RootKind::Explicit, Some(p.clone()));
    }
    if let Some(o) = &cfg.overlay {
        push(RootKind::Overlay, Some(o.clone()));
    }
    for dir in project_dirs(&cfg.cwd) {
        push(RootKind::Project, Some(dir));
    }
    for p in &cfg.extensions_path {
        push(RootKind::User, Some(p.clone()));
    }
    push(RootKind::User, Some(cfg.config_dir.join("extensions")));
    if cfg.embedded {
        push(RootKind::Embedded, None);
    }
    roots
}

/// `.fen/extensions` in `cwd` and each parent up to the repository root (the first directory
/// holding `.git`); outside a repository, only `cwd`'s. Nearest first.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut in_repo = false;
    let mut chain = Vec::new();
    for dir in cwd.ancestors() {
        chain.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            in_repo = true;
            break;
        }
    }
    if !in_repo {
        chain.truncate(1);
    }
    for dir in chain {
        let candidate = dir.join(".fen").join("extensions");
        if candidate.is_dir() {
            out.push(candidate);
        }
    }
    out
}

/// Every candidate in every root, in priority order.
pub fn discover(cfg: &DiscoveryConfig) -> Vec<Candidate> {
    let mut out = Vec::new();
    for root in roots(cfg) {
        match root.kind {
            RootKind::Explicit => {
                if let Some(p) = &root.path {
                    if let Some(c) = explicit_candidate(p, &root) {
                        out.push(c);
                    }
                }
            }
            RootKind::Overlay => {
                if let Some(p) = &root.path {
                    scan_dir(p, &root, true, &mut out);
                }
            }
            RootKind::Project | RootKind::User => {
                if let Some(p) = &root.path {
                    scan_dir(p, &root, false, &mut out);
                }
            }
            RootKind::Embedded => embedded_candidates(&root, &mut out),
        }
    }
    out
}

fn explicit_candidate(path: &Path, root: &Root) -> Option<Candidate> {
    let name = stem(path)?;
    let location = if path.is_dir() {
        Location::Dir(path.to_path_buf())
    } else {
        Location::File(path.to_path_buf())
    };
    Some(Candidate {
        default_name: name,
        root: root.clone(),
        location,
        shadowed_by_dir: false,
    })
}

fn stem(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    Some(name.strip_suffix(".lua").unwrap_or(name).to_string())
}

fn skipped(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

fn is_extension_dir(dir: &Path) -> bool {
    dir.join("init.lua").is_file() || dir.join("manifest.lua").is_file()
}

/// Scans one directory root. `recursive`: descend into folders that are not extensions
/// (the first-party category layout).
fn scan_dir(dir: &Path, root: &Root, recursive: bool, out: &mut Vec<Candidate>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
        .filter(|(n, _)| !skipped(n))
        .collect();
    names.sort();
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for (name, path) in names {
        if path.is_dir() {
            if is_extension_dir(&path) {
                dirs.push(Candidate {
                    default_name: name,
                    root: root.clone(),
                    location: Location::Dir(path),
                    shadowed_by_dir: false,
                });
            } else if recursive {
                scan_dir(&path, root, true, out);
            }
        } else if let Some(stem) = name.strip_suffix(".lua") {
            files.push(Candidate {
                default_name: stem.to_string(),
                root: root.clone(),
                location: Location::File(path),
                shadowed_by_dir: false,
            });
        }
    }
    // A directory beats a file of the same name: the file is kept, marked, after the directory.
    for f in &mut files {
        f.shadowed_by_dir = dirs.iter().any(|d| d.default_name == f.default_name);
    }
    out.extend(dirs);
    out.extend(files);
}

fn embedded_candidates(root: &Root, out: &mut Vec<Candidate>) {
    let mut dirs: Vec<&str> = EMBEDDED
        .iter()
        .filter_map(|f| {
            f.path
                .strip_suffix("/init.lua")
                .or_else(|| f.path.strip_suffix("/manifest.lua"))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    // An extension's own sub-folders are modules, not extensions. (Compared in place: a
    // `format!` per pair was a twentieth of a `fen list tools`.)
    let inside = |d: &str, outer: &str| {
        d.strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    let dirs: Vec<&str> = dirs
        .iter()
        .copied()
        .filter(|d| !dirs.iter().any(|outer| d != outer && inside(d, outer)))
        .collect();
    for dir in dirs {
        let name = dir.rsplit('/').next().unwrap_or(dir).to_string();
        if skipped(&name) {
            continue;
        }
        out.push(Candidate {
            default_name: name,
            root: root.clone(),
            location: Location::EmbeddedDir(dir.to_string()),
            shadowed_by_dir: false,
        });
    }
}

/// Whether an executable of this name is on `PATH`.
pub fn binary_on_path(name: &str) -> bool {
    if name.contains('/') {
        return is_executable(Path::new(name));
    }
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name)))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
