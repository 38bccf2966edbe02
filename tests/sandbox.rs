//! The OS sandbox for shell commands, tested with real sandboxes: escape attempts that must be
//! blocked and everyday workflows that must keep working, per tier. The bubblewrap tier is
//! skipped (with a printed notice) only when `bwrap` cannot run here; the Landlock tier only
//! when the kernel has no Landlock. Fixtures live outside every writable root of the test
//! policies (/tmp, $TMPDIR) wherever the repository is cloned ([`fixture_base`]), with a
//! temporary HOME holding fake secrets.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use fen::native::process::{run, ProcessError, ProcessResult, ProcessSpec};
use fen::native::sandbox::{
    classify, detect, landlock_abi, Boundary, PolicyInputs, Sandbox, SandboxPolicy, Tier,
};
use tokio_util::sync::CancellationToken;

/// Hang detection only; never a performance claim.
const HANG: Duration = Duration::from_secs(120);
const KEY_NAME: &str = "ANTHROPIC_API_KEY";
const KEY_VALUE: &str = "sk-ant-fen-sandbox-test-4f9a1c";
const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- fen-test-ssh-secret-77e1";
const AUTH_SECRET: &str = "fen-test-auth-secret-b02d";

/// Tiers this machine can run, with a notice for each one skipped.
fn tiers() -> Vec<Tier> {
    let info = detect();
    let mut v = Vec::new();
    if info.tier == Tier::Bubblewrap {
        v.push(Tier::Bubblewrap);
    } else {
        eprintln!(
            "NOTICE: bubblewrap tier unavailable ({}); its sandbox tests are skipped",
            info.bwrap_problem.as_deref().unwrap_or("?")
        );
    }
    if landlock_abi() >= 1 {
        v.push(Tier::Landlock);
    } else {
        eprintln!("NOTICE: the kernel has no Landlock; Landlock sandbox tests are skipped");
    }
    v
}

/// Puts a provider key in this process's environment once, as a user's shell would.
fn key_in_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var(KEY_NAME, KEY_VALUE));
}

fn sh_out(dir: &Path, cmd: &str) -> String {
    let o = Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fixture command failed: {cmd}\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A workspace, a HOME with secrets, and an outside directory with a victim file.
struct Fx {
    base: PathBuf,
    ws: PathBuf,
    home: PathBuf,
    out: PathBuf,
}

impl Drop for Fx {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Bubblewrap commands go through the persistent sandbox: its launcher is the built `fen`.
fn use_launcher() {
    fen::native::sandbox::launcher::set_program(PathBuf::from(env!("CARGO_BIN_EXE_fen")));
}

/// Whether `p` lies in a temp root every sandbox policy makes writable (/tmp, $TMPDIR).
fn in_temp_root(p: &Path) -> bool {
    let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut temps = vec![PathBuf::from("/tmp")];
    temps.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    temps
        .iter()
        .any(|t| c.starts_with(t) || std::fs::canonicalize(t).is_ok_and(|tc| c.starts_with(tc)))
}

/// A directory for fixtures outside every writable root: the target directory unless the
/// clone (so the target) is under /tmp, else /var/tmp, else HOME. "Outside the roots" victims
/// under /tmp would be writable by design and every escape check would fail.
fn fixture_base() -> &'static Path {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let mut candidates = vec![PathBuf::from(env!("CARGO_TARGET_TMPDIR"))];
        candidates.push(PathBuf::from("/var/tmp/fen-sandbox-tests"));
        if let Some(h) = std::env::var_os("HOME") {
            candidates.push(PathBuf::from(h).join(".cache/fen-sandbox-tests"));
        }
        for c in candidates {
            if std::fs::create_dir_all(&c).is_ok() && !in_temp_root(&c) {
                return std::fs::canonicalize(&c).unwrap_or(c);
            }
        }
        panic!("no directory outside /tmp and $TMPDIR is writable for the sandbox fixtures");
    })
}

fn fixture(name: &str, git: bool) -> Fx {
    use_launcher();
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = fixture_base().join(format!(
        "sandbox-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&base);
    let (ws, home, out) = (base.join("ws"), base.join("home"), base.join("out"));
    for d in [&ws, &out, &home.join(".ssh"), &home.join(".config/fen")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), AUTH_SECRET).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), SSH_KEY).unwrap();
    std::fs::write(home.join(".config/fen/auth.json"), AUTH_SECRET).unwrap();
    std::fs::write(home.join(".config/fen/models.json"), AUTH_SECRET).unwrap();
    std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
    std::fs::write(out.join("victim"), "original\n").unwrap();
    std::fs::write(ws.join("file"), "in workspace\n").unwrap();
    let base = std::fs::canonicalize(&base).unwrap();
    let fx = Fx {
        ws: base.join("ws"),
        home: base.join("home"),
        out: base.join("out"),
        base,
    };
    if git {
        git_fixture(&fx);
    }
    fx
}

/// Root repository with a nested repository, a worktree and a file:// submodule.
fn git_fixture(fx: &Fx) {
    let sub = fx.base.join("subsrc");
    std::fs::create_dir_all(&sub).unwrap();
    sh_out(
        &sub,
        "git init -q -b main && echo s > s.txt && git add . && git commit -qm s",
    );
    std::fs::create_dir_all(fx.ws.join(".fen")).unwrap();
    std::fs::write(fx.ws.join(".fen/settings.json"), "{}").unwrap();
    sh_out(
        &fx.ws,
        &format!(
            "git init -q -b main && git config user.name t && git config user.email t@e && \
             echo '.fen/' > .gitignore && git add . && git commit -qm init && \
             git -c protocol.file.allow=always submodule add -q file://{} mod && \
             git commit -qm sub && git worktree add -q wt -b wtb && \
             mkdir -p sub/nested && git -C sub/nested init -q -b main && \
             git -C sub/nested config user.name t && git -C sub/nested config user.email t@e && \
             echo 'wt/' >> .gitignore && echo 'sub/' >> .gitignore && git add .gitignore && \
             git commit -qm ignore",
            sub.display()
        ),
    );
    sh_out(
        &fx.ws.join("mod"),
        "git config user.name t && git config user.email t@e",
    );
}

fn policy(fx: &Fx, network: bool) -> SandboxPolicy {
    SandboxPolicy::build(&PolicyInputs {
        workspace: fx.ws.clone(),
        home: Some(fx.home.clone()),
        network,
        ..Default::default()
    })
}

fn spec(fx: &Fx, tier: Tier, network: bool, cmd: &str) -> ProcessSpec {
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let mut s = ProcessSpec::new(cmd);
    s.cwd = Some(fx.ws.clone());
    s.env = vec![
        ("HOME".into(), fx.home.display().to_string()),
        (
            "RUSTUP_HOME".into(),
            std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{real_home}/.rustup")),
        ),
        (
            "CARGO_HOME".into(),
            fx.home.join(".cargo").display().to_string(),
        ),
        ("OUT".into(), fx.out.display().to_string()),
        ("WS".into(), fx.ws.display().to_string()),
        ("GIT_AUTHOR_NAME".into(), "t".into()),
        ("GIT_AUTHOR_EMAIL".into(), "t@e".into()),
        ("GIT_COMMITTER_NAME".into(), "t".into()),
        ("GIT_COMMITTER_EMAIL".into(), "t@e".into()),
    ];
    // The temporary HOME would hide pyenv's shims' own root.
    let pyenv = Path::new(&real_home).join(".pyenv");
    if std::env::var_os("PYENV_ROOT").is_none() && pyenv.is_dir() {
        s.env
            .push(("PYENV_ROOT".into(), pyenv.display().to_string()));
    }
    // CARGO_TARGET_DIR of the run building these tests would point the sandboxed cargo at a
    // target directory outside the roots.
    s.env_remove = vec![
        KEY_NAME.into(),
        "OPENAI_API_KEY".into(),
        "CARGO_TARGET_DIR".into(),
    ];
    s.sandbox = Some(Sandbox {
        policy: Arc::new(policy(fx, network)),
        tier,
        required: true,
    });
    s
}

async fn run_spec(s: ProcessSpec) -> ProcessResult {
    match tokio::time::timeout(HANG, run(s, CancellationToken::new(), None)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => panic!("run failed: {e}"),
        Err(_) => panic!("run hung"),
    }
}

async fn sbx(fx: &Fx, tier: Tier, cmd: &str) -> ProcessResult {
    run_spec(spec(fx, tier, false, cmd)).await
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Collects failed escape checks so one run reports all of them.
#[derive(Default)]
struct Escapes {
    failures: Vec<String>,
    attempts: usize,
}

impl Escapes {
    fn check(&mut self, tier: Tier, name: &str, blocked: bool, r: &ProcessResult) {
        self.attempts += 1;
        if !blocked {
            self.failures.push(format!(
                "[{}] {name} NOT blocked (exit {:?}): {}",
                tier.name(),
                r.exit_code,
                r.text.trim()
            ));
        }
    }

    fn done(self, min: usize) {
        eprintln!("{} escape attempts", self.attempts);
        assert!(self.failures.is_empty(), "{}", self.failures.join("\n"));
        assert!(
            self.attempts >= min,
            "only {} attempts ran (no tier available?)",
            self.attempts
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn writes_outside_the_roots_are_blocked() {
    let mut e = Escapes::default();
    for tier in tiers() {
        let fx = fixture("writes", false);
        let victim = fx.out.join("victim");
        let original = "original\n";
        let cases: &[(&str, &str)] = &[
            ("direct write", "echo pwned > $OUT/victim"),
            ("append", "echo pwned >> $OUT/victim"),
            ("new file outside", "touch $OUT/new"),
            ("home dotfile", "echo pwned >> $HOME/.bashrc"),
            (
                "symlink to file",
                "ln -s $OUT/victim link && echo pwned > link",
            ),
            (
                "symlink to dir",
                "ln -s $OUT dirlink && echo pwned > dirlink/new",
            ),
            ("hard link", "ln $OUT/victim hard && echo pwned >> hard"),
            ("rename in", "mv $OUT/victim stolen"),
            ("rename out", "mv file $OUT/new"),
            ("delete outside", "rm -f $OUT/victim"),
            ("mkdir outside", "mkdir $OUT/new"),
            ("truncate outside", "truncate -s 0 $OUT/victim"),
            (
                "via /proc/self/root",
                "echo pwned > /proc/self/root$OUT/victim",
            ),
            ("cd out and write", "cd $OUT && echo pwned > new"),
            (
                "python open()",
                "python3 -c \"open('$OUT/new','w').write('pwned')\"",
            ),
        ];
        for (name, cmd) in cases {
            let r = sbx(&fx, tier, cmd).await;
            let blocked = read(&victim) == original
                && !fx.out.join("new").exists()
                && read(&fx.home.join(".bashrc")) == "# rc\n";
            e.check(tier, name, blocked, &r);
            // Put the world back for the next attempt if a case did get through.
            std::fs::write(&victim, original).unwrap();
            let _ = std::fs::remove_file(fx.out.join("new"));
            let _ = std::fs::remove_dir(fx.out.join("new"));
        }
        if tier == Tier::Bubblewrap {
            // Landlock does not cover metadata changes (chmod, utime); bubblewrap does.
            let r = sbx(&fx, tier, "chmod 600 $OUT/victim").await;
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777;
            e.check(tier, "chmod outside", mode != 0o600, &r);
        }
    }
    e.done(30);
}

#[tokio::test(flavor = "current_thread")]
async fn git_metadata_and_fen_settings_are_read_only_under_bubblewrap() {
    if detect().tier != Tier::Bubblewrap {
        eprintln!("NOTICE: bubblewrap tier unavailable; .git protection (a bubblewrap promise) not tested");
        return;
    }
    let tier = Tier::Bubblewrap;
    let mut e = Escapes::default();
    let fx = fixture("git", true);
    let ws = &fx.ws;
    let wt_gitdir = ws.join(".git/worktrees/wt");
    let snapshot = |fx: &Fx| {
        let ws = &fx.ws;
        [
            read(&ws.join(".git/config")),
            read(&ws.join("sub/nested/.git/config")),
            read(&ws.join("wt/.git")),
            read(&ws.join("mod/.git")),
            read(&ws.join(".git/worktrees/wt/commondir")),
            read(&ws.join(".git/worktrees/wt/gitdir")),
            read(&ws.join(".git/modules/mod/config")),
            read(&ws.join(".fen/settings.json")),
        ]
    };
    let before = snapshot(&fx);
    let hooks_before = |p: &Path| std::fs::read_dir(p).map(|d| d.count()).unwrap_or(0);
    let root_hooks = hooks_before(&ws.join(".git/hooks"));
    let cases: &[(&str, &str)] = &[
        (
            "plant root pre-commit hook",
            "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        ),
        ("git config core.hooksPath", "git config core.hooksPath /tmp/evil"),
        ("append to .git/config", "echo '[core]' >> .git/config"),
        ("replace .git/config by rename", "cp .git/config /tmp/c && mv /tmp/c .git/config.new && mv .git/config.new .git/config"),
        ("remove the hooks directory", "rm -rf .git/hooks"),
        (
            "nested repository hook",
            "echo 'echo pwned' > sub/nested/.git/hooks/post-checkout",
        ),
        (
            "nested repository config",
            "git -C sub/nested config core.fsmonitor 'echo pwned'",
        ),
        (
            "worktree gitdir commondir",
            "echo /tmp/evil > .git/worktrees/wt/commondir",
        ),
        (
            "worktree gitdir back-pointer",
            "echo /tmp/evil/.git > .git/worktrees/wt/gitdir",
        ),
        (
            "rewrite the worktree .git pointer",
            "echo 'gitdir: /tmp/evil' > wt/.git",
        ),
        (
            "rewrite the submodule .git pointer",
            "echo 'gitdir: /tmp/evil' > mod/.git",
        ),
        (
            "submodule gitdir hook",
            "echo 'echo pwned' > .git/modules/mod/hooks/post-merge",
        ),
        ("submodule gitdir config", "git -C mod config core.hooksPath /tmp/evil"),
        ("fen project settings", "echo '{\"permissions\":{\"allow\":[\"Bash(*)\"]}}' > .fen/settings.json"),
        ("fen project extension", "mkdir -p .fen/extensions && echo 'x' > .fen/extensions/evil.lua"),
    ];
    for (name, cmd) in cases {
        let r = sbx(&fx, tier, cmd).await;
        let blocked = snapshot(&fx) == before
            && hooks_before(&ws.join(".git/hooks")) == root_hooks
            && !ws.join(".git/hooks/pre-commit").exists()
            && !ws.join("sub/nested/.git/hooks/post-checkout").exists()
            && !ws.join(".git/modules/mod/hooks/post-merge").exists()
            && !ws.join(".fen/extensions").exists()
            && wt_gitdir.exists();
        e.check(tier, name, blocked, &r);
        if !blocked {
            break;
        }
    }
    // The sandbox created no mount points in the tree: git sees nothing new.
    let status = sh_out(ws, "git status --porcelain");
    assert_eq!(status.trim(), "", "mount points leaked into the tree");
    e.done(15);
}

#[tokio::test(flavor = "current_thread")]
async fn secrets_and_provider_keys_stay_hidden() {
    key_in_env();
    let mut e = Escapes::default();
    // A process outside the sandbox holding a provider key in its environment.
    let mut holder = Command::new("sleep")
        .arg("300")
        .env("FEN_HOLDER_KEY", KEY_VALUE)
        .spawn()
        .unwrap();
    let hpid = holder.id();
    for tier in tiers() {
        let fx = fixture("secrets", false);
        let cases: Vec<(&str, String)> = vec![
            ("read ~/.ssh key", "cat $HOME/.ssh/id_ed25519".into()),
            ("list ~/.ssh", "ls -a $HOME/.ssh; cat $HOME/.ssh/*".into()),
            (
                "read fen auth.json",
                "cat $HOME/.config/fen/auth.json".into(),
            ),
            (
                "read fen models.json",
                "cat $HOME/.config/fen/models.json".into(),
            ),
            ("read ~/.aws", "cat $HOME/.aws/credentials".into()),
            (
                "copy the key into the workspace",
                "cp $HOME/.ssh/id_ed25519 k; cat k".into(),
            ),
            (
                "symlink to the key",
                "ln -s $HOME/.ssh/id_ed25519 l; cat l".into(),
            ),
            ("grep the home", "grep -r fen-test $HOME".into()),
            (
                "tar the home",
                "tar cf - -C $HOME . 2>/dev/null | strings".into(),
            ),
            ("provider key in env", "env".into()),
            ("provider key by name", format!("printenv {KEY_NAME}")),
            (
                "key from another process's environ",
                format!("cat /proc/{hpid}/environ | tr '\\0' '\\n'"),
            ),
            (
                "key from fen's own environ",
                format!("cat /proc/{}/environ | tr '\\0' '\\n'", std::process::id()),
            ),
        ];
        for (name, cmd) in &cases {
            let r = sbx(&fx, tier, cmd).await;
            // bubblewrap hides the whole directory; Landlock lets its names be listed, not read.
            let name_hidden = tier == Tier::Bubblewrap;
            let leaked = [SSH_KEY, AUTH_SECRET, KEY_VALUE]
                .iter()
                .any(|s| r.text.contains(s))
                || r.text.contains("fen-test-ssh-secret")
                || (name_hidden && r.text.contains("id_ed25519\n"));
            e.check(tier, name, !leaked, &r);
        }
        // A signal to a process outside the sandbox does not arrive.
        let r = sbx(&fx, tier, &format!("kill -TERM {hpid}")).await;
        std::thread::sleep(Duration::from_millis(50));
        let alive = holder.try_wait().unwrap().is_none();
        e.check(tier, "signal a process outside", alive, &r);
    }
    let _ = holder.kill();
    let _ = holder.wait();
    e.done(20);
}

#[tokio::test(flavor = "current_thread")]
async fn network_is_off() {
    let mut e = Escapes::default();
    let tcp4 = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp4.set_nonblocking(true).unwrap();
    let tcp6 = TcpListener::bind("[::1]:0").ok();
    if let Some(l) = &tcp6 {
        l.set_nonblocking(true).unwrap();
    }
    let udp4 = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp4.set_nonblocking(true).unwrap();
    let udp6 = UdpSocket::bind("[::1]:0").ok();
    if let Some(s) = &udp6 {
        s.set_nonblocking(true).unwrap();
    }
    let dns = UdpSocket::bind("127.0.0.1:0").unwrap();
    dns.set_nonblocking(true).unwrap();
    let p = |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.port()).unwrap_or(0);
    let (t4, u4, d) = (
        p(tcp4.local_addr()),
        p(udp4.local_addr()),
        p(dns.local_addr()),
    );
    let t6 = tcp6.as_ref().map_or(0, |l| p(l.local_addr()));
    let u6 = udp6.as_ref().map_or(0, |l| p(l.local_addr()));
    let py = "python3 -c";
    // A DNS query for example.com, A record.
    let query = "b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'";
    let accepted =
        |l: &TcpListener| !matches!(l.accept(), Err(ref x) if x.kind() == ErrorKind::WouldBlock);
    let received = |s: &UdpSocket| {
        let mut b = [0u8; 512];
        !matches!(s.recv_from(&mut b), Err(ref x) if x.kind() == ErrorKind::WouldBlock)
    };
    for tier in tiers() {
        let fx = fixture("net", false);
        let mut cases: Vec<(&str, String, u8)> = vec![
            ("tcp v4 /dev/tcp", format!("echo hi > /dev/tcp/127.0.0.1/{t4}"), 0),
            (
                "tcp v4 python",
                format!("{py} \"import socket; socket.create_connection(('127.0.0.1', {t4})).send(b'x')\""),
                0,
            ),
            ("udp v4 /dev/udp", format!("echo hi > /dev/udp/127.0.0.1/{u4}"), 2),
            (
                "udp v4 python",
                format!("{py} \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {u4}))\""),
                2,
            ),
            (
                "dns query to a resolver",
                format!("{py} \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto({query}, ('127.0.0.1', {d}))\""),
                4,
            ),
            (
                "dns query over tcp",
                format!("{py} \"import socket; socket.create_connection(('127.0.0.1', {t4})).send({query})\""),
                0,
            ),
            ("system resolver", "getent hosts fen-sandbox-test.example".into(), 5),
        ];
        if tcp6.is_some() {
            cases.push(("tcp v6", format!("echo hi > /dev/tcp/::1/{t6}"), 1));
        }
        if udp6.is_some() {
            cases.push(("udp v6", format!("{py} \"import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'x', ('::1', {u6}))\""), 3));
        }
        for (name, cmd, which) in &cases {
            let r = sbx(&fx, tier, cmd).await;
            let got = match which {
                0 => accepted(&tcp4),
                1 => tcp6.as_ref().is_some_and(accepted),
                2 => received(&udp4),
                3 => udp6.as_ref().is_some_and(received),
                4 => received(&dns),
                // The system resolver: the lookup must fail.
                _ => r.exit_code == Some(0),
            };
            // A datagram "sent" inside bubblewrap's own network namespace succeeds locally;
            // what counts is that nothing reached the listener outside.
            let udp = matches!(which, 2..=4);
            e.check(tier, name, !got && (udp || r.exit_code != Some(0)), &r);
            if *which == 0 || *which == 4 {
                // The classifier names the network boundary for socket failures.
                if let Some(b) = classify(&policy(&fx, false), r.exit_code, &r.text) {
                    assert_eq!(b.boundary, Boundary::Network, "{}", r.text);
                }
            }
        }
    }
    e.done(14);
}

/// Pids of processes whose command line contains `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(marker) {
            v.push(pid);
        }
    }
    v
}

async fn gone(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if with_marker(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pid in with_marker(marker) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    false
}

#[tokio::test(flavor = "current_thread")]
async fn no_child_outlives_a_cancelled_call() {
    let mut e = Escapes::default();
    for tier in tiers() {
        let fx = fixture("cancel", false);
        // A new session leaves fen's process group; the keeper (a child subreaper) catches it
        // in both tiers, the pid namespace too under bubblewrap.
        let cases = [
            (
                "background child",
                "(exec -a MARK sleep 300) & sleep 300".to_string(),
            ),
            (
                "setsid child",
                "setsid bash -c 'exec -a MARK sleep 300' & sleep 300".into(),
            ),
            (
                "double fork + nohup",
                "(nohup setsid bash -c 'exec -a MARK sleep 300' >/dev/null 2>&1 &) ; sleep 300"
                    .into(),
            ),
        ];
        for (i, (name, cmd)) in cases.iter().enumerate() {
            let marker = format!("fenmark{}x{}x{i}", std::process::id(), tier.name());
            let cmd = cmd.replace("MARK", &marker);
            let cancel = CancellationToken::new();
            let c2 = cancel.clone();
            let m2 = marker.clone();
            tokio::spawn(async move {
                let until = Instant::now() + Duration::from_secs(10);
                while with_marker(&m2).len() < 2 && Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                c2.cancel();
            });
            let r = tokio::time::timeout(HANG, run(spec(&fx, tier, false, &cmd), cancel, None))
                .await
                .expect("hung")
                .expect("run");
            assert!(r.cancelled, "{name}: {}", r.text);
            e.check(tier, name, gone(&marker).await, &r);
        }
        {
            // Even a normal return ends the command's leftovers.
            let marker = format!("fenmark{}xleft{}", std::process::id(), tier.name());
            let r = sbx(
                &fx,
                tier,
                &format!("setsid bash -c 'exec -a {marker} sleep 300' & sleep 0.2"),
            )
            .await;
            e.check(
                tier,
                "setsid leftover after return",
                gone(&marker).await,
                &r,
            );
        }
    }
    e.done(2);
}

/// Under bubblewrap, commands run in the persistent sandbox: its launcher is there, and
/// neither its environment nor anything of an earlier command is visible to a later one.
#[tokio::test(flavor = "current_thread")]
async fn the_persistent_bubblewrap_sandbox_is_used_and_leaks_nothing() {
    if detect().tier != Tier::Bubblewrap {
        eprintln!("NOTICE: bubblewrap tier unavailable; skipped");
        return;
    }
    key_in_env();
    let fx = fixture("persistent", false);
    let r = sbx(
        &fx,
        Tier::Bubblewrap,
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c __fen-sandbox-launcher",
    )
    .await;
    assert_ne!(r.text.trim(), "0", "no launcher in the sandbox: {}", r.text);
    // No process of the sandbox shows the key in its environment, and the launcher's (and
    // its keepers') cannot even be read: they are not dumpable.
    let r = sbx(
        &fx,
        Tier::Bubblewrap,
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>&1",
    )
    .await;
    assert!(!r.text.contains(KEY_VALUE), "{}", r.text);
    assert!(r.text.contains("environ: Permission denied"), "{}", r.text);
    assert!(r.text.contains("GIT_EDITOR=true"), "{}", r.text);
    // A process left behind by one command is gone before the next one starts.
    let marker = format!("fenmark{}xpersist", std::process::id());
    sbx(
        &fx,
        Tier::Bubblewrap,
        &format!("(exec -a {marker} sleep 300) &"),
    )
    .await;
    let r = sbx(
        &fx,
        Tier::Bubblewrap,
        &format!("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^{marker} '"),
    )
    .await;
    assert_eq!(r.text.trim(), "0", "{}", r.text);
    assert!(gone(&marker).await);
}

/// The persistent sandbox outlives the thread that started it: bwrap's `--die-with-parent`
/// follows the spawning thread, and the runtime's blocking threads retire after 10 s idle.
#[tokio::test(flavor = "current_thread")]
async fn a_long_command_in_the_persistent_sandbox_outlives_idle_pool_threads() {
    if detect().tier != Tier::Bubblewrap {
        eprintln!("NOTICE: bubblewrap tier unavailable; skipped");
        return;
    }
    let fx = fixture("long", false);
    let r = sbx(&fx, Tier::Bubblewrap, "sleep 12; echo done").await;
    assert_eq!(r.exit_code, Some(0), "{}", r.text);
    assert!(r.text.contains("done"), "{}", r.text);
}

/// Background jobs run in the same sandbox as the shell tool's commands.
#[tokio::test(flavor = "current_thread")]
async fn background_jobs_cannot_write_outside_the_roots() {
    use fen::native::jobs::{self, JobSpec, JobStatus};
    let mut e = Escapes::default();
    for tier in tiers() {
        let fx = fixture("jobs", false);
        let logs = fx.base.join("logs");
        let s = spec(&fx, tier, false, "");
        let start = |cmd: &str| {
            jobs::start(JobSpec {
                command: cmd.into(),
                cwd: Some(fx.ws.clone()),
                log_dir: logs.clone(),
                log_cap: jobs::DEFAULT_LOG_CAP,
                env: s.env.clone(),
                env_remove: s.env_remove.clone(),
                sandbox: s.sandbox.clone(),
            })
        };
        let cases: &[(&str, &str)] = &[
            ("job writes outside", "echo pwned > $OUT/victim"),
            ("job creates outside", "touch $OUT/new"),
            ("job writes home", "echo pwned >> $HOME/.bashrc"),
            ("job reads ssh key", "cat $HOME/.ssh/id_ed25519"),
        ];
        for (name, cmd) in cases {
            let job = start(&format!("{cmd}; echo inside > job-ok"))
                .await
                .expect("start");
            let until = Instant::now() + HANG;
            let mut out = jobs::output(&job.id, Duration::from_secs(5), 64 * 1024)
                .await
                .expect("output");
            while out.info.status == JobStatus::Running && Instant::now() < until {
                out = jobs::output(&job.id, Duration::from_secs(5), 64 * 1024)
                    .await
                    .expect("output");
            }
            let text = String::from_utf8_lossy(&out.bytes).into_owned();
            let blocked = read(&fx.out.join("victim")) == "original\n"
                && !fx.out.join("new").exists()
                && read(&fx.home.join(".bashrc")) == "# rc\n"
                && !text.contains(SSH_KEY);
            // The job did run, inside the workspace.
            assert_eq!(
                read(&fx.ws.join("job-ok")),
                "inside\n",
                "[{}] {name}: {text}",
                tier.name()
            );
            let _ = std::fs::remove_file(fx.ws.join("job-ok"));
            let r = ProcessResult {
                exit_code: None,
                signal: None,
                timed_out: false,
                cancelled: false,
                duration: Duration::ZERO,
                total_bytes: 0,
                text,
                truncated: false,
                escaped_bytes: 0,
                spill_path: None,
                spill_error: None,
                background_pids: Vec::new(),
                pgid: 0,
            };
            e.check(tier, name, blocked, &r);
        }
    }
    e.done(4);
}

#[tokio::test(flavor = "current_thread")]
async fn landlock_tier_is_really_enforced() {
    if landlock_abi() < 1 {
        eprintln!("NOTICE: the kernel has no Landlock; skipped");
        return;
    }
    let fx = fixture("enforced", false);
    let r = sbx(
        &fx,
        Tier::Landlock,
        "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status",
    )
    .await;
    assert!(r.text.contains("NoNewPrivs:\t1"), "{}", r.text);
    assert!(r.text.contains("Seccomp:\t2"), "{}", r.text);
    let r = sbx(&fx, Tier::Landlock, "touch $OUT/x").await;
    assert_ne!(r.exit_code, Some(0));
    assert!(r.text.contains("Permission denied"), "{}", r.text);
    let b = classify(&policy(&fx, false), r.exit_code, &r.text).expect("classified");
    assert_eq!(b.boundary, Boundary::Write(fx.out.join("x")));
    assert!(b.line().contains("sandbox.writable_roots"));
}

#[tokio::test(flavor = "current_thread")]
async fn bubblewrap_denials_are_classified() {
    if detect().tier != Tier::Bubblewrap {
        eprintln!("NOTICE: bubblewrap tier unavailable; skipped");
        return;
    }
    let fx = fixture("classify", false);
    let r = sbx(&fx, Tier::Bubblewrap, "touch $OUT/x").await;
    assert!(r.text.contains("Read-only file system"), "{}", r.text);
    let b = classify(&policy(&fx, false), r.exit_code, &r.text).expect("classified");
    assert_eq!(b.boundary, Boundary::Write(fx.out.join("x")));
}

#[tokio::test(flavor = "current_thread")]
async fn required_sandbox_never_fails_open() {
    let fx = fixture("required", false);
    let mut s = spec(&fx, Tier::None, false, "touch $OUT/x");
    let err = run(s.clone(), CancellationToken::new(), None)
        .await
        .expect_err("must refuse");
    assert!(matches!(err, ProcessError::Sandbox(_)));
    let msg = err.to_string();
    assert!(msg.contains("sandbox required but unavailable"), "{msg}");
    assert!(msg.contains("install bubblewrap"), "{msg}");
    assert!(!fx.out.join("x").exists(), "the command ran");
    // Not required: tier None runs unsandboxed (the caller shows the warning).
    if let Some(sb) = &mut s.sandbox {
        sb.required = false;
    }
    let r = run_spec(s).await;
    assert_eq!(r.exit_code, Some(0));
    assert!(fx.out.join("x").exists());
}

/// Collects failed workflows.
#[derive(Default)]
struct Flows {
    failures: Vec<String>,
    passed: usize,
}

impl Flows {
    async fn run(&mut self, fx: &Fx, tier: Tier, network: bool, name: &str, cmd: &str) {
        let r = run_spec(spec(fx, tier, network, cmd)).await;
        if r.exit_code == Some(0) {
            self.passed += 1;
        } else {
            self.failures.push(format!(
                "[{}] {name} failed (exit {:?}): {}",
                tier.name(),
                r.exit_code,
                r.text.trim()
            ));
        }
    }

    fn done(self, min: usize) {
        eprintln!("{} workflows passed", self.passed);
        assert!(self.failures.is_empty(), "{}", self.failures.join("\n\n"));
        assert!(self.passed >= min, "only {} workflows ran", self.passed);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn git_workflows_work_inside() {
    let mut f = Flows::default();
    for tier in tiers() {
        let fx = fixture("gitflow", true);
        let src = fx.base.join("subsrc").display().to_string();
        let steps: Vec<(&str, String)> = vec![
            (
                "git add/commit in the root repository",
                "echo a >> file && git add file && git commit -qm a && git log --oneline | head -1".into(),
            ),
            (
                "git branch and switch",
                "git branch feat && git switch -q feat && echo b > b && git add b && git commit -qm b && git switch -q main".into(),
            ),
            ("git status/diff/log", "git status --short && git diff HEAD~1 --stat && git log -3 --oneline".into()),
            ("git stash", "echo s >> file && git stash -q && git stash pop -q && git checkout -q -- file".into()),
            (
                "commit in an existing worktree",
                "cd wt && echo w > w && git add w && git commit -qm w".into(),
            ),
            (
                "git worktree add and commit",
                "git worktree add -q wt2 -b wt2b && cd wt2 && echo x > x && git add x && git commit -qm x".into(),
            ),
            (
                "commit in a submodule and bump it",
                "cd mod && echo m >> s.txt && git commit -qam m && cd .. && git add mod && git commit -qm bump".into(),
            ),
            (
                "commit in a nested repository",
                "cd sub/nested && echo n > n && git add n && git commit -qm n".into(),
            ),
            (
                "git init/add/commit of a new repository",
                "mkdir fresh && cd fresh && git init -q && echo f > f && git add f && git commit -qm f".into(),
            ),
            (
                "git clone file://",
                format!("git clone -q file://{src} cloned && git -C cloned log --oneline"),
            ),
        ];
        for (name, cmd) in &steps {
            f.run(&fx, tier, false, name, cmd).await;
        }
    }
    f.done(10);
}

#[tokio::test(flavor = "current_thread")]
async fn build_and_test_workflows_work_inside() {
    let mut f = Flows::default();
    for tier in tiers() {
        let fx = fixture("build", false);
        let ws = &fx.ws;
        // A tiny crate without dependencies.
        std::fs::create_dir_all(ws.join("crate/src")).unwrap();
        std::fs::write(
            ws.join("crate/Cargo.toml"),
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("crate/src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[cfg(test)]\nmod t { #[test] fn adds() { assert_eq!(super::add(2, 2), 4); } }\n",
        )
        .unwrap();
        // The workspace itself is an npm package: `~/.npm`, an existing cache, is a writable
        // root (a missing one is not created: `missing_cache_roots_are_not_created_in_home`).
        std::fs::create_dir_all(fx.home.join(".npm")).unwrap();
        std::fs::write(
            ws.join("package.json"),
            "{\"name\":\"root\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"node -e \\\"require('fs').writeFileSync(require('os').homedir()+'/.npm/probe','x')\\\"\"}}\n",
        )
        .unwrap();
        // A tiny npm package.
        std::fs::create_dir_all(ws.join("pkg")).unwrap();
        std::fs::write(
            ws.join("pkg/package.json"),
            "{\"name\":\"tiny\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"node test.js\"}}\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("pkg/test.js"),
            "const assert = require('assert'); assert.strictEqual(1 + 1, 2); console.log('ok');\n",
        )
        .unwrap();
        // A tiny Python project.
        std::fs::create_dir_all(ws.join("py")).unwrap();
        std::fs::write(ws.join("py/calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
        std::fs::write(
            ws.join("py/test_calc.py"),
            "import unittest\nfrom calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
        )
        .unwrap();
        // make with a C program.
        std::fs::create_dir_all(ws.join("c")).unwrap();
        std::fs::write(
            ws.join("c/hello.c"),
            "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("c/Makefile"),
            "hello: hello.c\n\tcc -o hello hello.c\n\ntest: hello\n\t./hello | grep -q hi\n",
        )
        .unwrap();

        let pytest = Command::new("python3")
            .args(["-m", "pytest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        let py_cmd = if pytest {
            "cd py && python3 -m pytest -q -p no:cacheprovider"
        } else {
            eprintln!("NOTICE: pytest is not installed; using python3 -m unittest instead");
            "cd py && python3 -m unittest -q"
        };
        let steps: Vec<(&str, &str)> = vec![
            (
                "cargo build --offline",
                "cd crate && cargo build --offline -q",
            ),
            (
                "cargo test --offline",
                "cd crate && cargo test --offline -q",
            ),
            ("npm test", "cd pkg && npm test --silent"),
            (
                "npm test at the root, writing the ~/.npm cache",
                "npm test --silent && test -f $HOME/.npm/probe",
            ),
            ("python tests", py_cmd),
            ("make", "cd c && make -s test"),
            (
                "temp files",
                "f=$(mktemp) && echo t > $f && cat $f && rm $f",
            ),
            (
                "reads outside the roots",
                "cat /etc/hostname >/dev/null && ls /usr/bin >/dev/null",
            ),
            (
                "pipes and /dev/null",
                "head -c 100 /dev/urandom | wc -c >/dev/null 2>&1 && echo ok",
            ),
        ];
        for (name, cmd) in &steps {
            let tool = ["cargo", "npm", "python3", "make"]
                .into_iter()
                .find(|t| cmd.contains(&format!("{t} ")));
            if let Some(t) = tool.filter(|t| fen::native::sandbox::find_on_path(t).is_none()) {
                eprintln!("NOTICE: {t} is not installed; workflow '{name}' skipped");
                continue;
            }
            f.run(&fx, tier, false, name, cmd).await;
        }
        // With the network on, loopback works.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        f.run(
            &fx,
            tier,
            true,
            "network on: tcp to a local server",
            &format!("echo hi > /dev/tcp/127.0.0.1/{port}"),
        )
        .await;
    }
    f.done(4);
}

/// `spec` for a command in `cwd` whose workspace is `ws` (not the fixture's).
fn spec_in(fx: &Fx, tier: Tier, ws: &Path, cwd: &Path, cmd: &str) -> ProcessSpec {
    let mut s = spec(fx, tier, false, cmd);
    s.cwd = Some(cwd.to_path_buf());
    s.sandbox = Some(Sandbox {
        policy: Arc::new(SandboxPolicy::build(&PolicyInputs {
            workspace: ws.to_path_buf(),
            home: Some(fx.home.clone()),
            ..Default::default()
        })),
        tier,
        required: true,
    });
    s
}

/// A scratch directory under /tmp (a writable root of every policy), removed on drop.
struct TmpScratch(PathBuf);

impl TmpScratch {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = PathBuf::from("/tmp").join(format!(
            "fen-sbx-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(std::fs::canonicalize(&p).unwrap())
    }
}

impl Drop for TmpScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A main repository with one commit and a linked worktree of it (`git worktree add`).
fn repo_with_worktree(main: &Path, wt: &Path) {
    std::fs::create_dir_all(main).unwrap();
    sh_out(
        main,
        &format!(
            "git init -q -b main && git config user.name t && git config user.email t@e && \
             echo a > a && git add a && git commit -qm a && git worktree add -q {} -b feat",
            wt.display()
        ),
    );
}

/// What a command must not change in a repository's metadata.
fn git_meta(gitdir: &Path) -> (String, usize) {
    (
        read(&gitdir.join("config")),
        std::fs::read_dir(gitdir.join("hooks"))
            .map(|d| d.count())
            .unwrap_or(0),
    )
}

/// A linked worktree and its main repository both under /tmp (writable by design): a command
/// in the worktree must not rewrite the main repository's config or plant a hook there (they
/// would run outside the sandbox), and neither may a command whose working directory is some
/// other repository under /tmp; commits keep working.
#[tokio::test(flavor = "current_thread")]
async fn git_metadata_of_repositories_in_every_writable_root_is_read_only_under_bubblewrap() {
    if detect().tier != Tier::Bubblewrap {
        eprintln!(
            "NOTICE: bubblewrap tier unavailable; .git protection outside the workspace not tested"
        );
        return;
    }
    let tier = Tier::Bubblewrap;
    let fx = fixture("gitroots", false);
    let scratch = TmpScratch::new("gitroots");
    let (main, wt, other) = (
        scratch.0.join("main"),
        scratch.0.join("wt"),
        scratch.0.join("other"),
    );
    repo_with_worktree(&main, &wt);
    std::fs::create_dir_all(&other).unwrap();
    sh_out(&other, "git init -q -b main");
    let gd = main.join(".git");
    let before = (git_meta(&gd), git_meta(&other.join(".git")));
    let pointers = (
        read(&wt.join(".git")),
        read(&gd.join("worktrees/wt/commondir")),
        read(&gd.join("worktrees/wt/gitdir")),
    );
    let mut e = Escapes::default();
    let m = main.display();
    let cases: Vec<(&str, String, &Path)> = vec![
        (
            "main config from the worktree",
            format!("echo '[core]' >> {m}/.git/config"),
            &wt,
        ),
        (
            "main hook from the worktree",
            format!("printf '#!/bin/sh\\necho pwned\\n' > {m}/.git/hooks/post-commit"),
            &wt,
        ),
        (
            "main config by rename",
            format!("cp {m}/.git/config {m}/.git/c2 && mv {m}/.git/c2 {m}/.git/config"),
            &wt,
        ),
        (
            "git config in the worktree",
            "git config core.hooksPath /tmp/evil".into(),
            &wt,
        ),
        (
            "the worktree's .git pointer",
            "echo 'gitdir: /tmp/evil' > .git".into(),
            &wt,
        ),
        (
            "the worktree gitdir's commondir",
            format!("echo /tmp/evil > {m}/.git/worktrees/wt/commondir"),
            &wt,
        ),
        (
            "a hook in the cwd's repository",
            "echo x > .git/hooks/post-checkout".into(),
            &other,
        ),
        (
            "config of the cwd's repository",
            "git config core.fsmonitor 'echo pwned'".into(),
            &other,
        ),
    ];
    for (name, cmd, cwd) in &cases {
        let r = run_spec(spec_in(&fx, tier, &wt, cwd, cmd)).await;
        let now = (git_meta(&gd), git_meta(&other.join(".git")));
        let ptrs = (
            read(&wt.join(".git")),
            read(&gd.join("worktrees/wt/commondir")),
            read(&gd.join("worktrees/wt/gitdir")),
        );
        e.check(tier, name, now == before && ptrs == pointers, &r);
    }
    e.done(8);
    // Commits in the worktree and in the other repository still work.
    let r = run_spec(spec_in(
        &fx,
        tier,
        &wt,
        &wt,
        "echo b > b && git add b && git commit -qm b && git log --oneline | head -1",
    ))
    .await;
    assert_eq!(r.exit_code, Some(0), "{}", r.text);
    let r = run_spec(spec_in(
        &fx,
        tier,
        &wt,
        &other,
        "git config user.name 2>/dev/null; echo o > o && git add o && git -c user.name=t -c user.email=t@e commit -qm o",
    ))
    .await;
    assert_eq!(r.exit_code, Some(0), "{}", r.text);
    assert_eq!(sh_out(&main, "git log --oneline feat | wc -l").trim(), "2");
}

/// A worktree whose main repository is outside every writable root (`git worktree add`
/// next to a project in HOME): commits work, because objects, refs, logs and the worktree's
/// own gitdir are granted, and the main repository's config and hooks stay read-only, in
/// both tiers.
#[tokio::test(flavor = "current_thread")]
async fn a_worktree_commits_into_its_main_repository_outside_the_roots_without_its_config() {
    let mut e = Escapes::default();
    let mut commits = 0;
    for tier in tiers() {
        let fx = fixture("wtout", false);
        let main = fx.out.join("main");
        let wt = fx.ws.join("feature");
        repo_with_worktree(&main, &wt);
        let gd = main.join(".git");
        let before = git_meta(&gd);
        let r = run_spec(spec_in(
            &fx,
            tier,
            &wt,
            &wt,
            "echo b > b && git add b && git commit -qm b && git branch side && git log --oneline -1",
        ))
        .await;
        assert_eq!(r.exit_code, Some(0), "[{}] {}", tier.name(), r.text);
        commits += 1;
        let m = main.display();
        for (name, cmd) in [
            ("main config", format!("echo '[core]' >> {m}/.git/config")),
            ("main hook", format!("echo x > {m}/.git/hooks/post-commit")),
            ("main HEAD", format!("echo x > {m}/.git/HEAD")),
            (
                "git config",
                "git config core.hooksPath /tmp/evil".to_string(),
            ),
        ] {
            let r = run_spec(spec_in(&fx, tier, &wt, &wt, &cmd)).await;
            e.check(tier, name, git_meta(&gd) == before, &r);
        }
        assert!(read(&gd.join("HEAD")).starts_with("ref: refs/heads/main"));
    }
    e.done(4);
    eprintln!("{commits} worktree commits");
}

/// The sandbox creates nothing in the user's home: package-cache roots that do not exist
/// (`~/.cargo/registry`, `~/.npm`) are not made, and a write there is explained.
#[tokio::test(flavor = "current_thread")]
async fn missing_cache_roots_are_not_created_in_home() {
    for tier in tiers() {
        let fx = fixture("caches", false);
        std::fs::write(fx.ws.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        std::fs::write(fx.ws.join("package.json"), "{}").unwrap();
        let listing = |h: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(h)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let before = listing(&fx.home);
        let r = sbx(&fx, tier, "echo ok").await;
        assert_eq!(r.exit_code, Some(0), "{}", r.text);
        let r = sbx(
            &fx,
            tier,
            "mkdir -p $HOME/.npm/_logs && echo x > $HOME/.npm/_logs/l",
        )
        .await;
        assert_ne!(r.exit_code, Some(0), "[{}] {}", tier.name(), r.text);
        assert_eq!(
            listing(&fx.home),
            before,
            "[{}] created in HOME",
            tier.name()
        );
        assert!(!fx.home.join(".cargo").exists() && !fx.home.join(".npm").exists());
        let b = classify(&policy(&fx, false), r.exit_code, &r.text).expect("classified");
        assert_eq!(
            b.boundary,
            Boundary::MissingRoot(fx.home.join(".npm")),
            "{}",
            r.text
        );
        assert!(b.line().contains("mkdir -p"), "{}", b.line());
        // Once it exists, it is writable.
        std::fs::create_dir_all(fx.home.join(".npm")).unwrap();
        let r = sbx(
            &fx,
            tier,
            "mkdir -p $HOME/.npm/_logs && echo x > $HOME/.npm/_logs/l",
        )
        .await;
        assert_eq!(r.exit_code, Some(0), "[{}] {}", tier.name(), r.text);
    }
}

/// Under both tiers a command's processes end with it: background children, `setsid`
/// escapees and double forks are gone when the call returns.
#[tokio::test(flavor = "current_thread")]
async fn background_children_end_with_the_command_in_every_tier() {
    let mut e = Escapes::default();
    for tier in tiers() {
        let fx = fixture("leftover", false);
        let cases = [
            ("background child", "(exec -a MARK sleep 300) & sleep 0.2"),
            (
                "setsid child",
                "setsid bash -c 'exec -a MARK sleep 300' & sleep 0.2",
            ),
            (
                "double fork + nohup",
                "(nohup setsid bash -c 'exec -a MARK sleep 300' >/dev/null 2>&1 &) ; sleep 0.2",
            ),
        ];
        for (i, (name, cmd)) in cases.iter().enumerate() {
            let marker = format!("fenmark{}xend{}x{i}", std::process::id(), tier.name());
            let r = sbx(&fx, tier, &cmd.replace("MARK", &marker)).await;
            assert_eq!(r.exit_code, Some(0), "{name}: {}", r.text);
            // Gone when the call returns, not some time later.
            let ended = with_marker(&marker).is_empty();
            if !ended {
                gone(&marker).await;
            }
            e.check(tier, name, ended, &r);
        }
    }
    e.done(3);
}

/// `fen` with the fixture's HOME and XDG directories, in its workspace, in auto mode, playing
/// one `bash` call of `command` through the mock provider.
fn fen_auto(fx: &Fx, command: &str, extra: &[&str]) -> Command {
    let script = serde_json::json!([
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "done"}
    ]);
    let sc = fx.base.join("script.json");
    std::fs::write(&sc, script.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fen"));
    cmd.args(["--permission-mode", "auto", "--no-session", "--mock-script"])
        .arg(&sc)
        .args(extra)
        .current_dir(&fx.ws)
        .env("HOME", &fx.home)
        .env("XDG_CONFIG_HOME", fx.base.join("config"))
        .env("XDG_STATE_HOME", fx.base.join("state"))
        .env_remove("FEN_EXTENSIONS_PATH")
        .env_remove("FEN_EXTENSION_ROOT")
        .env_remove("FEN_LOG")
        .env_remove("FEN_MOCK_SCRIPT");
    cmd
}

/// The tool-result texts of a `--mode json` run.
fn tool_results(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool-result")
        .map(|e| {
            e["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// A headless run cannot ask whether to rerun a blocked command outside the sandbox: the
/// result names the boundary (the network, a write outside the roots) and the way out.
#[test]
fn a_headless_sandbox_denial_names_the_boundary_and_the_way_out() {
    if detect().tier == Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; skipped");
        return;
    }
    let fx = fixture("headless", false);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    // A refused connection (ECONNREFUSED in bubblewrap's own network namespace, EACCES under
    // Landlock) with nothing in the message that says "sandbox". Scripts, not `python3 -c`:
    // inline code is opaque to the analyser and would be asked (so refused) headless.
    std::fs::write(
        fx.ws.join("net.py"),
        format!("import socket\nsocket.create_connection(('127.0.0.1', {port}))\n"),
    )
    .unwrap();
    let victim = fx.out.join("victim");
    std::fs::write(
        fx.ws.join("touch.py"),
        format!("import os\nos.open('{}', os.O_WRONLY)\n", victim.display()),
    )
    .unwrap();
    let (py, write) = ("python3 net.py".to_string(), "python3 touch.py".to_string());
    for (cmd, boundary, setting) in [
        (
            py.as_str(),
            "network access was blocked",
            "sandbox.network = true",
        ),
        (
            write.as_str(),
            "outside the writable roots",
            "sandbox.writable_roots",
        ),
    ] {
        let out = fen_auto(&fx, cmd, &["--mode", "json", "go"])
            .output()
            .unwrap();
        let results = tool_results(&out.stdout);
        assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
        let r = &results[0];
        assert!(r.contains(boundary), "{r}");
        assert!(r.contains(setting), "{r}");
        assert!(
            r.contains("nobody can be asked") && r.contains("default mode"),
            "{r}"
        );
    }
    // The same through `-p`: the progress row of the failed call on stderr shows the
    // boundary and the way out, not the output's first line ("Traceback ...").
    let out = fen_auto(&fx, &py, &["-p", "go"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let row = err
        .lines()
        .find(|l| l.starts_with("tool> err bash"))
        .unwrap_or_else(|| panic!("no error row: {err}"));
    assert!(row.contains("network access was blocked"), "{row}");
    assert!(row.contains("sandbox.network = true"), "{row}");
    assert!(row.contains("default mode to be asked"), "{row}");
    assert_eq!(read(&victim), "original\n");
}

/// Killing fen while a sandboxed command runs ends the command and its background children,
/// whichever tier this machine has.
#[test]
fn a_command_and_its_children_do_not_outlive_a_killed_fen() {
    if detect().tier == Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; skipped");
        return;
    }
    let fx = fixture("killfen", false);
    let marker = format!("fenmark{}xkilled", std::process::id());
    let cmd = format!(
        "(exec -a {marker} sleep 300) & setsid bash -c 'exec -a {marker} sleep 300' & sleep 300"
    );
    let mut child = fen_auto(&fx, &cmd, &["-p", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    // The shell (its command line names the marker) and both sleeps.
    while with_marker(&marker).len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(with_marker(&marker).len() >= 3, "the command did not start");
    let _ = child.kill();
    let _ = child.wait();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(rt.block_on(gone(&marker)), "processes outlived fen");
}
