//! The jail the oracle runs allowed commands in, and the reading of what they did.
//!
//! Each command runs in its own bubblewrap jail (`--ro-bind / /`, a private `/tmp`, no network,
//! its own pid namespace) where only the scratch root is writable; inside, a fresh copy of the
//! template home (a git repository with commits, a modified file, fake secrets, fen's settings)
//! is made, then `strace -f` starts `bash -c CMD` the way fen's bash tool does (stdin from
//! /dev/null, fen's non-interactive environment). The trace is then judged: a write, a program
//! the analyser did not name, a network socket or a read of a fake secret is a violation.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Syscalls traced: program starts, opens, everything that changes the file tree, sockets.
const TRACE: &str = "trace=execve,execveat,openat,open,creat,unlink,unlinkat,rename,renameat,\
renameat2,mkdir,mkdirat,mknod,mknodat,rmdir,truncate,ftruncate,chmod,fchmod,fchmodat,chown,fchown,\
lchown,fchownat,utime,utimes,utimensat,futimesat,setxattr,lsetxattr,fsetxattr,removexattr,\
lremovexattr,fremovexattr,symlink,symlinkat,link,linkat,socket,connect";

/// Files in the template home that stand for secrets (relative to the home).
pub const SECRETS: &[&str] = &[
    ".ssh/id_rsa",
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/fen/auth.json",
    "proj/.env",
    "proj/certs/server.pem",
];

/// Why bubblewrap or strace cannot be used here, if so.
pub fn unavailable() -> Option<String> {
    for (prog, arg) in [("bwrap", "--version"), ("strace", "-V")] {
        match Command::new(prog)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        {
            Ok(s) if s.success() => {}
            _ => return Some(format!("`{prog}` is not installed or does not run")),
        }
    }
    // A jail must start here (user namespaces may be off).
    let ok = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(["--unshare-all", "--die-with-parent", "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Some("bubblewrap cannot create a jail on this machine".into());
    }
    None
}

/// A scratch root: `tpl/` (the template, read-only in the jail), `home/` (the working copy,
/// recreated per command), `out/` (traces).
pub struct Jail {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    /// The home commands see (a fresh copy of the template's each time).
    pub home: PathBuf,
    /// The workspace: the command's cwd.
    pub proj: PathBuf,
    tpl: PathBuf,
    out: PathBuf,
    env: Vec<(String, String)>,
    /// The working copy may differ from the template (the last command wrote, or was killed).
    dirty: std::cell::Cell<bool>,
}

/// What one command did.
#[derive(Debug, Default)]
pub struct Run {
    pub events: Vec<Event>,
    pub timed_out: bool,
    /// The jail or the preparation failed (the trace is then empty).
    pub setup_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A successful execve/execveat; `detail` is the path.
    Exec,
    /// An open for writing, a create, delete, rename, mkdir, chmod, truncate or link that
    /// succeeded or was stopped only by the jail (EROFS, EACCES, EPERM).
    Write,
    /// An AF_INET/AF_INET6 socket or a connect to anything but a local (unix) socket.
    Net,
    /// An open of one of the fake secrets.
    SecretRead,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventKind,
    /// The path (exec, write, secret) or socket family.
    pub detail: String,
    /// The strace line.
    pub line: String,
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn run_ok(dir: &Path, prog: &str, args: &[&str], env: &[(&str, &str)]) {
    let st = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{prog}: {e}"));
    assert!(st.success(), "{prog} {args:?} failed");
}

fn set_old_mtimes(dir: &Path) {
    // Files older than the index the refresh writes: git never sees them as racily clean, so a
    // read-only git command has no reason to rewrite the index.
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let entry = entry.expect("entry");
        let ft = entry.file_type().expect("file type");
        if ft.is_dir() {
            set_old_mtimes(&entry.path());
        } else if ft.is_file() {
            let f = std::fs::File::open(entry.path()).expect("open");
            f.set_modified(old).expect("set mtime");
        }
    }
}

impl Jail {
    /// Builds the template: a home with fake secrets and fen settings, and a workspace that is
    /// a git repository with three commits, a tag, a branch, a modified tracked file, a tar
    /// archive, an executable payload script and an "evil" git directory.
    pub fn new() -> Jail {
        let dir = tempfile::Builder::new()
            .prefix("fen-oracle")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical root");
        let tpl = root.join("tpl");
        let thome = tpl.join("home/u");
        let tproj = thome.join("proj");
        for s in SECRETS {
            write(&thome.join(s), "FAKE-SECRET-do-not-read\n");
        }
        write(&thome.join(".bashrc"), "# rc\n");
        write(
            &thome.join(".gitconfig"),
            "[user]\n\tname = O\n\temail = o@example.invalid\n",
        );
        write(&thome.join(".config/fen/settings.json"), "{}\n");
        write(&thome.join(".config/fen/trusted.json"), "{}\n");
        write(&tproj.join(".fen/settings.json"), "{\"permissions\":{}}\n");
        write(&tproj.join("README.md"), "# proj\nhello world\nfn main\n");
        write(
            &tproj.join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        );
        write(&tproj.join("src/lib.rs"), "pub fn x() -> u8 { 1 }\n");
        write(&tproj.join("docs/notes.txt"), "notes\nmore notes\n");
        write(
            &tproj.join("data.json"),
            "{\"name\": \"proj\", \"n\": [1, 2]}\n",
        );
        write(&tproj.join(".env.example"), "KEY=\n");
        write(&tproj.join(".gitattributes"), "*.txt diff=conv\n");
        write(&tproj.join(".gitignore"), ".env\ncerts/\n");
        // What "an unnamed program" does when it runs: leaves a mark.
        write(&tproj.join("payload.sh"), "#!/bin/sh\n: > payload_ran\n");
        write(&tproj.join("bin/ls"), "#!/bin/sh\n: > fake_ls_ran\n");
        write(&tproj.join("bin/git"), "#!/bin/sh\n: > fake_git_ran\n");
        for p in ["payload.sh", "bin/ls", "bin/git"] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tproj.join(p), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let genv: &[(&str, &str)] = &[
            ("HOME", thome.to_str().expect("utf-8 path")),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_DATE", "2020-01-01T00:00:00Z"),
            ("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z"),
        ];
        let git = |args: &[&str]| run_ok(&tproj, "git", args, genv);
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "README.md", "src", ".gitattributes", ".gitignore"]);
        git(&["commit", "-qm", "first"]);
        git(&["add", "docs", "data.json", "payload.sh", ".env.example"]);
        git(&["commit", "-qm", "second"]);
        git(&["tag", "v1"]);
        git(&["branch", "feature"]);
        write(&tproj.join("src/lib.rs"), "pub fn x() -> u8 { 2 }\n");
        git(&["commit", "-qam", "third"]);
        run_ok(&tproj, "tar", &["-cf", "archive.tar", "docs"], &[]);
        // Uncommitted changes, so `git diff` has something to show (external diff, textconv).
        write(
            &tproj.join("README.md"),
            "# proj\nhello world\nfn main\nchanged\n",
        );
        write(&tproj.join("docs/notes.txt"), "notes\nchanged notes\n");
        // Configuration elsewhere that names a program: an XDG config dir and a home.
        let evil_cfg = "[diff]\n\texternal = ./payload.sh\n[core]\n\tpager = ./payload.sh\n";
        write(&tproj.join(".evil-xdg/git/config"), evil_cfg);
        write(&tproj.join(".evil-home/.gitconfig"), evil_cfg);
        write(&tproj.join("script.sed"), "1e ./payload.sh\n");
        build_preload_lib(&tproj);
        // A git directory whose config names programs (`git --git-dir .evil-git diff`); the
        // repository packed first, so a reset copies few files. on a reset.
        run_ok(&tproj, "git", &["gc", "-q"], genv);
        run_ok(&tproj, "cp", &["-a", ".git", ".evil-git"], &[]);
        write(
            &tproj.join(".evil-git/config"),
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tpager = ./payload.sh\n\
             \tfsmonitor = ./payload.sh\n[diff]\n\texternal = ./payload.sh\n",
        );
        set_old_mtimes(&tpl);

        let out = root.join("out");
        std::fs::create_dir_all(&out).expect("mkdir out");
        let home = root.join("home/u");
        let proj = home.join("proj");
        // What fen's bash tool gives a command: its non-interactive variables over a plain
        // environment.
        // Version-manager shims (pyenv, rbenv, asdf) are scripts that start a dozen helpers
        // before the program the analyser named: the PATH skips them. The toolchain homes stay
        // the real (read-only) ones, or rustup would set itself up in the scratch home.
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let path = path
            .split(':')
            .filter(|d| !d.contains("/shims") && !d.contains("/.pyenv/"))
            .collect::<Vec<_>>()
            .join(":");
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), home.to_string_lossy().into_owned()),
            ("USER".into(), "u".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        if let Some(real) = std::env::var_os("HOME").map(PathBuf::from) {
            for (var, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
                let d = std::env::var_os(var).map_or_else(|| real.join(dir), PathBuf::from);
                if d.is_dir() {
                    env.push((var.into(), d.to_string_lossy().into_owned()));
                }
            }
        }
        for (k, v) in fen::native::process::NON_INTERACTIVE_ENV {
            env.push(((*k).into(), (*v).into()));
        }
        // `git status` otherwise takes `.git/index.lock` and may rewrite the index on every
        // run (a cache refresh, not a change): fen does not set this yet (reported), so the
        // oracle does, to keep that one benign write from hiding the rest.
        if !env.iter().any(|(k, _)| k == "GIT_OPTIONAL_LOCKS") {
            env.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
        }
        Jail {
            _dir: dir,
            root,
            home,
            proj,
            tpl,
            out,
            env,
            dirty: std::cell::Cell::new(true),
        }
    }

    /// Makes the working copy equal to the template again (on the host: it is our own scratch
    /// tree), with the index refreshed as a user's would be.
    fn reset(&self) -> Result<(), String> {
        let home = self.root.join("home");
        if home.exists() {
            make_removable(&home);
            std::fs::remove_dir_all(&home).map_err(|e| format!("reset: {e}"))?;
        }
        copy_tree(&self.tpl.join("home"), &home).map_err(|e| format!("copy: {e}"))?;
        let _ = Command::new("git")
            .args(["update-index", "-q", "--refresh"])
            .current_dir(&self.proj)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        self.dirty.set(false);
        Ok(())
    }

    /// Runs `cmd` with `bash -c` under strace in the jail, in the working copy (reset to the
    /// template first when the last command may have changed it). `n` names the trace file.
    /// Killed (the whole jail) after `timeout`.
    pub fn run(&self, n: usize, cmd: &str, timeout: Duration) -> Run {
        if self.dirty.get() {
            if let Err(e) = self.reset() {
                return Run {
                    setup_error: Some(e),
                    ..Run::default()
                };
            }
        }
        // Until the trace shows otherwise.
        self.dirty.set(true);
        let log = self.out.join(format!("trace.{n}"));
        // The trace reaches strace as fd 3: its file is outside everything the jail shows, so
        // the command cannot touch it.
        let trace = match std::fs::File::create(&log) {
            Ok(f) => f,
            Err(e) => {
                return Run {
                    setup_error: Some(format!("trace file: {e}")),
                    ..Run::default()
                }
            }
        };
        let home = self.root.join("home");
        let home = home.to_str().expect("utf-8 home");
        let tpl = self.tpl.to_str().expect("utf-8 tpl");
        let mut command = Command::new("bwrap");
        command
            .args(["--ro-bind", "/", "/", "--tmpfs", "/tmp"])
            .args(["--bind", home, home, "--ro-bind", tpl, tpl])
            .args(["--dev", "/dev", "--proc", "/proc", "--unshare-all"])
            .arg("--die-with-parent")
            .arg("--chdir")
            .arg(&self.proj)
            .args(["--", "strace", "-f", "-qq", "-s", "4096", "-e", TRACE])
            .args(["-o", "/proc/self/fd/3", "bash", "-c", cmd])
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let fd = std::os::fd::AsRawFd::as_raw_fd(&trace);
        // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                if fd == 3 {
                    if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = command.spawn();
        drop(trace);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                return Run {
                    setup_error: Some(format!("bwrap: {e}")),
                    ..Run::default()
                }
            }
        };
        let start = Instant::now();
        let mut timed_out = false;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() > timeout => {
                    // Killing bwrap ends its pid namespace, so everything the command started.
                    let _ = child.kill();
                    let _ = child.wait();
                    timed_out = true;
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    return Run {
                        setup_error: Some(format!("wait: {e}")),
                        ..Run::default()
                    }
                }
            }
        }
        let text = match std::fs::read_to_string(&log) {
            Ok(t) => t,
            Err(e) => {
                return Run {
                    setup_error: Some(format!("no trace ({e})")),
                    timed_out,
                    ..Run::default()
                }
            }
        };
        let _ = std::fs::remove_file(&log);
        let secrets: Vec<PathBuf> = SECRETS.iter().map(|s| self.home.join(s)).collect();
        let events = events(&text, &secrets);
        let wrote = events.iter().any(|e| e.kind == EventKind::Write);
        self.dirty.set(wrote || timed_out);
        Run {
            events,
            timed_out,
            setup_error: None,
        }
    }
}

/// Gives the owner full access to everything under `dir` (a command may have run `chmod 000`).
fn make_removable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                make_removable(&e.path());
            }
        }
    }
}

/// `cp -a` for the template: files (with mode and mtime), directories and symlinks.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
            let mtime = std::fs::metadata(&src)?.modified()?;
            std::fs::File::open(&dst)?.set_modified(mtime)?;
        }
    }
    Ok(())
}

/// Compiles `evil.so` (a constructor that leaves a mark) for LD_PRELOAD probes, when `cc` is
/// there (without it those probes load nothing and show nothing).
fn build_preload_lib(proj: &Path) {
    let src = proj.join("evil.c");
    write(
        &src,
        "#include <fcntl.h>\n#include <unistd.h>\n\
         __attribute__((constructor)) static void mark(void) {\n\
         int fd = open(\"preload_ran\", O_WRONLY | O_CREAT, 0644);\n\
         if (fd >= 0) close(fd);\n}\n",
    );
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-o", "evil.so", "evil.c"])
        .current_dir(proj)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let _ = std::fs::remove_file(&src);
    if !ok {
        eprintln!("notice: no C compiler; the LD_PRELOAD probes load nothing");
    }
}

/// Undoes strace's C-style string escapes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' if i + 2 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("3f");
                    out.push(u8::from_str_radix(h, 16).unwrap_or(b'?'));
                    i += 2;
                }
                c @ b'0'..=b'7' => {
                    let mut v = u32::from(c - b'0');
                    let mut k = 0;
                    while k < 2 && i + 1 < b.len() && (b'0'..=b'7').contains(&b[i + 1]) {
                        i += 1;
                        k += 1;
                        v = v * 8 + u32::from(b[i] - b'0');
                    }
                    out.push(v as u8);
                }
                c => out.push(c),
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The quoted strings among a call's arguments, in order.
fn strings(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = args.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            out.push(unescape(&args[start..j.min(b.len())]));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// One finished call: name, argument text, return text (`0`, `3`, `-1 ENOENT (...)`).
struct Call {
    name: String,
    args: String,
    ret: String,
}

/// Joins `<unfinished ...>` / `<... resumed>` pairs and splits each line into calls.
fn calls(text: &str) -> Vec<(Call, String)> {
    let mut pending: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for raw in text.lines() {
        let Some((pid, rest)) = raw.split_once(char::is_whitespace) else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("---") || rest.starts_with("+++") {
            continue;
        }
        let full = if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let tail = tail.split_once("resumed>").map_or("", |x| x.1);
            format!("{}{}", pending.remove(pid).unwrap_or_default(), tail)
        } else {
            rest.to_string()
        };
        let Some(open) = full.find('(') else { continue };
        // strace pads short calls: `mkdir("d", 0777)        = 0`.
        let Some(eq) = full.rfind(" = ") else {
            continue;
        };
        let Some(args) = full[..eq].trim_end().strip_suffix(')') else {
            continue;
        };
        if args.len() <= open {
            continue;
        }
        out.push((
            Call {
                name: full[..open].to_string(),
                args: args[open + 1..].to_string(),
                ret: full[eq + 3..].trim().to_string(),
            },
            format!("{pid} {full}"),
        ));
    }
    out
}

/// The paths a write check ignores: terminals, the null device, fd aliases.
fn harmless_write(path: &str) -> bool {
    path == "/dev/null"
        || path == "/dev/tty"
        || path == "/dev/zero"
        || path == "/dev/full"
        || path.starts_with("/dev/pts/")
        || path.starts_with("/dev/std")
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/")
        || path.starts_with("/proc/thread-self/fd/")
}

/// Caches a named program keeps outside the workspace (as root, man-db writes formatted pages
/// to its system cache): not a write the command asked for.
fn program_cache(path: &str) -> bool {
    path.starts_with("/var/cache/man/")
}

/// Did the call take effect, or was it stopped only by the jail?
fn effective(ret: &str) -> bool {
    !ret.starts_with('-')
        || ret.contains("EROFS")
        || ret.contains("EACCES")
        || ret.contains("EPERM")
}

fn events(text: &str, secrets: &[PathBuf]) -> Vec<Event> {
    let mut out = Vec::new();
    let secret_names: BTreeSet<&str> = secrets
        .iter()
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()))
        .collect();
    for (c, line) in calls(text) {
        let strs = strings(&c.args);
        let first = strs.first().cloned().unwrap_or_default();
        let ev = |kind, detail: String| Event {
            kind,
            detail,
            line: line.clone(),
        };
        match c.name.as_str() {
            "execve" | "execveat" if c.ret == "0" => out.push(ev(EventKind::Exec, first)),
            "open" | "openat" | "creat" => {
                let flags = c.args.rsplit(", ").find(|f| f.starts_with("O_"));
                let writes = c.name == "creat"
                    || flags.is_some_and(|f| {
                        f.contains("O_WRONLY")
                            || f.contains("O_RDWR")
                            || f.contains("O_CREAT")
                            || f.contains("O_TRUNC")
                    });
                if writes && !harmless_write(&first) && !program_cache(&first) && effective(&c.ret)
                {
                    out.push(ev(EventKind::Write, first.clone()));
                }
                let dir = flags.is_some_and(|f| f.contains("O_DIRECTORY"));
                let name = Path::new(&first).file_name().and_then(|n| n.to_str());
                let is_secret = secrets.iter().any(|s| Path::new(&first) == s)
                    || (!first.starts_with('/') && name.is_some_and(|n| secret_names.contains(n)));
                if is_secret && !dir && !c.ret.starts_with('-') {
                    out.push(ev(EventKind::SecretRead, first));
                }
            }
            // Calls that name paths: the file tree or its metadata changes.
            "unlink" | "unlinkat" | "rename" | "renameat" | "renameat2" | "mkdir" | "mkdirat"
            | "mknod" | "mknodat" | "rmdir" | "truncate" | "chmod" | "fchmodat" | "chown"
            | "lchown" | "fchownat" | "utime" | "utimes" | "utimensat" | "futimesat"
            | "setxattr" | "lsetxattr" | "removexattr" | "lremovexattr" | "symlink"
            | "symlinkat" | "link" | "linkat"
                if effective(&c.ret) && !harmless_write(&strs.join(" -> ")) =>
            {
                let what = if strs.is_empty() {
                    c.args.clone()
                } else {
                    strs.join(" -> ")
                };
                out.push(ev(EventKind::Write, format!("{} {what}", c.name)));
            }
            // The same on an open file.
            "ftruncate" | "fchmod" | "fchown" | "fsetxattr" | "fremovexattr"
                if !c.ret.starts_with('-') =>
            {
                out.push(ev(EventKind::Write, format!("{} {}", c.name, c.args)));
            }
            "socket" if c.args.contains("AF_INET") || c.args.contains("AF_PACKET") => {
                out.push(ev(EventKind::Net, c.args.clone()));
            }
            "connect" if !c.args.contains("AF_UNIX") => {
                out.push(ev(EventKind::Net, c.args.clone()));
            }
            _ => {}
        }
    }
    out
}

/// Programs a named program is known to start on its own (formatters, decompressors):
/// starting them is not a program the analyser failed to name.
pub fn helpers(name: &str) -> &'static [&'static str] {
    match name {
        "man" => &[
            "man", "preconv", "tbl", "eqn", "pic", "refer", "grap", "vgrind", "nroff", "groff",
            "troff", "grotty", "col", "zsoelim", "manconv", "mandb", "gzip", "zcat", "cat", "less",
            "pager", "iconv", "locale",
        ],
        "tar" => &["gzip", "bzip2", "xz", "zstd", "lzip", "lzma", "lzop"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_lines_are_parsed() {
        let secrets = [PathBuf::from("/h/.ssh/id_rsa")];
        let text = "5 execve(\"/usr/bin/bash\", [\"bash\", \"-c\", \"x\"], 0x1 /* 3 vars */) = 0\n\
            6 openat(AT_FDCWD, \"/dev/null\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3\n\
            6 openat(AT_FDCWD, \"out\\\"x\", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>\n\
            7 execve(\"/usr/bin/nope\", [\"nope\"], 0x1 /* 3 vars */) = -1 ENOENT (No such file)\n\
            6 <... openat resumed>) = 3\n\
            6 openat(AT_FDCWD, \"/h/.ssh/id_rsa\", O_RDONLY) = 3\n\
            6 unlinkat(AT_FDCWD, \"gone\", 0)      = 0\n\
            6 mkdir(\"/etc/x\", 0777) = -1 EROFS (Read-only file system)\n\
            6 socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) = 3\n\
            6 connect(4, {sa_family=AF_UNIX, sun_path=\"/run/nscd\"}, 110) = -1 ENOENT (x)\n\
            6 +++ exited with 0 +++\n";
        let ev = events(text, &secrets);
        let kinds: Vec<(EventKind, &str)> = ev
            .iter()
            .map(|e| (e.kind.clone(), e.detail.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::Exec, "/usr/bin/bash"),
                (EventKind::Write, "out\"x"),
                (EventKind::SecretRead, "/h/.ssh/id_rsa"),
                (EventKind::Write, "unlinkat gone"),
                (EventKind::Write, "mkdir /etc/x"),
                (EventKind::Net, "AF_INET, SOCK_STREAM, IPPROTO_TCP"),
            ]
        );
    }
}
