//! Sandbox cost per shell command, against the same command unsandboxed in the same run.
//!
//! `true` through `process::run` unsandboxed, under bubblewrap and under Landlock (each when
//! the machine has it), in a small git workspace; the added median wall time per command is
//! printed with its target (bubblewrap <= 5 ms, Landlock <= 1 ms). Also the preparation step
//! alone (root walk / ruleset build), and the git walk over this repository as a large
//! workspace.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fen::native::process::{run, ProcessSpec};
use fen::native::sandbox::{
    self, detect, git, landlock_abi, launcher, PolicyInputs, Sandbox, SandboxPolicy, Tier,
};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn time_one(ws: &Path, sb: Option<Sandbox>) -> Duration {
    let mut s = ProcessSpec::new("true");
    s.cwd = Some(ws.to_path_buf());
    s.drain_window = Duration::ZERO;
    s.sandbox = sb;
    let t = Instant::now();
    match run(s, CancellationToken::new(), None).await {
        Ok(r) if r.exit_code == Some(0) => {}
        Ok(r) => panic!("command failed: {}", r.text),
        Err(e) => panic!("run failed: {e}"),
    }
    t.elapsed()
}

/// Median of `ROUNDS` runs, interleaved with as many unsandboxed runs whose median is
/// returned too: on a busy machine both see the same load.
/// Medians of `ROUNDS` sandboxed runs and of as many unsandboxed runs interleaved with them
/// (on a busy machine both see the same load), and the median of the paired differences.
async fn time_runs(ws: &Path, sb: Option<Sandbox>) -> (Duration, Duration, f64) {
    let (mut base, mut v) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    let mut diffs = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let b = time_one(ws, None).await;
        let t = time_one(ws, sb.clone()).await;
        diffs.push(ms(t) - ms(b));
        base.push(b);
        v.push(t);
    }
    diffs.sort_by(f64::total_cmp);
    let paired = diffs.get(diffs.len() / 2).copied().unwrap_or_default();
    (median(base), median(v), paired)
}

fn workspace() -> PathBuf {
    let ws = std::env::temp_dir().join(format!("fen-sandbox-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&ws);
    std::fs::create_dir_all(ws.join("src")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git init failed");
    for i in 0..50 {
        let _ = std::fs::write(ws.join(format!("src/f{i}.rs")), "fn main() {}\n");
    }
    std::fs::canonicalize(&ws).unwrap_or(ws)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let ws = workspace();
    launcher::set_program(PathBuf::from(env!("CARGO_BIN_EXE_fen")));
    // The bench's workspace is under /tmp; keep /tmp a root as in real use.
    let policy = Arc::new(SandboxPolicy::build(&PolicyInputs {
        workspace: ws.clone(),
        home: std::env::var_os("HOME").map(PathBuf::from),
        ..Default::default()
    }));
    let sb = |tier| Sandbox {
        policy: policy.clone(),
        tier,
        required: true,
    };
    println!("sandbox: {}", detect().description());
    rt.block_on(async {
        // Warm up page cache and the tier probe.
        time_runs(&ws, None).await;
        let (base, _, _) = time_runs(&ws, None).await;
        println!("unsandboxed `true`: {:.2} ms median", ms(base));
        let mut tiers = Vec::new();
        if detect().tier == Tier::Bubblewrap {
            tiers.push((Tier::Bubblewrap, false, 5.0));
            tiers.push((Tier::Bubblewrap, true, 5.0));
        } else {
            println!("bubblewrap unavailable: skipped");
        }
        if landlock_abi() >= 1 {
            // Direct spawn (no launcher program) and the persistent launcher (fen's default:
            // its keepers end background children).
            tiers.push((Tier::Landlock, false, 1.0));
            tiers.push((Tier::Landlock, true, 1.0));
        } else {
            println!("Landlock unavailable: skipped");
        }
        for (tier, persistent, target) in tiers {
            launcher::set_enabled(persistent);
            let label = match (tier, persistent) {
                (Tier::Bubblewrap, false) => "bwrap, one per command",
                (Tier::Bubblewrap, true) => "bwrap, persistent",
                (_, false) => "landlock, direct spawn",
                _ => "landlock, persistent",
            };
            if persistent {
                // The first command starts the sandbox's launcher; later ones reuse it.
                let t = Instant::now();
                let _ = time_one(&ws, Some(sb(tier))).await;
                println!("{label}: first command (starts the launcher) {:.2} ms", ms(t.elapsed()));
            }
            let (base, t, paired) = time_runs(&ws, Some(sb(tier))).await;
            let added = ms(t) - ms(base);
            let prep = {
                let mut v = Vec::new();
                for _ in 0..ROUNDS {
                    let t = Instant::now();
                    let _ = sandbox::prepare(&sb(tier), Some(&ws));
                    v.push(t.elapsed());
                }
                median(v)
            };
            println!(
                "{label:<22} `true`: {:.2} ms median, added {:.2} ms per command (median of paired differences {:.2} ms; target <= {target} ms, {}), of which preparation {:.2} ms; ratio {:.2}x",
                ms(t),
                added,
                paired,
                if added.max(paired) <= target { "met" } else { "MISSED" },
                ms(prep),
                t.as_secs_f64() / base.as_secs_f64().max(1e-9),
            );
        }
    });
    // The git walk over a real repository (this one, with its target dir skipped).
    let here = std::env::current_dir().unwrap_or_default();
    let mut v = Vec::new();
    let mut g = git::GitProtections::default();
    for _ in 0..20 {
        let t = Instant::now();
        g = git::find(std::slice::from_ref(&here), git::WalkLimits::default());
        v.push(t.elapsed());
    }
    println!(
        "git walk over {}: {:.2} ms median, {} paths protected, truncated {}",
        here.display(),
        ms(median(v)),
        g.paths.len(),
        g.truncated
    );
    let _ = std::fs::remove_dir_all(&ws);
}
