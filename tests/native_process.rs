//! Integration tests for the process supervisor: real shells, real process groups.

use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use fen::native::process::{
    group_members, is_dead, proc_stat, run, terminate_group, ProcessError, ProcessResult,
    ProcessSpec,
};
use tokio_util::sync::CancellationToken;

/// Hang detection only; never a performance claim.
const HANG: Duration = Duration::from_secs(30);

async fn sh(cmd: &str) -> ProcessResult {
    run_spec(ProcessSpec::new(cmd)).await
}

async fn run_spec(spec: ProcessSpec) -> ProcessResult {
    let r = tokio::time::timeout(HANG, run(spec, CancellationToken::new(), None)).await;
    match r {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => panic!("run failed: {e}"),
        Err(_) => panic!("run hung"),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "fen-process-test-{}-{name}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pids_in(text: &str) -> Vec<i32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn exit_codes() {
    let r = sh("true").await;
    assert_eq!((r.exit_code, r.signal), (Some(0), None));
    let r = sh("echo out; exit 3").await;
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.text, "out\n");
    assert!(!r.timed_out && !r.cancelled && !r.truncated);
}

#[tokio::test(flavor = "current_thread")]
async fn death_by_signal() {
    let r = sh("kill -9 $$").await;
    assert_eq!(r.exit_code, None);
    assert_eq!(r.signal, Some(9));
}

#[tokio::test(flavor = "current_thread")]
async fn timeout_kills_group() {
    let mut spec = ProcessSpec::new("echo started; sleep 100");
    spec.timeout = Some(Duration::from_secs(1));
    let t = Instant::now();
    let r = run_spec(spec).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(r.timed_out);
    assert!(!r.cancelled);
    assert_eq!(r.text, "started\n", "partial output kept");
    assert_eq!(r.signal, Some(15), "shell ended by SIGTERM");
    assert!(group_members(r.pgid).is_empty(), "group still alive");
    assert!(r.background_pids.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn timeout_kills_tree_of_grandchildren() {
    // 20 subshells each start a sleeping grandchild and print its pid.
    let cmd = "for i in $(seq 20); do bash -c 'sleep 100 & echo $!; wait' & done; wait";
    let mut spec = ProcessSpec::new(cmd);
    spec.timeout = Some(Duration::from_secs(2));
    let r = run_spec(spec).await;
    assert!(r.timed_out);
    let pids = pids_in(&r.text);
    assert_eq!(pids.len(), 20, "output: {}", r.text);
    // SIGKILL delivery is asynchronous; allow a moment before checking.
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| !is_dead(p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive: Vec<i32> = pids.into_iter().filter(|&p| !is_dead(p)).collect();
    assert!(alive.is_empty(), "still alive: {alive:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn term_ignoring_command_gets_sigkill() {
    let mut spec = ProcessSpec::new("trap '' TERM; echo $$; while :; do sleep 0.05; done");
    spec.timeout = Some(Duration::from_millis(500));
    let r = run_spec(spec).await;
    assert!(r.timed_out);
    assert_eq!(r.signal, Some(9), "shell ignoring TERM must be killed");
    assert!(group_members(r.pgid).is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn cancellation_mid_run() {
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c2.cancel();
    });
    let t = Instant::now();
    let r = tokio::time::timeout(
        HANG,
        run(ProcessSpec::new("echo before; sleep 100"), cancel, None),
    )
    .await
    .expect("hung")
    .expect("run");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(r.cancelled && !r.timed_out);
    assert_eq!(r.text, "before\n");
    assert!(group_members(r.pgid).is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn already_cancelled_token_stops_quickly() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = run(ProcessSpec::new("sleep 100"), cancel, None)
        .await
        .expect("run");
    assert!(r.cancelled);
}

#[tokio::test(flavor = "current_thread")]
async fn background_daemon_holding_pipe_does_not_block() {
    let mut spec = ProcessSpec::new("sleep 30 & echo $!; echo hi");
    spec.drain_window = Duration::from_millis(500);
    let t = Instant::now();
    let r = run_spec(spec).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(r.exit_code, Some(0));
    let pids = pids_in(&r.text);
    assert_eq!(pids.len(), 1);
    assert!(r.text.ends_with("hi\n"));
    assert_eq!(r.background_pids, pids, "result names the daemon");
    assert!(terminate_group(r.pgid, Duration::from_millis(200)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(is_dead(pids[0]));
}

#[tokio::test(flavor = "current_thread")]
async fn subshell_background_and_late_output_in_drain_window() {
    // The background job writes after the shell exits; the drain window collects it.
    let mut spec = ProcessSpec::new("(sleep 0.2; echo late; sleep 30) & echo early");
    spec.drain_window = Duration::from_millis(1500);
    let t = Instant::now();
    let r = run_spec(spec).await;
    assert!(t.elapsed() < Duration::from_secs(6));
    assert!(
        r.text.contains("early\n") && r.text.contains("late\n"),
        "{}",
        r.text
    );
    assert!(!r.background_pids.is_empty());
    assert!(terminate_group(r.pgid, Duration::from_millis(200)).await);
}

#[tokio::test(flavor = "current_thread")]
async fn stdin_is_dev_null() {
    let r = sh("cat; echo eof").await;
    assert_eq!(r.text, "eof\n");
}

#[tokio::test(flavor = "current_thread")]
async fn own_session_without_terminal() {
    let r = sh("cat /proc/$$/stat").await;
    let stat = r.text.trim();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let pid: i32 = stat.split_whitespace().next().unwrap().parse().unwrap();
    // fields after comm: state ppid pgrp session tty_nr
    assert_eq!(f[2].parse::<i32>().unwrap(), pid, "own process group");
    assert_eq!(f[3].parse::<i32>().unwrap(), pid, "own session");
    assert_eq!(f[4], "0", "no controlling terminal");
    assert_eq!(pid, r.pgid);
}

#[tokio::test(flavor = "current_thread")]
async fn non_interactive_env_and_overrides() {
    std::env::set_var("FEN_TEST_SECRET", "s3cret");
    let mut spec = ProcessSpec::new(
        "echo \"$GIT_EDITOR|$EDITOR|$VISUAL|$GIT_PAGER|$PAGER|$GIT_TERMINAL_PROMPT|$TERM|$FOO|${FEN_TEST_SECRET:-unset}\"",
    );
    spec.env = vec![("FOO".into(), "bar".into())];
    spec.env_remove = vec!["FEN_TEST_SECRET".into()];
    let r = run_spec(spec).await;
    assert_eq!(r.text, "true|true|true|cat|cat|0|dumb|bar|unset\n");
}

#[tokio::test(flavor = "current_thread")]
async fn stdout_and_stderr_interleave_in_order() {
    let r = sh("echo a; echo b >&2; echo c").await;
    assert_eq!(r.text, "a\nb\nc\n");
    let r = sh("for i in $(seq 200); do echo o$i; echo e$i >&2; done").await;
    let expected: String = (1..=200).map(|i| format!("o{i}\ne{i}\n")).collect();
    assert_eq!(r.text, expected);
}

#[tokio::test(flavor = "current_thread")]
async fn cwd_is_validated_and_used() {
    let dir = temp_dir("cwd");
    let mut spec = ProcessSpec::new("pwd");
    spec.cwd = Some(dir.join("missing"));
    let e = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(e, ProcessError::CwdMissing { .. }), "{e}");
    assert!(e.to_string().contains("does not exist"));

    std::fs::write(dir.join("file"), "x").unwrap();
    let mut spec = ProcessSpec::new("pwd");
    spec.cwd = Some(dir.join("file"));
    let e = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(e, ProcessError::CwdNotDirectory { .. }), "{e}");

    let mut spec = ProcessSpec::new("pwd");
    spec.cwd = Some(dir.clone());
    let r = run_spec(spec).await;
    assert_eq!(
        Path::new(r.text.trim()).canonicalize().unwrap(),
        dir.canonicalize().unwrap()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "current_thread")]
async fn missing_shell_is_a_clear_error() {
    let mut spec = ProcessSpec::new("true");
    spec.shell = Some(PathBuf::from("/nonexistent/bash"));
    let e = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(e, ProcessError::Spawn { .. }), "{e}");
}

#[tokio::test(flavor = "current_thread")]
async fn ansi_and_progress_cleanup() {
    let r = sh(r"printf 'a\r50%%\r100%%\n\033[31mred\033[0m\n'").await;
    assert_eq!(r.text, "100%\nred\n");
    assert_eq!(
        r.total_bytes, 24,
        "raw byte count is of the uncleaned output"
    );
}

/// Compares a file against the output of `cmd` written by the shell directly.
fn assert_same_as_direct(spill: &Path, cmd: &str, dir: &Path) {
    let direct = dir.join("direct.out");
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{{ {cmd}; }} > '{}'", direct.display()))
        .status()
        .unwrap();
    assert!(status.success());
    let (mut a, mut b) = (
        std::fs::File::open(spill).unwrap(),
        std::fs::File::open(&direct).unwrap(),
    );
    assert_eq!(
        a.metadata().unwrap().len(),
        b.metadata().unwrap().len(),
        "spill length"
    );
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = a.read(&mut ba).unwrap();
        let mut m = 0;
        while m < n {
            let k = b.read(&mut bb[m..n]).unwrap();
            assert!(k > 0);
            m += k;
        }
        assert_eq!(&ba[..n], &bb[..n], "spill content differs");
        if n == 0 {
            break;
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn huge_output_is_bounded_and_spilled_exactly() {
    let dir = temp_dir("huge");
    // Long lines with a few escapes and a redraw each (debug builds are slow per escape).
    let cmd = r"yes $'\e[32m'$(printf '%0300d' 0)$'\e[0m\rprogress' | head -c 200000000";
    let mut spec = ProcessSpec::new(cmd);
    spec.spill_dir = Some(dir.join("tool-output"));
    let r = run_spec(spec).await;
    assert_eq!(r.total_bytes, 200_000_000);
    assert!(r.truncated);
    assert!(
        r.text.len() < 64 * 1024 + 512,
        "kept text {} bytes",
        r.text.len()
    );
    assert!(!r.text.contains('\x1b'));
    assert!(
        r.text.starts_with("progress\nprogress\n"),
        "{}",
        &r.text[..40]
    );
    let spill = r.spill_path.clone().expect("spill path");
    assert!(spill.starts_with(dir.join("tool-output")));
    assert!(
        r.text.contains(&spill.display().to_string()),
        "marker names spill"
    );
    assert!(r.text.contains("omitted"));
    assert_same_as_direct(&spill, cmd, &dir);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "current_thread")]
async fn binary_output_gives_valid_text() {
    let dir = temp_dir("bin");
    let mut spec = ProcessSpec::new("head -c 3000000 /dev/urandom");
    spec.spill_dir = Some(dir.clone());
    spec.head_bytes = 1000;
    spec.tail_bytes = 1000;
    let r = run_spec(spec).await;
    assert!(r.truncated);
    assert_eq!(r.total_bytes, 3_000_000);
    let spill = r.spill_path.expect("spill");
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 3_000_000);
    // Lossy decoding can expand invalid bytes to U+FFFD; still bounded.
    assert!(r.text.len() < 4 * 2000 + 512);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "current_thread")]
async fn small_output_does_not_spill() {
    let dir = temp_dir("small");
    let mut spec = ProcessSpec::new("seq 1000");
    spec.spill_dir = Some(dir.join("out"));
    let r = run_spec(spec).await;
    assert!(!r.truncated && r.spill_path.is_none());
    assert!(
        !dir.join("out").exists(),
        "spill dir only created when needed"
    );
    assert_eq!(r.text.lines().count(), 1000);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "current_thread")]
async fn cut_on_line_boundaries_with_honest_marker() {
    let mut spec = ProcessSpec::new("seq 100000");
    spec.head_bytes = 1000;
    spec.tail_bytes = 1000;
    let r = run_spec(spec).await;
    assert!(r.truncated && r.spill_path.is_none());
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines[0], "1");
    assert_eq!(*lines.last().unwrap(), "100000");
    let marker = lines.iter().find(|l| l.contains("omitted")).unwrap();
    assert!(marker.contains("full output not saved"));
    // Every kept line is a whole number line: the cuts fell on line boundaries.
    let nums: Vec<u64> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(nums.len(), lines.len() - 1);
    let omitted_lines = 100000 - nums.len() as u64;
    assert!(
        marker.contains(&format!("({omitted_lines} lines)")),
        "{marker}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn live_output_callback_may_be_not_send() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let seen = Rc::new(RefCell::new(Vec::<String>::new()));
            let s2 = seen.clone();
            let mut cb = move |t: &str| s2.borrow_mut().push(t.to_string());
            let mut spec = ProcessSpec::new(
                r"for i in 1 2 3 4; do printf '\033[1m%s\033[0m\n' $i; sleep 0.2; done",
            );
            spec.live_interval = Duration::from_millis(50);
            let r = run(spec, CancellationToken::new(), Some(&mut cb))
                .await
                .expect("run");
            let chunks = seen.borrow();
            assert!(
                chunks.len() >= 2,
                "live chunks arrive over time: {chunks:?}"
            );
            assert_eq!(chunks.concat(), r.text);
            assert_eq!(r.text, "1\n2\n3\n4\n");
        })
        .await;
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_run_kills_group() {
    let dir = temp_dir("drop");
    let pidfile = dir.join("pid");
    let spec = ProcessSpec::new(format!("echo $$ > '{}'; sleep 100", pidfile.display()));
    let fut = run(spec, CancellationToken::new(), None);
    let _ = tokio::time::timeout(Duration::from_millis(500), fut).await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !group_members(pid).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(group_members(pid).is_empty());
    assert!(proc_stat(pid).is_none_or(|(s, _)| s == 'Z'));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "current_thread")]
async fn stdin_bytes_reach_the_command_whole_and_too_many_are_refused() {
    // 3 MiB: far more than a pipe buffer, so the writer and the output loop must interleave.
    let input: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    let mut spec = ProcessSpec::new("wc -c; head -c 5");
    spec.stdin = Some(input.into());
    let r = run_spec(spec).await;
    assert_eq!(r.exit_code, Some(0), "{}", r.text);
    assert_eq!(r.text.trim(), "3145728", "{}", r.text);
    // A command that reads nothing still ends, and the unread input is dropped.
    let mut spec = ProcessSpec::new("echo ignored");
    spec.stdin = Some(vec![b'x'; 2 * 1024 * 1024].into());
    let r = run_spec(spec).await;
    assert_eq!(r.text, "ignored\n");
    let mut spec = ProcessSpec::new("cat");
    spec.stdin = Some(vec![0u8; fen::native::process::MAX_STDIN + 1].into());
    match run(spec, CancellationToken::new(), None).await {
        Err(e @ ProcessError::StdinTooLarge { .. }) => {
            assert!(e.to_string().contains("8388608 bytes"), "{e}")
        }
        other => panic!("expected StdinTooLarge, got {:?}", other.map(|r| r.text)),
    }
}
