//! The `git` children of the shadow repository: a scrubbed environment, its own identity,
//! stdin fed from a thread (so large input and output never deadlock).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{io_err, CheckpointError, Options, Result};

/// Environment variables kept from the user's environment (everything else, `GIT_*`
/// included, is dropped).
const KEEP_ENV: &[&str] = &["PATH", "HOME", "TMPDIR"];

/// One shadow repository: its git dir, the work tree and the index in use.
#[derive(Debug, Clone)]
pub struct Git {
    pub dir: PathBuf,
    pub worktree: PathBuf,
    pub index: PathBuf,
}

/// One line of `git diff-tree --raw`: a path whose mode or content differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub old_mode: String,
    pub new_mode: String,
    pub old_sha: String,
    pub new_sha: String,
}

const ZERO_MODE: &str = "000000";

impl Change {
    pub fn in_old(&self) -> bool {
        self.old_mode != ZERO_MODE
    }
    pub fn in_new(&self) -> bool {
        self.new_mode != ZERO_MODE
    }
}

/// A git config value, quoted (backslash and double quote escaped).
fn quote(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Git {
    pub fn new(dir: &Path, worktree: &Path, index: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            worktree: worktree.to_path_buf(),
            index: index.to_path_buf(),
        }
    }

    /// A handle for repository-wide work (refs, prune) with no work tree of interest.
    pub fn at(dir: &Path) -> Git {
        Git::new(dir, dir, &dir.join("index").join("_"))
    }

    fn command(&self) -> Command {
        let mut c = Command::new("git");
        c.env_clear();
        for k in KEEP_ENV {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
        c.env("LC_ALL", "C")
            .env("GIT_DIR", &self.dir)
            .env("GIT_WORK_TREE", &self.worktree)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "fen")
            .env("GIT_AUTHOR_EMAIL", "fen@localhost")
            .env("GIT_COMMITTER_NAME", "fen")
            .env("GIT_COMMITTER_EMAIL", "fen@localhost")
            .current_dir(if self.worktree.is_dir() {
                &self.worktree
            } else {
                &self.dir
            })
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs `git args` (with `input` on stdin) and returns its stdout; a non-zero exit is an
    /// error carrying stderr.
    pub fn run(&self, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>> {
        self.run_in(self.command(), args, input)
    }

    fn run_in(&self, mut c: Command, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>> {
        c.args(args);
        if input.is_some() {
            c.stdin(Stdio::piped());
        }
        let mut child = c
            .spawn()
            .map_err(|e| CheckpointError::NoGit(e.to_string()))?;
        let feeder = match (input, child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => Some(std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            })),
            _ => None,
        };
        let mut stderr = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(e) = stderr.as_mut() {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let mut out = Vec::new();
        if let Some(mut o) = child.stdout.take() {
            o.read_to_end(&mut out)
                .map_err(|e| io_err("cannot read git output in", &self.dir, e))?;
        }
        let status = child
            .wait()
            .map_err(|e| CheckpointError::NoGit(e.to_string()))?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        let stderr = err_reader.join().unwrap_or_default();
        if !status.success() {
            return Err(CheckpointError::Git {
                args: args.join(" "),
                stderr: stderr.trim().to_string(),
            });
        }
        Ok(out)
    }

    fn run_text(&self, args: &[&str]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.run(args, None)?)
            .trim()
            .to_string())
    }

    /// Creates the repository on first use: bare git dir, then a config of its own (the work
    /// tree, an identity, no autocrlf, no automatic gc, the untracked cache on).
    pub fn init(&self) -> Result<()> {
        if self.dir.join("HEAD").exists() && self.dir.join("config").exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err("cannot create", &self.dir, e))?;
        let dir = self.dir.to_string_lossy().into_owned();
        let mut c = self.command();
        c.env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
        self.run_in(c, &["init", "--bare", "-q", &dir], None)?;
        let config = format!(
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tworktree = {}\n\tautocrlf = false\n\tsafecrlf = false\n\tsymlinks = true\n\tuntrackedCache = true\n\tfsmonitor = false\n\tquotePath = false\n\tlogAllRefUpdates = false\n[index]\n\tskipHash = true\n[user]\n\tname = fen\n\temail = fen@localhost\n[gc]\n\tauto = 0\n[commit]\n\tgpgsign = false\n",
            quote(&self.worktree.to_string_lossy())
        );
        let path = self.dir.join("config");
        std::fs::write(&path, config).map_err(|e| io_err("cannot write", &path, e))?;
        let info = self.dir.join("info");
        let _ = std::fs::create_dir_all(&info);
        let exclude = info.join("exclude");
        std::fs::write(
            &exclude,
            "# fen's own worktrees are not part of a checkpoint\n/.fen/worktrees/\n",
        )
        .map_err(|e| io_err("cannot write", &exclude, e))?;
        // Bytes in, the same bytes out: no end-of-line conversion, filter or encoding that a
        // workspace's .gitattributes asks for (info/attributes takes precedence over them).
        let attributes = info.join("attributes");
        std::fs::write(
            &attributes,
            "* -text -filter -ident -working-tree-encoding\n",
        )
        .map_err(|e| io_err("cannot write", &attributes, e))?;
        let _ = std::fs::create_dir_all(self.dir.join("index"));
        let _ = std::fs::create_dir_all(self.dir.join("sessions"));
        Ok(())
    }

    /// A session's first index starts as a copy of the newest index of another session, so
    /// its first snapshot is incremental too.
    fn seed_index(&self) {
        if self.index.exists() {
            return;
        }
        let Some(parent) = self.index.parent() else {
            return;
        };
        let _ = std::fs::create_dir_all(parent);
        let newest = std::fs::read_dir(parent).ok().and_then(|it| {
            it.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    !n.ends_with(".lock") && !n.starts_with('.')
                })
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .max()
        });
        if let Some((_, src)) = newest {
            let tmp = self.index.with_extension("seed");
            if std::fs::copy(&src, &tmp).is_ok() {
                let _ = std::fs::rename(&tmp, &self.index);
            }
        }
    }

    /// Brings the index up to the working tree: changed and new files are added, deleted ones
    /// removed, files over the cap left out (and removed from the index when they were in
    /// it). Returns the skipped paths.
    pub fn stage(&self, opts: &Options) -> Result<Vec<String>> {
        self.seed_index();
        // The untracked cache only serves `--untracked-files=all` when the config says `all`
        // too (git >= 2.39; older ones ignore it): then unchanged directories are not read.
        let out = self.run(
            &[
                "-c",
                "status.showUntrackedFiles=all",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ],
            None,
        )?;
        let mut update: Vec<u8> = Vec::new();
        let mut remove: Vec<u8> = Vec::new();
        let mut skipped = Vec::new();
        let mut consider = |path: &str, tracked: bool, deleted: bool| {
            if path.ends_with('/') {
                // A nested repository: not captured.
                return;
            }
            if !deleted {
                let full = self.worktree.join(path);
                if let Ok(m) = std::fs::symlink_metadata(&full) {
                    if m.is_file() && m.len() > opts.max_file_bytes {
                        skipped.push(path.to_string());
                        if tracked {
                            remove.extend_from_slice(path.as_bytes());
                            remove.push(0);
                        }
                        return;
                    }
                }
            }
            update.extend_from_slice(path.as_bytes());
            update.push(0);
        };
        for entry in out.split(|&b| b == 0) {
            if entry.len() < 4 {
                continue;
            }
            let (x, y) = (entry[0], entry[1]);
            if y == b' ' {
                continue;
            }
            let path = String::from_utf8_lossy(&entry[3..]);
            consider(&path, x != b'?', y == b'D');
        }
        if !opts.include.is_empty() {
            let mut args = vec![
                "ls-files".to_string(),
                "-z".into(),
                "--others".into(),
                "--ignored".into(),
                "--exclude-standard".into(),
                "--".into(),
            ];
            args.extend(opts.include.iter().map(|p| format!(":(glob){p}")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = self.run(&args, None)?;
            for p in out.split(|&b| b == 0).filter(|p| !p.is_empty()) {
                consider(&String::from_utf8_lossy(p), false, false);
            }
        }
        if !remove.is_empty() {
            self.run(
                &["update-index", "-z", "--force-remove", "--stdin"],
                Some(remove),
            )?;
        }
        if !update.is_empty() {
            self.run(
                &["update-index", "-z", "--add", "--remove", "--stdin"],
                Some(update),
            )?;
        }
        Ok(skipped)
    }

    /// The index as a tree. `--missing-ok`: the blobs were just written by [`Git::stage`], so
    /// git need not stat one loose object per entry of every changed directory.
    pub fn write_tree(&self) -> Result<String> {
        self.run_text(&["write-tree", "--missing-ok"])
    }

    pub fn commit_tree(&self, tree: &str, message: &str) -> Result<String> {
        self.run_text(&["commit-tree", tree, "-m", message])
    }

    pub fn update_ref(&self, name: &str, commit: &str) -> Result<()> {
        self.run(&["update-ref", name, commit], None).map(|_| ())
    }

    /// Keeps `name` at `commit` and points the shadow's detached HEAD there too. HEAD matters
    /// for speed only: `git status` compares HEAD with the index, and with no HEAD every entry
    /// shows as added (20,000 lines for a 20,000-file tree, every time).
    ///
    /// Both are loose refs of git's files backend, a file holding the id, which this
    /// repository (created by fen, `logAllRefUpdates` off) always uses: written whole and
    /// renamed into place, they need no git child (one fewer per snapshot).
    pub fn update_ref_and_head(&self, name: &str, commit: &str) -> Result<()> {
        if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Invalid(format!(
                "not a commit id: {commit}"
            )));
        }
        self.write_loose_ref(name, commit)?;
        self.write_loose_ref("HEAD", commit)
    }

    fn write_loose_ref(&self, name: &str, commit: &str) -> Result<()> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("cannot create", parent, e))?;
        }
        // The temporary file sits in the git dir itself (never among the refs, where git
        // would take it for a broken ref if fen died before the rename).
        let tmp = self.dir.join(format!(
            "fen-ref-{}-{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, format!("{commit}\n")).map_err(|e| io_err("cannot write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err("cannot write", &path, e)
        })
    }

    /// Whether `rev` names a commit in this repository.
    pub fn has_commit(&self, rev: &str) -> bool {
        self.run(&["cat-file", "-e", &format!("{rev}^{{commit}}")], None)
            .is_ok()
    }

    /// What differs between two commits (`--raw`, no rename detection).
    pub fn diff_tree(&self, from: &str, to: &str) -> Result<Vec<Change>> {
        let out = self.run(&["diff-tree", "-r", "-z", "--no-renames", from, to], None)?;
        let mut changes = Vec::new();
        let mut parts = out.split(|&b| b == 0);
        while let Some(meta) = parts.next() {
            if meta.is_empty() {
                continue;
            }
            let Some(path) = parts.next() else { break };
            let meta = String::from_utf8_lossy(meta);
            let f: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            if f.len() < 4 {
                continue;
            }
            changes.push(Change {
                path: String::from_utf8_lossy(path).into_owned(),
                old_mode: f[0].to_string(),
                new_mode: f[1].to_string(),
                old_sha: f[2].to_string(),
                new_sha: f[3].to_string(),
            });
        }
        Ok(changes)
    }

    /// The contents of blobs, in order (`git cat-file --batch`).
    pub fn blobs(&self, shas: &[&str]) -> Result<Vec<Vec<u8>>> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Vec::new();
        for s in shas {
            input.extend_from_slice(s.as_bytes());
            input.push(b'\n');
        }
        let out = self.run(&["cat-file", "--batch"], Some(input))?;
        let mut blobs = Vec::with_capacity(shas.len());
        let mut pos = 0;
        for sha in shas {
            let nl = out[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .ok_or_else(|| CheckpointError::Invalid(format!("blob {sha}: short output")))?;
            let header = String::from_utf8_lossy(&out[pos..pos + nl]).into_owned();
            pos += nl + 1;
            let size: usize = header
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| CheckpointError::Invalid(format!("blob {sha}: {header}")))?;
            if pos + size > out.len() {
                return Err(CheckpointError::Invalid(format!("blob {sha}: truncated")));
            }
            blobs.push(out[pos..pos + size].to_vec());
            pos += size + 1;
        }
        Ok(blobs)
    }

    /// Deletes every ref under `prefix`.
    pub fn delete_refs(&self, prefix: &str) -> Result<()> {
        let refs = self.run_text(&["for-each-ref", "--format=%(refname)", prefix])?;
        let mut input = String::new();
        for r in refs.lines().filter(|l| !l.is_empty()) {
            input.push_str(&format!("delete {r}\n"));
        }
        if !input.is_empty() {
            self.run(&["update-ref", "--stdin"], Some(input.into_bytes()))?;
        }
        Ok(())
    }

    /// Drops unreachable objects older than ten minutes (younger ones may belong to a
    /// snapshot another fen is taking right now).
    pub fn prune(&self) -> Result<()> {
        self.run(&["prune", "--expire=10.minutes.ago"], None)
            .map(|_| ())
    }
}
