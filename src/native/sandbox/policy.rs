//! Sandbox policy: what a sandboxed shell command may write, whether it may reach the network,
//! and which secrets it must not see. Built from explicit inputs (workspace, HOME, TMPDIR,
//! settings); the builder reads no environment variables, only whether a few project files
//! exist in the workspace (to pick per-ecosystem cache roots) and whether the workspace is a
//! linked git worktree (to let its commits reach the shared repository).

use std::path::{Component, Path, PathBuf};

/// Why a writable root is in the policy; decides which roots are searched for repositories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// The workspace (fen's working directory).
    Workspace,
    /// `/tmp` or `$TMPDIR`.
    Temp,
    /// A package-manager cache picked from the project files (`~/.cargo/registry`, ...).
    Cache,
    /// `sandbox.writable_roots` from settings.
    Settings,
    /// What a commit in a linked worktree writes outside it: the common dir's `objects`,
    /// `refs` and `logs`, and the worktree's own gitdir (HEAD, index) — never the common
    /// dir's config or hooks.
    Git,
}

/// One directory the sandboxed command may write beneath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRoot {
    /// Absolute, lexically normalized path (may not exist; missing roots are skipped at launch).
    pub path: PathBuf,
    /// Where it came from.
    pub kind: RootKind,
}

impl WritableRoot {
    /// Whether the repositories under this root get their `.git` metadata re-bound read-only.
    /// Temp and cache roots are not searched: they are not the user's projects, and walking
    /// `~/.cargo/registry` on every command would cost more than the rest of the launch.
    pub fn protects_git(&self) -> bool {
        matches!(self.kind, RootKind::Workspace | RootKind::Settings)
    }
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Directories writable beneath; everything else is read-only.
    pub writable_roots: Vec<WritableRoot>,
    /// Whether TCP/UDP (any socket family but AF_UNIX) is allowed.
    pub network: bool,
    /// The user's home directory (unchanged `HOME` of the command).
    pub home: Option<PathBuf>,
    /// Secret directories and files made unreadable (empty tmpfs / `/dev/null` under bwrap;
    /// left out of the Landlock read rules).
    pub hidden: Vec<PathBuf>,
    /// Paths inside the writable roots kept read-only (bubblewrap only; Landlock cannot carve a
    /// read-only hole in a writable root).
    pub read_only: Vec<PathBuf>,
    /// Whether `.git/config`, `.git/hooks` and `.git` pointer files are kept read-only
    /// (bubblewrap only): of every repository under the workspace and settings roots, of the
    /// workspace's and the command's repository, and of their worktrees' common dirs.
    pub protect_git: bool,
}

/// Inputs of [`SandboxPolicy::build`]; the caller reads the environment and settings.
#[derive(Debug, Clone, Default)]
pub struct PolicyInputs {
    /// The workspace (fen's working directory); absolute.
    pub workspace: PathBuf,
    /// `$HOME`, if known.
    pub home: Option<PathBuf>,
    /// `$TMPDIR`, if set.
    pub tmpdir: Option<PathBuf>,
    /// fen's configuration directory (`$XDG_CONFIG_HOME/fen`); default `~/.config/fen`.
    pub config_dir: Option<PathBuf>,
    /// `sandbox.writable_roots` from settings: absolute, `~/`-relative or workspace-relative.
    pub writable_roots: Vec<String>,
    /// `sandbox.network`.
    pub network: bool,
    /// Extra secret paths to hide (same path forms as `writable_roots`).
    pub hidden: Vec<String>,
    /// Extra read-only carve-outs inside the roots (same path forms).
    pub read_only: Vec<String>,
}

/// Secret locations under HOME hidden by default.
pub const DEFAULT_HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/gh",
];

/// fen's credential files inside its configuration directory.
pub const FEN_CREDENTIAL_FILES: &[&str] = &["models.json", "auth.json"];

/// Project file → cache directories under HOME that its tool must be able to write.
pub const CACHE_PRESETS: &[(&str, &[&str])] = &[
    ("Cargo.toml", &[".cargo/registry", ".cargo/git"]),
    ("package.json", &[".npm", ".cache"]),
    ("pyproject.toml", &[".cache/pip"]),
    ("requirements.txt", &[".cache/pip"]),
];

impl SandboxPolicy {
    /// The policy for `inputs`: workspace, `/tmp`, `$TMPDIR`, caches of the ecosystems whose
    /// project files are in the workspace, settings roots; default secrets hidden; the
    /// workspace's `.fen` directory (project settings and extensions) read-only.
    pub fn build(inputs: &PolicyInputs) -> Self {
        let ws = normalize(&inputs.workspace);
        let home = inputs.home.as_deref().map(normalize);
        let mut roots: Vec<WritableRoot> = Vec::new();
        let mut add = |path: PathBuf, kind: RootKind| {
            if !roots.iter().any(|r| r.path == path) {
                roots.push(WritableRoot { path, kind });
            }
        };
        add(ws.clone(), RootKind::Workspace);
        add(PathBuf::from("/tmp"), RootKind::Temp);
        if let Some(t) = &inputs.tmpdir {
            if t.is_absolute() {
                add(normalize(t), RootKind::Temp);
            }
        }
        if let Some(h) = &home {
            for (file, dirs) in CACHE_PRESETS {
                if ws.join(file).exists() {
                    for d in *dirs {
                        add(h.join(d), RootKind::Cache);
                    }
                }
            }
        }
        for r in &inputs.writable_roots {
            if let Some(p) = resolve(r, &ws, home.as_deref()) {
                add(p, RootKind::Settings);
            }
        }
        // A worktree whose main repository lies outside the roots (`git worktree add
        // ../feature`): its commits write objects, refs and logs there.
        if let Some((gitdir, common)) = super::git::worktree_dirs(&ws) {
            let grants = ["objects", "refs", "logs"]
                .iter()
                .map(|d| common.join(d))
                .chain(std::iter::once(gitdir));
            for g in grants.collect::<Vec<_>>() {
                let covered = roots.iter().any(|r| {
                    g.starts_with(&r.path)
                        || std::fs::canonicalize(&r.path).is_ok_and(|c| g.starts_with(c))
                });
                if !covered && g.is_dir() {
                    roots.push(WritableRoot {
                        path: g,
                        kind: RootKind::Git,
                    });
                }
            }
        }

        let mut hidden = Vec::new();
        if let Some(h) = &home {
            hidden.extend(DEFAULT_HIDDEN_IN_HOME.iter().map(|d| h.join(d)));
        }
        let config = inputs
            .config_dir
            .as_deref()
            .map(normalize)
            .or_else(|| home.as_ref().map(|h| h.join(".config/fen")));
        if let Some(c) = config {
            hidden.extend(FEN_CREDENTIAL_FILES.iter().map(|f| c.join(f)));
        }
        hidden.extend(
            inputs
                .hidden
                .iter()
                .filter_map(|h| resolve(h, &ws, home.as_deref())),
        );

        let mut read_only = vec![ws.join(".fen")];
        read_only.extend(
            inputs
                .read_only
                .iter()
                .filter_map(|p| resolve(p, &ws, home.as_deref())),
        );

        Self {
            writable_roots: roots,
            network: inputs.network,
            home,
            hidden,
            read_only,
            protect_git: true,
        }
    }

    /// Whether `path` (absolute) lies beneath one of the writable roots (lexically).
    pub fn is_writable(&self, path: &Path) -> bool {
        let p = normalize(path);
        self.writable_roots.iter().any(|r| p.starts_with(&r.path))
    }
}

/// Resolves a settings path: `~` / `~/x` against HOME, relative against the workspace.
/// `None` when it needs a HOME that is unknown or is empty.
pub fn resolve(raw: &str, workspace: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    let p = if raw == "~" {
        home?.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home?.join(rest)
    } else if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        workspace.join(raw)
    };
    Some(normalize(&p))
}

/// Lexical normalization: drops `.`, folds `..` (never above `/`); no file system access.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(ws: &Path) -> PolicyInputs {
        PolicyInputs {
            workspace: ws.to_path_buf(),
            home: Some(PathBuf::from("/home/u")),
            tmpdir: Some(PathBuf::from("/var/tmp/x/")),
            ..Default::default()
        }
    }

    #[test]
    fn base_roots_and_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let p = SandboxPolicy::build(&inputs(dir.path()));
        let roots: Vec<_> = p.writable_roots.iter().map(|r| r.path.clone()).collect();
        assert_eq!(
            roots,
            vec![
                dir.path().to_path_buf(),
                PathBuf::from("/tmp"),
                PathBuf::from("/var/tmp/x")
            ]
        );
        assert!(p.hidden.contains(&PathBuf::from("/home/u/.ssh")));
        assert!(p
            .hidden
            .contains(&PathBuf::from("/home/u/.config/fen/auth.json")));
        assert!(!p.network);
        assert!(p.read_only.contains(&dir.path().join(".fen")));
    }

    #[test]
    fn presets_follow_project_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join("requirements.txt"), "").unwrap();
        let p = SandboxPolicy::build(&inputs(dir.path()));
        let caches: Vec<_> = p
            .writable_roots
            .iter()
            .filter(|r| r.kind == RootKind::Cache)
            .map(|r| r.path.clone())
            .collect();
        assert_eq!(
            caches,
            vec![
                PathBuf::from("/home/u/.cargo/registry"),
                PathBuf::from("/home/u/.cargo/git"),
                PathBuf::from("/home/u/.cache/pip"),
            ]
        );
        assert!(!p.writable_roots.iter().any(|r| r.path.ends_with(".npm")));
    }

    #[test]
    fn settings_paths_resolve() {
        let ws = Path::new("/w/p");
        let h = Some(Path::new("/home/u"));
        assert_eq!(resolve("~/x", ws, h), Some(PathBuf::from("/home/u/x")));
        assert_eq!(resolve("../o", ws, h), Some(PathBuf::from("/w/o")));
        assert_eq!(resolve("/abs/./y", ws, h), Some(PathBuf::from("/abs/y")));
        assert_eq!(resolve("~/x", ws, None), None);
        assert_eq!(resolve("  ", ws, h), None);
        let mut i = inputs(Path::new("/w/p"));
        i.writable_roots = vec!["~/.local/share/x".into(), "/tmp".into()];
        i.config_dir = Some(PathBuf::from("/etc/fenconf"));
        let p = SandboxPolicy::build(&i);
        assert!(p.is_writable(Path::new("/home/u/.local/share/x/y")));
        assert!(!p.is_writable(Path::new("/home/u/.local/share/xy")));
        assert!(p.is_writable(Path::new("/w/p/../p/src")));
        assert!(!p.is_writable(Path::new("/w/p/../o")));
        assert_eq!(p.writable_roots.len(), 4, "/tmp is not added twice");
        assert!(p
            .hidden
            .contains(&PathBuf::from("/etc/fenconf/models.json")));
    }
}
