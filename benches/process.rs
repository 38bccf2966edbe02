//! Process supervisor benchmarks, as ratios against baselines measured in the same run.
//!
//! 1. Throughput: 1 GiB through the supervisor vs. the same command redirected to /dev/null.
//! 2. Peak RSS (VmHWM) of this process after pushing the output through.
//! 3. Timeout overshoot: how long after the deadline a 50-process group is dead and `run`
//!    has returned.

use std::time::{Duration, Instant};

use fen::native::process::{group_members, run, ProcessResult, ProcessSpec};
use tokio_util::sync::CancellationToken;

const PRODUCER: &str = r"head -c 1G /dev/zero | tr '\0' a";
const ROUNDS: usize = 2;

fn vm_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU seconds used by this process so far (clock ticks of /proc/self/stat).
fn self_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(i) = stat.rfind(')') else { return 0.0 };
    let f: Vec<&str> = stat[i + 2..].split_whitespace().collect();
    // Fields after comm: state(0) ... utime(11) stime(12), in USER_HZ (100 on Linux).
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&k| f.get(k)?.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

fn baseline(suffix: &str) -> Duration {
    let t = Instant::now();
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{PRODUCER} {suffix}"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "baseline command failed");
    t.elapsed()
}

async fn supervised(spec: ProcessSpec) -> (Duration, ProcessResult) {
    let t = Instant::now();
    let r = match run(spec, CancellationToken::new(), None).await {
        Ok(r) => r,
        Err(e) => panic!("run failed: {e}"),
    };
    (t.elapsed(), r)
}

fn min(ds: &[Duration]) -> Duration {
    ds.iter().copied().min().unwrap_or_default()
}

async fn throughput() {
    let hwm_start = vm_kib("VmHWM:");
    let mut base = Vec::new();
    let mut cat = Vec::new();
    let mut sup = Vec::new();
    let mut cpu = f64::MAX;
    let mut sup_spill = Vec::new();
    let spill_dir = std::env::temp_dir().join(format!("fen-process-bench-{}", std::process::id()));
    for _ in 0..ROUNDS {
        base.push(baseline("> /dev/null"));
        cat.push(baseline("| cat > /dev/null"));
        let c0 = self_cpu_secs();
        let (d, r) = supervised(ProcessSpec::new(PRODUCER)).await;
        cpu = cpu.min(self_cpu_secs() - c0);
        assert_eq!(r.total_bytes, 1 << 30);
        sup.push(d);
        let mut spec = ProcessSpec::new(PRODUCER);
        spec.spill_dir = Some(spill_dir.clone());
        let (d, r) = supervised(spec).await;
        sup_spill.push(d);
        if let Some(p) = r.spill_path {
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            assert_eq!(len, 1 << 30, "spill file incomplete");
            let _ = std::fs::remove_file(p);
        }
    }
    let _ = std::fs::remove_dir_all(&spill_dir);
    let (b, c, s, ss) = (min(&base), min(&cat), min(&sup), min(&sup_spill));
    let gib = |d: Duration| 1.0 / d.as_secs_f64();
    println!("throughput, 1 GiB `{PRODUCER}` (best of {ROUNDS}):");
    println!(
        "  baseline sh -c '... > /dev/null' : {:>8.3} s  ({:.2} GiB/s)",
        b.as_secs_f64(),
        gib(b)
    );
    println!(
        "  baseline sh -c '... | cat > /dev/null': {:>8.3} s  ({:.2} GiB/s)  ratio {:.2}x",
        c.as_secs_f64(),
        gib(c),
        c.as_secs_f64() / b.as_secs_f64()
    );
    println!(
        "  supervisor, no spill             : {:>8.3} s  ({:.2} GiB/s)  ratio {:.2}x (target <= 1.3x)",
        s.as_secs_f64(),
        gib(s),
        s.as_secs_f64() / b.as_secs_f64()
    );
    println!(
        "  supervisor vs `| cat` baseline    : ratio {:.2}x; supervisor CPU {:.2} s per GiB (user+sys)",
        s.as_secs_f64() / c.as_secs_f64(),
        cpu
    );
    println!(
        "  supervisor, spill 1 GiB to {}: {:>8.3} s  ({:.2} GiB/s)  ratio {:.2}x",
        std::env::temp_dir().display(),
        ss.as_secs_f64(),
        gib(ss),
        ss.as_secs_f64() / b.as_secs_f64()
    );
    let hwm = vm_kib("VmHWM:");
    println!(
        "  peak RSS (VmHWM) of bench process: {:.1} MiB (was {:.1} MiB before; target < 32 MiB)",
        hwm as f64 / 1024.0,
        hwm_start as f64 / 1024.0
    );
}

async fn timeout_overshoot() {
    let deadline = Duration::from_millis(1000);
    let mut worst = Duration::ZERO;
    let mut all = Vec::new();
    for round in 0..3 {
        // Half the sleepers ignore SIGTERM in the last round, so the SIGKILL path is measured.
        let cmd = if round == 2 {
            "for i in $(seq 25); do sleep 100 & done; for i in $(seq 25); do (trap '' TERM; sleep 100) & done; wait"
        } else {
            "for i in $(seq 50); do sleep 100 & done; wait"
        };
        let mut spec = ProcessSpec::new(cmd);
        spec.timeout = Some(deadline);
        let (d, r) = supervised(spec).await;
        assert!(r.timed_out);
        assert!(
            group_members(r.pgid).is_empty(),
            "group survived the timeout"
        );
        let over = d.saturating_sub(deadline);
        all.push(over);
        worst = worst.max(over);
    }
    println!("timeout kill of a 50-process group (deadline 1 s, group dead on return):");
    for (i, o) in all.iter().enumerate() {
        let kind = if i == 2 {
            "25 ignore SIGTERM -> SIGKILL after 200 ms grace"
        } else {
            "all die on SIGTERM"
        };
        println!(
            "  round {i}: overshoot {:>6.1} ms  ({kind})",
            o.as_secs_f64() * 1e3
        );
    }
    println!(
        "  worst overshoot {:.1} ms (target <= 300 ms)",
        worst.as_secs_f64() * 1e3
    );
}

fn main() {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        throughput().await;
        timeout_overshoot().await;
    });
}
