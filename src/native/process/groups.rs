//! Registry of the process groups fen started, and helpers to inspect and end them.
//!
//! Every command runs as the leader of its own session and process group (pgid = the
//! shell's pid). A group stays registered while any member is alive, including background
//! processes that outlived the shell, so `terminate_all_groups` can end them when fen exits.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// How long a group gets between SIGTERM and SIGKILL when fen exits.
pub const EXIT_GRACE: Duration = Duration::from_millis(200);

fn with_live<R>(f: impl FnOnce(&mut BTreeSet<i32>) -> R) -> R {
    // A panic while holding this lock cannot leave the set inconsistent; keep going.
    let mut guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut guard)
}

pub(crate) fn register(pgid: i32) {
    with_live(|s| s.insert(pgid));
}

pub(crate) fn unregister(pgid: i32) {
    with_live(|s| s.remove(&pgid));
}

/// Forgets `pgid` if no live (non-zombie) process is left in it.
pub(crate) fn prune(pgid: i32) {
    if group_members(pgid).is_empty() {
        unregister(pgid);
    }
}

/// Process groups fen started that still have live members (empty ones are forgotten).
/// Scans /proc; call from a blocking context when many groups may be registered.
pub fn live_groups() -> Vec<i32> {
    let all: Vec<i32> = with_live(|s| s.iter().copied().collect());
    all.into_iter()
        .filter(|&g| {
            let alive = !group_members(g).is_empty();
            if !alive {
                unregister(g);
            }
            alive
        })
        .collect()
}

/// Ids of the live processes whose process group is `pgid` (zombies excluded), from /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| matches!(proc_stat(pid), Some((state, pg)) if pg == pgid && state != 'Z' && state != 'X'))
        .collect()
}

/// (state, pgrp) of a process from /proc/PID/stat, or None when it is gone.
pub fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` is gone or a zombie (dead for every practical purpose).
pub fn is_dead(pid: i32) -> bool {
    !matches!(proc_stat(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

pub(crate) fn signal_group(pgid: i32, sig: Signal) {
    // ESRCH (group already empty) is the expected way for this to "fail".
    let _ = killpg(Pid::from_raw(pgid), sig);
}

/// Ends one registered group: SIGTERM, then SIGKILL after `grace` if members remain.
/// Returns false when `pgid` is not a group fen started (nothing is signalled then).
pub async fn terminate_group(pgid: i32, grace: Duration) -> bool {
    if !with_live(|s| s.contains(&pgid)) {
        return false;
    }
    signal_group(pgid, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && !empty_blocking(pgid).await {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if !empty_blocking(pgid).await {
        signal_group(pgid, Signal::SIGKILL);
    }
    unregister(pgid);
    true
}

async fn empty_blocking(pgid: i32) -> bool {
    tokio::task::spawn_blocking(move || group_members(pgid).is_empty())
        .await
        .unwrap_or(false)
}

/// Ends every process group fen started that is still alive (see `terminate_groups`).
/// Meant for the binary's exit path, outside the async runtime.
pub fn terminate_all_groups() {
    let groups: Vec<i32> = with_live(std::mem::take).into_iter().collect();
    terminate_groups(&groups, EXIT_GRACE);
}

/// Ends `groups`: SIGTERM to all, SIGKILL to those with live members after `grace`, then a
/// short wait so callers can rely on them being gone. Blocking (up to the grace plus 0.5 s);
/// every registry of groups (commands, jobs, subagents, MCP servers) ends its own with it.
pub fn terminate_groups(groups: &[i32], grace: Duration) {
    let alive = |gs: &[i32]| -> Vec<i32> {
        gs.iter()
            .copied()
            .filter(|&g| !group_members(g).is_empty())
            .collect()
    };
    let mut left = alive(groups);
    if left.is_empty() {
        return;
    }
    for &g in &left {
        signal_group(g, Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        left = alive(&left);
    }
    for &g in &left {
        signal_group(g, Signal::SIGKILL);
    }
    // SIGKILL is not instant; wait briefly so callers can rely on the groups being gone.
    let deadline = Instant::now() + Duration::from_millis(500);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        left = alive(&left);
    }
}
