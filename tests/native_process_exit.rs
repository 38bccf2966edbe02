//! `terminate_all_groups` ends every group fen left behind. Own test binary: it kills every
//! registered group of the process, which would disturb tests running beside it.

use std::time::{Duration, Instant};

use fen::native::process::{is_dead, live_groups, run, terminate_all_groups, ProcessSpec};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "current_thread")]
async fn terminate_all_groups_kills_leftover_background_groups() {
    let mut pids = Vec::new();
    let mut pgids = Vec::new();
    // One leftover holds the pipe, the other redirected its output (pipe closed, still alive),
    // and one ignores SIGTERM so it needs the SIGKILL.
    for cmd in [
        "sleep 60 & echo $!",
        "sleep 60 > /dev/null 2>&1 & echo $!",
        "(trap '' TERM; sleep 60) > /dev/null 2>&1 & echo $!",
    ] {
        let mut spec = ProcessSpec::new(cmd);
        spec.drain_window = Duration::from_millis(200);
        let r = run(spec, CancellationToken::new(), None)
            .await
            .expect("run");
        assert_eq!(r.background_pids.len(), 1, "{cmd}: {:?}", r.background_pids);
        pids.push(r.text.trim().parse::<i32>().expect("pid"));
        pgids.push(r.pgid);
    }
    let live = tokio::task::spawn_blocking(live_groups).await.unwrap();
    for g in &pgids {
        assert!(live.contains(g), "group {g} registered while alive");
    }
    let t = Instant::now();
    tokio::task::spawn_blocking(terminate_all_groups)
        .await
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    for p in &pids {
        assert!(is_dead(*p), "pid {p} survived terminate_all_groups");
    }
    assert!(tokio::task::spawn_blocking(live_groups)
        .await
        .unwrap()
        .is_empty());
}
