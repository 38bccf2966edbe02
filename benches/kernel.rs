//! Kernel benchmarks (own harness): cold start of `fen list tools --json` with every first-party
//! extension loaded, and `reload()` of all of them. Start-up is reported against `/bin/true`'s
//! start-up measured in the same run. Targets on a 2-core machine: start-up under 10 ms median,
//! reload under 20 ms.
//!
//! Run: `cargo bench --bench kernel`

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time_command(program: &str, args: &[&str], env_home: &std::path::Path, runs: usize) -> Duration {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let status = Command::new(program)
            .args(args)
            .env("HOME", env_home)
            .env("XDG_CONFIG_HOME", env_home.join("config"))
            .env("XDG_STATE_HOME", env_home.join("state"))
            .env_remove("FEN_EXTENSIONS_PATH")
            .env_remove("FEN_EXTENSION_ROOT")
            .current_dir(env_home)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run command");
        samples.push(start.elapsed());
        assert!(status.success(), "{program} {args:?} failed");
    }
    median(samples)
}

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let fen = env!("CARGO_BIN_EXE_fen");
    let runs = 60;
    // Warm the page cache for both binaries first.
    time_command(fen, &["list", "tools", "--json"], home.path(), 3);
    time_command("/bin/true", &[], home.path(), 3);

    let true_start = time_command("/bin/true", &[], home.path(), runs);
    let fen_start = time_command(fen, &["list", "tools", "--json"], home.path(), runs);
    println!(
        "startup: fen list tools --json median {:.2} ms; /bin/true {:.2} ms; ratio {:.1}x (target < 10 ms)",
        ms(fen_start),
        ms(true_start),
        fen_start.as_secs_f64() / true_start.as_secs_f64()
    );

    // `fen tool read` of a 2000-line file, cold process, against `fen --version` (the tool
    // should add little to start-up). Target: at most 2x.
    let file = home.path().join("two-thousand.txt");
    let body: String = (1..=2000)
        .map(|i| format!("line {i} of a file that is read by the benchmark\n"))
        .collect();
    std::fs::write(&file, body).expect("write file");
    let args = format!("{{\"path\": \"{}\"}}", file.display());
    let version = time_command(fen, &["--version"], home.path(), runs);
    let read = time_command(fen, &["tool", "read", &args], home.path(), runs);
    println!(
        "tool read: fen tool read (2000 lines) median {:.2} ms; fen --version {:.2} ms; ratio {:.2}x (target <= 2x)",
        ms(read),
        ms(version),
        read.as_secs_f64() / version.as_secs_f64()
    );

    let opts = fen::host::BootOptions {
        discovery: fen::kernel::loader::DiscoveryConfig {
            explicit: Vec::new(),
            overlay: None,
            cwd: home.path().to_path_buf(),
            extensions_path: Vec::new(),
            config_dir: home.path().join("config/fen"),
            embedded: true,
            project_trusted: false,
        },
        paths: fen::kernel::settings::Paths {
            config_dir: home.path().join("config/fen"),
            state_dir: home.path().join("state/fen"),
        },
    };
    let start = Instant::now();
    let kernel = fen::host::Kernel::boot(opts).expect("boot");
    let boot = start.elapsed();
    let loaded = kernel
        .extensions()
        .iter()
        .filter(|r| r.status == fen::kernel::Status::Loaded)
        .count();
    let mut samples = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let report = kernel.reload();
        samples.push(t.elapsed());
        assert!(report.errors.is_empty(), "{report:?}");
    }
    let reload = median(samples);
    println!(
        "reload: {loaded} first-party extensions, median {:.3} ms (in-process boot {:.3} ms); ratio to /bin/true start-up {:.2}x (target < 20 ms)",
        ms(reload),
        ms(boot),
        reload.as_secs_f64() / true_start.as_secs_f64()
    );
}
