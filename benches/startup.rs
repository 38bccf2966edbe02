//! Start-up cost of small runs, as whole-process CPU time (user + sys of fen and every child it
//! waited for, from `wait4`), medians of N runs:
//! - `fen --version`
//! - `fen list tools --json`
//! - `fen -p` with the mock provider making one `ls` call, no session (default permission mode)
//! - `fen -p` consuming 20,000 OpenAI chat deltas streamed from a server on 127.0.0.1
//!
//! plus the peak RSS of the one-`ls` session. Each is printed against `/bin/true` and against
//! the same run with `--no-tools`, measured in the same run. Targets (release, 2-core machine):
//! `--version` <= 2 ms, `list tools --json` <= 5 ms, the one-`ls` session <= 12 ms, 20,000
//! deltas <= 22 ms; peak RSS of the session <= 14 MB.
//!
//! Every run goes through a small relay (this binary re-executed) that starts the command and
//! writes its rusage: Linux counts the memory a child had before `exec` in its peak RSS, so the
//! command must be started from a fresh small process, not from this benchmark, whose fake
//! server holds the whole stream in memory. The relay's own start-up is not counted.
//!
//! Run: `cargo bench --bench startup` (FEN_BENCH_RUNS to change the number of runs,
//! FEN_BENCH_FEN to measure another fen binary, e.g. an older build). With
//! `FEN_BENCH_BASELINE=/path/to/other/fen` the same four runs of that binary are measured in the
//! same run, interleaved with the measured fen's, and each figure is also printed as a ratio
//! against the baseline's (CPU time and peak RSS).

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use fake_llm::{Api, FakeLlm, Reply, Scenario};
use std::path::Path;
use std::process::{Command, Stdio};

/// Set in the environment of the relay (see `relay_main`): the file it writes the rusage to.
const RELAY_ENV: &str = "FEN_STARTUP_BENCH_RUSAGE_FILE";

/// The relay: runs the command in its arguments, waits for it with `wait4` and writes
/// "cpu_microseconds peak_rss_kb status" to the file named by `RELAY_ENV`.
fn relay_main(file: &str) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let child = Command::new(&args[0])
        .args(&args[1..])
        .spawn()
        .expect("start the command");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 writes into the one we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    let cpu = us(usage.ru_utime) + us(usage.ru_stime);
    std::fs::write(file, format!("{cpu} {} {status}", usage.ru_maxrss)).expect("write rusage");
    std::process::exit(0);
}

/// One run's CPU time (ms) and peak RSS (MB).
#[derive(Clone, Copy)]
struct Sample {
    cpu_ms: f64,
    rss_mb: f64,
}

struct Bench {
    home: tempfile::TempDir,
    relay: std::path::PathBuf,
}

impl Bench {
    /// Runs `program args` once through the relay in the bench's home and working directory.
    fn once(&self, program: &str, args: &[&str], check: &dyn Fn(&[u8])) -> Sample {
        let home = self.home.path();
        let file = home.join("rusage");
        let out = Command::new(&self.relay)
            .arg(program)
            .args(args)
            .env(RELAY_ENV, &file)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env("OPENAI_API_KEY", "bench")
            .env_remove("FEN_EXTENSIONS_PATH")
            .env_remove("FEN_EXTENSION_ROOT")
            .env_remove("FEN_MOCK_SCRIPT")
            .current_dir(home.join("work"))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("run the relay");
        assert!(
            out.status.success(),
            "the relay failed for {program} {args:?}"
        );
        let text = std::fs::read_to_string(&file).expect("the relay's rusage file");
        let f: Vec<i64> = text
            .split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert_eq!(f[2], 0, "{program} {args:?} failed (wait status {})", f[2]);
        check(&out.stdout);
        Sample {
            cpu_ms: f[0] as f64 / 1000.0,
            rss_mb: f[1] as f64 / 1024.0,
        }
    }

    /// Median CPU time and the largest peak RSS of `runs` runs (after one warm-up run).
    fn median(&self, runs: usize, program: &str, args: &[&str], check: &dyn Fn(&[u8])) -> Sample {
        self.medians(runs, &[program], args, check)[0]
    }

    /// [`Bench::median`] of several programs with the same arguments, their runs interleaved
    /// (one of each in turn) so that a change in the machine's load hits them alike.
    fn medians(
        &self,
        runs: usize,
        programs: &[&str],
        args: &[&str],
        check: &dyn Fn(&[u8]),
    ) -> Vec<Sample> {
        for program in programs {
            self.once(program, args, check);
        }
        let mut all: Vec<Vec<Sample>> = vec![Vec::with_capacity(runs); programs.len()];
        for _ in 0..runs {
            for (program, v) in programs.iter().zip(all.iter_mut()) {
                v.push(self.once(program, args, check));
            }
        }
        all.into_iter()
            .map(|mut v| {
                let rss_mb = v.iter().map(|s| s.rss_mb).fold(0.0, f64::max);
                v.sort_by(|a, b| a.cpu_ms.total_cmp(&b.cpu_ms));
                Sample {
                    cpu_ms: v[v.len() / 2].cpu_ms,
                    rss_mb,
                }
            })
            .collect()
    }
}

fn main() {
    if let Ok(file) = std::env::var(RELAY_ENV) {
        relay_main(&file);
    }
    let runs: usize = std::env::var("FEN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    let fen_owned = std::env::var("FEN_BENCH_FEN").ok();
    let fen = fen_owned.as_deref().unwrap_or(env!("CARGO_BIN_EXE_fen"));
    let deltas = 20_000;
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Deltas {
                api: Api::OpenAiChat,
                count: deltas,
            })
            .repeating(),
    );
    let url = server.base_url();
    let bench = Bench {
        home: tempfile::tempdir().expect("temp dir"),
        relay: std::env::current_exe().expect("this benchmark's path"),
    };
    let home = bench.home.path();
    std::fs::create_dir_all(home.join("work/src")).expect("work dir");
    for f in ["README.md", "Cargo.toml", "src/main.rs"] {
        std::fs::write(home.join("work").join(f), "x\n").expect("a file");
    }
    let script = home.join("one-ls.json");
    std::fs::write(
        &script,
        r#"[{"tool_calls": [{"name": "ls", "arguments": {}}]}, {"text": "done"}]"#,
    )
    .expect("mock script");
    let script = script.to_string_lossy().into_owned();

    let any = |_: &[u8]| {};
    let done = |out: &[u8]| assert_eq!(out, b"done\n", "the one-ls session's answer");
    let streamed = move |out: &[u8]| assert_eq!(out.len(), deltas + 1, "streamed bytes");
    type Check<'a> = &'a dyn Fn(&[u8]);
    let cases: Vec<(&str, Vec<&str>, Check, &str)> = vec![
        ("fen --version", vec!["--version"], &any, "2 ms"),
        (
            "fen list tools --json",
            vec!["list", "tools", "--json"],
            &any,
            "5 ms",
        ),
        (
            "fen -p, mock provider, one ls call, no session",
            vec![
                "-p",
                "list the files",
                "--mock-script",
                &script,
                "--no-session",
            ],
            &done,
            "12 ms",
        ),
        (
            "fen -p, 20,000 streamed deltas from 127.0.0.1",
            vec![
                "-p",
                "stream please",
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                &url,
                "--no-session",
            ],
            &streamed,
            "22 ms",
        ),
    ];

    let base = bench.median(runs, "/bin/true", &[], &any);
    println!(
        "startup: {fen}\nstartup: CPU time (user+sys, wait4), medians of {runs} runs; /bin/true {:.2} ms",
        base.cpu_ms
    );
    let baseline = std::env::var("FEN_BENCH_BASELINE").ok();
    if let Some(b) = &baseline {
        println!("startup: baseline {b} (runs interleaved with the measured fen)");
    }
    let mut session_rss = None;
    for (name, args, check, target) in &cases {
        let mut programs = vec![fen];
        programs.extend(baseline.as_deref());
        let measured = bench.medians(runs, &programs, args, *check);
        let s = measured[0];
        let mut no_tools: Vec<&str> = vec!["--no-tools"];
        no_tools.extend(args.iter());
        let n = if accepts(fen, &no_tools, home) {
            Some(bench.median(runs, fen, &no_tools, &any))
        } else {
            None
        };
        let vs_no_tools = n.map_or("n/a".to_string(), |n| {
            format!(
                "{:.2}x of --no-tools ({:.2} ms)",
                s.cpu_ms / n.cpu_ms,
                n.cpu_ms
            )
        });
        println!(
            "startup: {name}: {:.2} ms (target <= {target}), {:.1}x /bin/true, {vs_no_tools}; peak RSS {:.1} MB",
            s.cpu_ms,
            s.cpu_ms / base.cpu_ms,
            s.rss_mb
        );
        if let Some(b) = measured.get(1) {
            println!(
                "startup: {name}: {:.2}x of the baseline's {:.2} ms; peak RSS {:.2}x of its {:.1} MB",
                s.cpu_ms / b.cpu_ms,
                b.cpu_ms,
                s.rss_mb / b.rss_mb,
                b.rss_mb
            );
        }
        if name.contains("one ls") {
            session_rss = Some((s, measured.get(1).copied()));
        }
    }
    if let Some((s, b)) = session_rss {
        let vs = b.map_or(String::new(), |b| {
            format!(
                ", {:.2}x of the baseline's {:.1} MB",
                s.rss_mb / b.rss_mb,
                b.rss_mb
            )
        });
        println!(
            "startup: peak RSS of the one-ls session {:.1} MB (target <= 14 MB){vs}",
            s.rss_mb
        );
    }
}

/// Whether `fen` accepts these arguments (clap rejects `--no-tools` where it does not apply).
fn accepts(fen: &str, args: &[&str], home: &Path) -> bool {
    Command::new(fen)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("OPENAI_API_KEY", "bench")
        .current_dir(home.join("work"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
