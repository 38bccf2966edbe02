//! The workspace and path classification: resolves a path (`~`, `..`, symlinks of the part
//! that exists) and says whether it is in the workspace, outside it, protected (git metadata
//! that runs code: `.git/config`, `.git/hooks/**`, `.git` pointer files, at any depth), a secret,
//! or a device. Reads the file system (lstat/readlink) but never the environment: home and
//! config directories are inputs.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The directories a session may work in, and the user's home and config directories.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The session's working directory (resolved).
    pub cwd: PathBuf,
    /// Workspace roots (resolved): the repository root containing `cwd` (or `cwd` itself when
    /// it is in no repository) first, then the additional directories.
    pub roots: Vec<PathBuf>,
    /// The user's home directory (resolved).
    pub home: PathBuf,
    /// The user's config directory (`$XDG_CONFIG_HOME`, usually `~/.config`, resolved); fen's
    /// credential files are `<config_dir>/fen/models.json` and `<config_dir>/fen/auth.json`.
    pub config_dir: PathBuf,
    /// fen's state directory (`$XDG_STATE_HOME/fen`), where `trusted.json` and `approved.json`
    /// live; defaults to `~/.local/state/fen`.
    pub fen_state_dir: PathBuf,
}

/// The primary class of a path, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathClass {
    /// `.git/config`, `.git/hooks/**`, a `.git` pointer file (any depth), and fen's own
    /// permission and code files (`.fen/settings*.json`, `.fen/extensions/**`, `.fen/mcp.json`,
    /// the user's `settings.json`, `trusted.json`, `approved.json`).
    Protected,
    /// A block device or another device that is not a harmless stream.
    Device,
    /// Secret-like: `.env`, `*secret*`, `~/.ssh/**`, `*.pem`, fen's credential files, ...
    Secret,
    /// Not under any workspace root.
    Outside,
    /// Under a workspace root.
    Workspace,
    /// `/dev/null`, `/dev/stdout`, `/dev/tty`, ...: harmless streams.
    Stream,
    /// Could not be told (an expansion, or a relative path after `cd` to somewhere unknown).
    Unknown,
}

/// Everything classification found about one path.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PathInfo {
    /// The resolved absolute path (`None` for [`PathClass::Unknown`]).
    pub path: Option<PathBuf>,
    pub class: PathClass,
    pub in_workspace: bool,
    pub secret: bool,
    pub protected: bool,
    /// A `.git` directory itself (deleting it is destructive, not a floor).
    pub git_dir: bool,
    /// One of fen's own permission or code files (protected: a model never changes its own
    /// permissions).
    pub fen_settings: bool,
    pub block_device: bool,
    /// The file-system root `/`.
    pub is_fs_root: bool,
    /// The home directory itself.
    pub is_home: bool,
    /// A workspace root itself.
    pub is_workspace_root: bool,
    pub exists: bool,
}

impl PathInfo {
    pub fn unknown() -> PathInfo {
        PathInfo {
            path: None,
            class: PathClass::Unknown,
            in_workspace: false,
            secret: false,
            protected: false,
            git_dir: false,
            fen_settings: false,
            block_device: false,
            is_fs_root: false,
            is_home: false,
            is_workspace_root: false,
            exists: false,
        }
    }
}

impl Workspace {
    /// Builds the workspace for `cwd`: its repository root (the nearest ancestor holding a
    /// `.git` directory or pointer file) or `cwd` itself, plus `additional_dirs` (relative ones
    /// are taken from `cwd`).
    pub fn new(
        cwd: &Path,
        additional_dirs: &[PathBuf],
        home: &Path,
        config_dir: &Path,
    ) -> Workspace {
        let cwd_r = resolve(cwd);
        let primary = repo_root(&cwd_r).unwrap_or_else(|| cwd_r.clone());
        let mut roots = vec![primary];
        for d in additional_dirs {
            let r = resolve(&cwd_r.join(d));
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
        let home = resolve(home);
        Workspace {
            cwd: cwd_r,
            roots,
            fen_state_dir: home.join(".local/state/fen"),
            home,
            config_dir: resolve(config_dir),
        }
    }

    /// Names fen's state directory (`$XDG_STATE_HOME/fen`), whose `trusted.json` and
    /// `approved.json` are protected.
    pub fn with_state_dir(mut self, fen_state_dir: &Path) -> Workspace {
        self.fen_state_dir = resolve(fen_state_dir);
        self
    }

    /// fen's own permission and code files: writing them would let a model change what it
    /// may do, or plant code fen runs outside the sandbox.
    fn is_fen_settings(&self, path: &Path, contents: bool, exists: bool) -> bool {
        // Checked for every path of every command: most are nowhere near fen's files.
        let bytes = path.as_os_str().as_encoded_bytes();
        let near = memchr::memmem::find(bytes, b"/.fen").is_some()
            || below(path, &self.config_dir).is_some()
            || below(path, &self.fen_state_dir).is_some();
        if !near {
            return false;
        }
        let user_fen = |d: &Path| {
            d.strip_prefix(&self.config_dir)
                .is_ok_and(|r| r == Path::new("fen"))
        };
        let fen_dir = |d: &Path| d.file_name().is_some_and(|n| n == ".fen") || user_fen(d);
        if (contents || exists) && (fen_dir(path) || path == self.fen_state_dir) {
            return true;
        }
        if path.parent() == Some(self.fen_state_dir.as_path())
            && path
                .file_name()
                .is_some_and(|n| n == "trusted.json" || n == "approved.json")
        {
            return true;
        }
        let mut anc = path.ancestors().skip(1);
        let parent = anc.next();
        if let (Some(parent), Some(name)) = (parent, path.file_name().and_then(|n| n.to_str())) {
            if fen_dir(parent)
                && ((name.starts_with("settings") && name.ends_with(".json"))
                    || name == "mcp.json"
                    || name == "extensions")
            {
                return true;
            }
        }
        // Anything under a `.fen/extensions` (or the user's extensions) directory.
        path.ancestors().skip(1).any(|a| {
            a.file_name().is_some_and(|n| n == "extensions") && a.parent().is_some_and(fen_dir)
        })
    }

    /// The primary root (repository root or cwd).
    pub fn root(&self) -> &Path {
        &self.roots[0]
    }

    /// Turns a tool argument into an absolute path: `~` and `~/x` from home, relative from `cwd`.
    pub fn absolute(&self, raw: &str, cwd: &Path) -> PathBuf {
        if raw == "~" {
            return self.home.clone();
        }
        if let Some(rest) = raw.strip_prefix("~/") {
            return self.home.join(rest);
        }
        cwd.join(raw)
    }

    /// Classifies an absolute path. `contents` means the operation reaches the entries under
    /// the path (a glob or recursive walk), not only the path itself.
    pub fn classify(&self, lexical: &Path, contents: bool) -> PathInfo {
        self.classify_cached(lexical, contents, &mut ResolveCache::default())
    }

    /// [`Workspace::classify`] reusing directories already resolved in `cache` (one cache per
    /// decision: a command naming many files in a few directories resolves each directory once).
    pub fn classify_cached(
        &self,
        lexical: &Path,
        contents: bool,
        cache: &mut ResolveCache,
    ) -> PathInfo {
        // The same path often appears several times in one command (`cd x && ... x`): one
        // decision sees one file system, so its classification is computed once.
        // Keyed by the bytes: hashing a `Path` parses its components.
        if let Some(hit) = cache.infos[contents as usize].get(lexical.as_os_str()) {
            return hit.clone();
        }
        let info = self.classify_uncached(lexical, contents, cache);
        cache.infos[contents as usize].insert(lexical.as_os_str().to_owned(), info.clone());
        info
    }

    fn classify_uncached(
        &self,
        lexical: &Path,
        contents: bool,
        cache: &mut ResolveCache,
    ) -> PathInfo {
        let lex = normalize_lexically(lexical);
        if is_stream(&lex) {
            return PathInfo {
                path: Some(lex),
                class: PathClass::Stream,
                exists: true,
                ..PathInfo::unknown()
            };
        }
        // Resolve the path as written: `link/..` is the link target's parent, not `.`.
        let (path, seen) = cache.resolve_seen(lexical);
        // The resolution's last lookup already saw the file, unless it ended on `..`.
        let seen = seen.unwrap_or_else(|| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&path).map_or(Seen::Missing, |m| Seen::of_mode(m.mode()))
        });
        let exists = seen != Seen::Missing;
        let is_dir = seen == Seen::Dir;
        let block_device = seen == Seen::BlockDevice
            || is_block_device(&path)
            || (lex != path && is_block_device(&lex));
        let device = block_device
            || ((below(&path, Path::new("/dev")).is_some()
                || below(&lex, Path::new("/dev")).is_some())
                && !is_stream(&path));
        let in_workspace = self.roots.iter().any(|r| below(&path, r).is_some());
        // The path as resolved and as written are both judged (they differ through links).
        let same = lex == path;
        let secret = self.is_secret(&path) || (!same && self.is_secret(&lex));
        let (protected, git_dir) = {
            let (p1, g1) = protected_git(&path, contents, is_dir, exists);
            let (p2, g2) = if same {
                (false, false)
            } else {
                protected_git(&lex, contents, is_dir, exists)
            };
            (p1 || p2, g1 || g2)
        };
        let fen_settings = self.is_fen_settings(&path, contents, exists && is_dir)
            || (!same && self.is_fen_settings(&lex, contents, exists && is_dir));
        let protected = protected || fen_settings;
        let class = if protected {
            PathClass::Protected
        } else if device {
            PathClass::Device
        } else if secret {
            PathClass::Secret
        } else if in_workspace {
            PathClass::Workspace
        } else {
            PathClass::Outside
        };
        PathInfo {
            is_fs_root: path == Path::new("/"),
            is_home: path == self.home,
            is_workspace_root: self.roots.contains(&path),
            path: Some(path),
            class,
            in_workspace,
            secret,
            protected,
            git_dir,
            fen_settings,
            block_device,
            exists,
        }
    }

    /// Secret-like paths: the seed's names plus the well-known credential stores.
    pub fn is_secret(&self, path: &Path) -> bool {
        // Another process's environment holds its keys.
        if below(path, Path::new("/proc")).is_some()
            && path.file_name().is_some_and(|n| n == "environ")
        {
            return true;
        }
        if let Some(rel) = below(path, &self.home) {
            let mut parts = rel.components();
            let first = parts.next().and_then(|c| c.as_os_str().to_str());
            let rest = parts.as_path();
            let hit = match first {
                Some(".ssh" | ".aws" | ".gnupg") => true,
                Some(".docker") => rest.starts_with("config.json"),
                Some(".kube") => rest.starts_with("config"),
                Some(".config") => rest.starts_with("gh/hosts.yml"),
                _ => false,
            };
            if hit {
                return true;
            }
        }
        // fen's credential files, compared without building their paths.
        if let Some(f) = below(path, &self.config_dir).and_then(|r| r.strip_prefix("fen").ok()) {
            if f == Path::new("models.json") || f == Path::new("auth.json") {
                return true;
            }
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        secret_name(name)
    }
}

/// What follows `root` in `path` when `path` is `root` or below it (like
/// [`Path::strip_prefix`]). Paths are compared as bytes first (resolved and normalised paths
/// are written plainly); a path written otherwise (`a//b`, `a/./b`) is compared by components.
fn below<'a>(path: &'a Path, root: &Path) -> Option<&'a Path> {
    use std::os::unix::ffi::OsStrExt;
    let (p, mut r) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    while r.len() > 1 && r.ends_with(b"/") {
        r = &r[..r.len() - 1];
    }
    if let Some(rest) = p.strip_prefix(r) {
        match rest.iter().position(|&b| b != b'/') {
            _ if rest.is_empty() => return Some(Path::new("")),
            Some(start) if rest[0] == b'/' || r.ends_with(b"/") => {
                return Some(Path::new(std::ffi::OsStr::from_bytes(&rest[start..])))
            }
            None if rest[0] == b'/' => return Some(Path::new("")),
            _ => {}
        }
    }
    let mut parts = p.split(|&b| b == b'/');
    let plain = parts.next() == Some(b"".as_slice())
        && parts.all(|c| c != b"." && c != b"..")
        && memchr::memmem::find(p, b"//").is_none();
    if plain {
        return None;
    }
    path.strip_prefix(root).ok()
}

/// A file name that looks like it holds a secret.
pub fn secret_name(name: &str) -> bool {
    // Called for every word of every command: compared in place, without a lowercase copy.
    let b = name.as_bytes();
    let is = |w: &str| b.eq_ignore_ascii_case(w.as_bytes());
    let starts = |w: &str| b.len() >= w.len() && b[..w.len()].eq_ignore_ascii_case(w.as_bytes());
    if is(".env") || is(".netrc") || is("_netrc") || is(".pgpass") {
        return true;
    }
    if starts(".env.") {
        // Conventionally committed templates.
        let rest = &b[5..];
        return !["example", "sample", "template", "dist", "defaults"]
            .iter()
            .any(|t| rest.eq_ignore_ascii_case(t.as_bytes()));
    }
    if (b.len() >= 4 && b[b.len() - 4..].eq_ignore_ascii_case(b".pem"))
        || starts("id_rsa")
        || starts("id_ed25519")
        || starts("id_ecdsa")
        || starts("id_dsa")
    {
        return true;
    }
    // `token`, `secret`, `credential`, `private_key` as a word: `api_token.txt`,
    // `secrets.yaml`, `credentials.json`, but not `tokenizer.rs` or `secretary.md`.
    const KEYS: [&[u8]; 6] = [
        b"secret",
        b"token",
        b"credential",
        b"private_key",
        b"private-key",
        b"privatekey",
    ];
    for start in 0..b.len() {
        let first = b[start].to_ascii_lowercase();
        if !matches!(first, b's' | b't' | b'c' | b'p') {
            continue;
        }
        for key in KEYS {
            let end = start + key.len();
            if key[0] != first || end > b.len() || !b[start..end].eq_ignore_ascii_case(key) {
                continue;
            }
            let tail = &b[end..];
            let tail = match tail.first() {
                Some(b's' | b'S') => &tail[1..],
                _ => tail,
            };
            if tail.first().is_none_or(|c| !c.is_ascii_alphabetic()) {
                return true;
            }
        }
    }
    false
}

/// (protected, is the `.git` directory itself).
fn protected_git(path: &Path, contents: bool, is_dir: bool, exists: bool) -> (bool, bool) {
    // Most paths name no `.git` at all.
    if memchr::memmem::find(path.as_os_str().as_encoded_bytes(), b".git").is_none() {
        return (false, false);
    }
    let comps: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some(last_git) = comps.iter().rposition(|c| *c == ".git") else {
        return (false, false);
    };
    let rest = &comps[last_git + 1..];
    if rest.is_empty() {
        // `.git` itself: a pointer file (worktree, submodule) is protected; the directory is
        // protected when the operation reaches inside it.
        if contents || !exists || !is_dir {
            return (true, false);
        }
        return (false, true);
    }
    let hooks = rest.iter().any(|c| *c == "hooks");
    let config = rest
        .last()
        .is_some_and(|c| *c == "config" || *c == "config.worktree");
    let reaches = contents && (rest[0] == "modules" || rest[0] == "worktrees");
    (hooks || config || reaches, false)
}

fn is_stream(p: &Path) -> bool {
    let s = p.to_string_lossy();
    matches!(
        s.as_ref(),
        "/dev/null"
            | "/dev/zero"
            | "/dev/full"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/stdin"
            | "/dev/tty"
            | "/dev/random"
            | "/dev/urandom"
    ) || s.starts_with("/dev/fd/")
        || s.starts_with("/dev/pts/")
        || s.starts_with("/proc/self/fd/")
}

/// A block device by its name under `/dev` (whether or not it exists here).
fn is_block_device(p: &Path) -> bool {
    let Ok(rest) = p.strip_prefix("/dev") else {
        return false;
    };
    let s = rest.to_string_lossy();
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "sr", "disk/", "mapper/",
        "nbd", "zram", "root",
    ]
    .iter()
    .any(|p| s.starts_with(p))
}

/// `a/./b/../c` → `a/c` without touching the file system.
pub fn normalize_lexically(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

/// Resolves an absolute path like `realpath -m`: symlinks in the part that exists are
/// followed (at most 40), `..` applies to the resolved directory, the missing tail is joined
/// lexically.
pub fn resolve(p: &Path) -> PathBuf {
    ResolveCache::default()
        .resolve_in(PathBuf::from("/"), true, p)
        .0
}

use super::listing::{self, Seen};

/// A directory looked into during one decision. Past the first lookups its listing
/// answers the rest (a command naming a hundred words in the working directory costs one
/// listing, kept across decisions while the directory is unchanged, not a hundred lstats).
#[derive(Debug)]
enum DirState {
    LookedIn(u8),
    Listed(std::sync::Arc<listing::Listing>),
    Unlisted,
}

/// At which lookup in a directory its kept listing is looked for, and at which it is listed.
const KEPT_AT_LOOKUP: u8 = 3;
const LISTED_AT_LOOKUP: u8 = 8;

/// What one decision has seen of the file system: directories resolved, paths looked up,
/// classifications made. One decision sees one file system, so each is asked once.
#[derive(Debug, Default)]
pub struct ResolveCache {
    /// Directories resolved, keyed by their path as written.
    dirs: rustc_hash::FxHashMap<OsString, (PathBuf, bool)>,
    /// Classifications by path as written, without and with `contents`.
    infos: [rustc_hash::FxHashMap<OsString, PathInfo>; 2],
    /// Whether a path as written is a symbolic link.
    links: rustc_hash::FxHashMap<OsString, bool>,
    /// Resolved directories looked into, by path.
    looked_in: rustc_hash::FxHashMap<OsString, DirState>,
}

impl ResolveCache {
    /// Whether `p` is a symbolic link (asked of the file system once per decision).
    pub fn is_link(&mut self, p: &Path) -> bool {
        if let Some(hit) = self.links.get(p.as_os_str()) {
            return *hit;
        }
        let link = match (p.parent(), p.file_name(), is_plain_absolute(p)) {
            (Some(parent), Some(name), true) => {
                let (dir, exists) = self.dir(parent);
                exists && self.lstat(&dir, name) == Seen::Symlink
            }
            _ => lstat_path(p) == Seen::Symlink,
        };
        self.links.insert(p.as_os_str().to_owned(), link);
        link
    }

    /// Like [`resolve`], resolving the parent directory once per cache.
    pub fn resolve(&mut self, p: &Path) -> PathBuf {
        self.resolve_seen(p).0
    }

    /// [`ResolveCache::resolve`], with whether the result exists and what it is when the last
    /// lookup saw it (`None`: ask the file system).
    fn resolve_seen(&mut self, p: &Path) -> (PathBuf, Option<Seen>) {
        let (Some(parent), Some(name), true) = (p.parent(), p.file_name(), is_plain_absolute(p))
        else {
            let (path, _, seen) = self.resolve_in(PathBuf::from("/"), true, p);
            return (path, seen);
        };
        let (dir, exists) = self.dir(parent);
        let (path, _, seen) = self.resolve_in(dir, exists, Path::new(name));
        (path, seen)
    }

    /// A directory resolved through its own resolved parent: every prefix is looked up on
    /// disk once per cache, not once per path below it. `p` is absolute with no `.`/`..`.
    fn dir(&mut self, p: &Path) -> (PathBuf, bool) {
        if let Some(hit) = self.dirs.get(p.as_os_str()) {
            return hit.clone();
        }
        let (path, exists, _) = match (p.parent(), p.file_name()) {
            (Some(parent), Some(name)) => {
                let (pd, pe) = self.dir(parent);
                self.resolve_in(pd, pe, Path::new(name))
            }
            _ => self.resolve_in(PathBuf::from("/"), true, p),
        };
        self.dirs
            .insert(p.as_os_str().to_owned(), (path.clone(), exists));
        (path, exists)
    }

    /// lstat of `dir/name`, `dir` resolved (no symbolic link in it) and existing.
    fn lstat(&mut self, dir: &Path, name: &std::ffi::OsStr) -> Seen {
        let state = match self.looked_in.get_mut(dir.as_os_str()) {
            Some(s) => s,
            None => self
                .looked_in
                .entry(dir.as_os_str().to_owned())
                .or_insert(DirState::LookedIn(0)),
        };
        if let DirState::LookedIn(n) = state {
            *n = n.saturating_add(1);
            // A kept listing is checked once, at the third lookup (one stat); a directory is
            // listed afresh only for many lookups (a busy `/tmp` changes all the time).
            let listed = match *n {
                KEPT_AT_LOOKUP => listing::kept(dir),
                n if n >= LISTED_AT_LOOKUP => listing::current(dir),
                _ => None,
            };
            match listed {
                Some(l) => *state = DirState::Listed(l),
                None if *n >= LISTED_AT_LOOKUP => *state = DirState::Unlisted,
                None => return lstat_path(&dir.join(name)),
            }
        }
        match state {
            DirState::Listed(l) => l.get(name),
            _ => lstat_path(&dir.join(name)),
        }
    }

    /// Resolves `p` (relative components applied to `start`, an already resolved directory
    /// whose existence is `existing`); returns the path, whether all of it exists, and what
    /// is there when the walk ended on a name (`None` after `..`, `/` or too many links).
    fn resolve_in(
        &mut self,
        start: PathBuf,
        existing: bool,
        p: &Path,
    ) -> (PathBuf, bool, Option<Seen>) {
        enum C {
            Root,
            Up,
            Name(OsString),
        }
        fn push_all(q: &mut VecDeque<C>, p: &Path, front: bool) {
            let items: Vec<C> = p
                .components()
                .filter_map(|c| match c {
                    Component::RootDir => Some(C::Root),
                    Component::ParentDir => Some(C::Up),
                    Component::Normal(n) => Some(C::Name(n.to_os_string())),
                    _ => None,
                })
                .collect();
            if front {
                for c in items.into_iter().rev() {
                    q.push_front(c);
                }
            } else {
                q.extend(items);
            }
        }
        let mut q = VecDeque::new();
        push_all(&mut q, p, false);
        let mut cur = start;
        let mut existing = existing;
        let mut hops = 0;
        let mut last = None;
        while let Some(c) = q.pop_front() {
            last = None;
            match c {
                C::Root => cur = PathBuf::from("/"),
                C::Up => {
                    cur.pop();
                    // Back in a directory that exists (`mkdir -p missing/../link/x`): follow
                    // symlinks again from here.
                    if !existing {
                        existing = std::fs::symlink_metadata(&cur).is_ok();
                    }
                }
                C::Name(n) => {
                    if !existing {
                        last = Some(Seen::Missing);
                        cur.push(&n);
                        continue;
                    }
                    match self.lstat(&cur, &n) {
                        Seen::Symlink if hops < 40 => {
                            hops += 1;
                            match std::fs::read_link(cur.join(&n)) {
                                Ok(target) => {
                                    if target.is_absolute() {
                                        cur = PathBuf::from("/");
                                    }
                                    push_all(&mut q, &target, true);
                                }
                                Err(_) => cur.push(&n),
                            }
                        }
                        // Too many links: what it is, the caller asks.
                        Seen::Symlink => cur.push(&n),
                        Seen::Missing => {
                            existing = false;
                            last = Some(Seen::Missing);
                            cur.push(&n);
                        }
                        seen => {
                            last = Some(seen);
                            cur.push(&n);
                        }
                    }
                }
            }
        }
        (cur, existing, last)
    }
}

/// Absolute, with no `.` or `..` component.
fn is_plain_absolute(p: &Path) -> bool {
    p.is_absolute()
        && !p
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
}

fn lstat_path(p: &Path) -> Seen {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(p) {
        Ok(m) => Seen::of_mode(m.mode()),
        Err(_) => Seen::Missing,
    }
}

/// The nearest ancestor of `dir` (itself included) holding `.git`.
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return Some(d.to_path_buf());
        }
        cur = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_agrees_with_strip_prefix_however_the_path_is_written() {
        let roots = ["/", "/home/u", "/home/u/", "/dev"];
        let paths = [
            "/",
            "/home/u",
            "/home/u/",
            "/home/user",
            "/home/u/.ssh/id_rsa",
            "/home/u//.ssh",
            "/home/./u/.ssh",
            "/home/x/../u/.ssh",
            "/devices",
            "/dev/sda",
            "/dev",
            "relative/home/u",
        ];
        for r in roots {
            for p in paths {
                let (p, r) = (Path::new(p), Path::new(r));
                assert_eq!(below(p, r), p.strip_prefix(r).ok(), "{p:?} below {r:?}");
            }
        }
    }
}
