//! A differential oracle for the permission analyser: every command the analyser lets run
//! without a question in `default` mode with no rules (fen's corpora plus thousands of generated
//! variants, see `policy_oracle/gen.rs`) is run for real, in a bubblewrap jail under `strace -f`
//! (see `policy_oracle/jail.rs`), and fails the oracle when it wrote, created, deleted or renamed
//! a file, started a program the analyser did not name, opened a network socket or read one of
//! the fake secrets. The test fails on any violation; `ORACLE_WRITE_FINDINGS=1` also writes them
//! to tests/data/policy/oracle_findings.txt.
//!
//! Without bubblewrap or strace the analyser still judges every candidate (no panic, counts
//! printed) and the running part is skipped with a notice.
//!
//! Knobs: `ORACLE_RANDOM` (compositions, default 1000), `ORACLE_BUDGET_SECS` (total cap on
//! running, default 400), `ORACLE_JOBS` (parallel jails, default: the cores, at most 4),
//! `ORACLE_NO_JAIL` (judge only, run nothing).

#[path = "policy_oracle/gen.rs"]
mod gen;
#[path = "policy_oracle/jail.rs"]
mod jail;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fen::native::policy::{decide, Decision, Mode, Request, Risk, RuleSet, Verdict, Workspace};
use gen::Cand;
use jail::{Event, EventKind, Jail};
use serde_json::json;

const SEED: u64 = 0x0f3a_c1e5;
const PER_COMMAND: Duration = Duration::from_secs(5);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn corpus() -> Vec<Cand> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy");
    let mut out = Vec::new();
    for name in [
        "safe_readonly.txt",
        "safe_other.txt",
        "dangerous.txt",
        "floors.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect("corpus file");
        for l in text.lines() {
            if l.trim().is_empty() || l.starts_with('#') {
                continue;
            }
            out.push(Cand {
                cmd: l.replace("<NL>", "\n"),
                class: "corpus".into(),
                origin: format!("corpus:{name}"),
            });
        }
    }
    out
}

fn workspace(j: &Jail) -> Workspace {
    Workspace::new(&j.proj, &[], &j.home, &j.home.join(".config"))
}

fn judge(ws: &Workspace, rules: &RuleSet, cmd: &str) -> Decision {
    decide(&Request {
        tool: "bash",
        risk: Risk::Shell,
        args: &json!({ "command": cmd }),
        mode: Mode::Default,
        rules,
        workspace: ws,
        sandbox_available: false,
    })
}

fn base(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The programs a decision named: each segment's program, its wrappers, the containers it was
/// reached through (`bash -c`, `xargs`, `find -exec`), the helpers those programs start on their
/// own, and the shell that runs the command line.
fn named(d: &Decision) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = ["bash".to_string()].into();
    for s in &d.segments {
        let mut add = |n: &str| {
            let n = base(n).to_string();
            for h in jail::helpers(&n) {
                names.insert((*h).to_string());
            }
            names.insert(n);
        };
        add(s.name());
        for w in &s.wrappers {
            add(w);
        }
        for v in &s.via {
            add(v.split_whitespace().next().unwrap_or(""));
        }
    }
    names
}

/// What a run did that an allowed command must not do.
fn violations(events: &[Event], names: &BTreeSet<String>) -> Vec<Event> {
    events
        .iter()
        .filter(|e| match e.kind {
            EventKind::Exec => !names.contains(base(&e.detail)),
            _ => true,
        })
        .cloned()
        .collect()
}

struct Finding {
    cand: Cand,
    seen: Vec<Event>,
    segments: String,
    timed_out: bool,
}

fn describe_segments(d: &Decision) -> String {
    d.segments
        .iter()
        .map(|s| {
            let mut t = format!("{:?}", s.argv);
            if !s.wrappers.is_empty() {
                t.push_str(&format!(" wrappers={:?}", s.wrappers));
            }
            if !s.via.is_empty() {
                t.push_str(&format!(" via={:?}", s.via));
            }
            t
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The class a candidate is counted under: the riskiest thing done to it.
fn class_name(class: &str) -> &'static str {
    for (key, name) in [
        ("fen-files", "fen's own files"),
        ("construct", "unknown constructs"),
        ("option", "code-running options"),
        ("redirect", "redirects"),
        ("lossy", "lossy decoding"),
        ("secret", "secret reads"),
        ("wrapper", "wrappers"),
        ("list", "lists and substitutions"),
        ("corpus", "fen's corpora"),
    ] {
        if class.split('+').any(|x| x == key) {
            return name;
        }
    }
    "other"
}

/// The class a finding is reported under, for the lead: what was done to the command when a
/// program ran unseen, else what it did when that names the class (a secret read, a write to
/// fen's files), else what was done to the command.
fn class_of(f: &Finding) -> &'static str {
    // A program the analyser did not see ran: what hid it is the class.
    if f.seen.iter().any(|e| e.kind == EventKind::Exec) {
        for (key, name) in [
            ("construct", "unknown constructs"),
            ("lossy", "lossy decoding"),
            ("option", "code-running options"),
        ] {
            if f.cand.class.split('+').any(|x| x == key) {
                return name;
            }
        }
        return class_name(&f.cand.class);
    }
    if f.seen.iter().any(|e| e.kind == EventKind::SecretRead) {
        return "secret reads";
    }
    if f.seen.iter().any(|e| {
        e.kind == EventKind::Write
            && (e.detail.contains(".fen/")
                || e.detail.contains("/.config/fen/")
                || e.detail.contains("settings.local.json"))
    }) {
        return "fen's own files";
    }
    class_name(&f.cand.class)
}

fn one_line(s: &str) -> String {
    s.replace('\n', "<NL>")
}

/// A trace line without what changes between runs (addresses).
fn stable(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i + 2]);
        let hex = rest[i + 2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len() - i - 2);
        if hex > 0 {
            out.push('…');
        }
        rest = &rest[i + 2 + hex..];
    }
    out.push_str(rest);
    one_line(&out)
}

fn report(f: &Finding) -> String {
    let mut out = format!(
        "  {}\n    from: {} ({})\n    segments: {}\n",
        one_line(&f.cand.cmd),
        f.cand.origin,
        f.cand.class,
        f.segments
    );
    let mut shown = BTreeSet::new();
    for e in &f.seen {
        let key = (format!("{:?}", e.kind), e.detail.clone());
        if shown.insert(key) && shown.len() <= 4 {
            out.push_str(&format!("    seen: {:?} {}\n", e.kind, stable(&e.line)));
        }
    }
    if f.timed_out {
        out.push_str("    (timed out)\n");
    }
    out
}

#[derive(Default)]
struct Tally {
    candidates: usize,
    allowed: usize,
    run: usize,
    timed_out: Vec<String>,
    over_budget: usize,
    setup_errors: Vec<String>,
    findings: Vec<Finding>,
    allowed_by_class: BTreeMap<&'static str, usize>,
}

#[test]
fn every_command_the_analyser_allows_does_only_what_it_named() {
    let mut cands = corpus();
    let corpus_len = cands.len();
    let generated = gen::generate(SEED, env_usize("ORACLE_RANDOM", 1000));
    let generated_len = generated.len();
    cands.extend(generated);
    assert!(generated_len >= 2000, "only {generated_len} generated");

    let skip = match std::env::var_os("ORACLE_NO_JAIL") {
        Some(_) => Some("ORACLE_NO_JAIL is set".to_string()),
        None => jail::unavailable(),
    };
    if let Some(why) = &skip {
        eprintln!("notice: {why}; the analyser judges every candidate but none is run");
    }
    let jobs = env_usize(
        "ORACLE_JOBS",
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4)),
    )
    .max(1);
    let budget = Duration::from_secs(env_usize("ORACLE_BUDGET_SECS", 400) as u64);
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally {
        candidates: cands.len(),
        ..Tally::default()
    });
    std::thread::scope(|s| {
        for w in 0..jobs {
            let (cands, next, tally, skip) = (&cands, &next, &tally, &skip);
            s.spawn(move || {
                let jail = Jail::new();
                let ws = workspace(&jail);
                let rules = RuleSet::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = cands.get(i) else { break };
                    let d = judge(&ws, &rules, &c.cmd);
                    if d.verdict != Verdict::Allow {
                        continue;
                    }
                    {
                        let mut t = tally.lock().expect("tally");
                        t.allowed += 1;
                        *t.allowed_by_class.entry(class_name(&c.class)).or_default() += 1;
                        if skip.is_some() {
                            continue;
                        }
                        if started.elapsed() > budget {
                            t.over_budget += 1;
                            continue;
                        }
                    }
                    let r = jail.run(i * 8 + w, &c.cmd, PER_COMMAND);
                    let seen = violations(&r.events, &named(&d));
                    let mut t = tally.lock().expect("tally");
                    t.run += 1;
                    if r.timed_out {
                        t.timed_out.push(one_line(&c.cmd));
                    }
                    if let Some(e) = r.setup_error {
                        t.setup_errors.push(format!("{}: {e}", one_line(&c.cmd)));
                    }
                    if !seen.is_empty() {
                        // The jail's root is a random temporary path: `$ROOT` in the record.
                        let root = jail.root.to_string_lossy().into_owned();
                        let seen = seen
                            .into_iter()
                            .map(|mut e| {
                                e.line = e.line.replace(&root, "$ROOT");
                                e.detail = e.detail.replace(&root, "$ROOT");
                                e
                            })
                            .collect();
                        t.findings.push(Finding {
                            cand: c.clone(),
                            seen,
                            segments: describe_segments(&d).replace(&root, "$ROOT"),
                            timed_out: r.timed_out,
                        });
                    }
                }
            });
        }
    });
    let mut t = tally.into_inner().expect("tally");
    t.findings
        .sort_by_key(|f| (class_of(f), f.cand.cmd.clone()));
    let mut by_class: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in &t.findings {
        by_class.entry(class_of(f)).or_default().push(f);
    }
    let mut summary = format!(
        "policy oracle: {} candidates ({corpus_len} from fen's corpora, {generated_len} generated, \
         seed {SEED:#x}), {} allowed, {} run in {:.1} s with {jobs} jails ({} timed out, {} over \
         the budget), {} violations\n",
        t.candidates,
        t.allowed,
        t.run,
        started.elapsed().as_secs_f64(),
        t.timed_out.len(),
        t.over_budget,
        t.findings.len()
    );
    summary.push_str(&format!("allowed by class: {:?}\n", t.allowed_by_class));
    for c in &t.timed_out {
        summary.push_str(&format!("timed out: {c}\n"));
    }
    for (class, fs) in &by_class {
        summary.push_str(&format!("violations, {class}: {}\n", fs.len()));
    }
    let mut details = String::new();
    for (class, fs) in &by_class {
        details.push_str(&format!("\n== {class} ({})\n", fs.len()));
        for f in fs {
            details.push_str(&report(f));
        }
    }
    eprintln!("{summary}{details}");
    if std::env::var_os("ORACLE_WRITE_FINDINGS").is_some() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy/oracle_findings.txt");
        let header = "# Violations the policy oracle (tests/policy_oracle.rs) found: commands the analyser\n\
             # allowed in default mode with no rules that, run in a jail under strace, wrote a file,\n\
             # started a program the analyser did not name, opened a network socket or read a fake\n\
             # secret. A record of what was seen, not an allow-list: the test fails on every one.\n\
             # Regenerate with: ORACLE_WRITE_FINDINGS=1 cargo test --test policy_oracle\n#\n";
        let body = format!("{summary}{details}")
            .lines()
            .map(|l| format!("# {l}").trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, format!("{header}{body}\n")).expect("write findings");
    }
    assert!(
        t.setup_errors.is_empty(),
        "{} runs could not start:\n{}",
        t.setup_errors.len(),
        t.setup_errors.join("\n")
    );
    assert!(
        t.findings.is_empty(),
        "{} allowed commands did what the analyser did not name (details above):\n{summary}",
        t.findings.len()
    );
}

#[test]
fn generation_is_deterministic_and_large() {
    let a = gen::generate(SEED, 300);
    let b = gen::generate(SEED, 300);
    assert!(a.len() >= 2000, "{}", a.len());
    assert!(a.iter().zip(&b).all(|(x, y)| x.cmd == y.cmd));
    let c = gen::generate(SEED + 1, 300);
    assert!(a.iter().zip(&c).any(|(x, y)| x.cmd != y.cmd));
    // Quoting decodes back to the words (bash is the judge).
    if jail::unavailable().is_none() {
        for style in gen::STYLES {
            let w = "a b'c\"d$e`f\\g\nh~i";
            let out = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", gen::quote(w, *style))])
                .output()
                .expect("bash");
            assert_eq!(String::from_utf8_lossy(&out.stdout), w, "{style:?}");
        }
    }
}

/// The oracle catches what it must: a write, an unnamed program, a socket, a secret read; and
/// is quiet on commands that only read.
#[test]
fn the_jail_flags_what_a_wrongly_allowed_command_does() {
    if let Some(why) = jail::unavailable() {
        eprintln!("notice: {why}; skipping the jail self-test");
        return;
    }
    let j = Jail::new();
    let names = |v: &[&str]| -> BTreeSet<String> { v.iter().map(|s| s.to_string()).collect() };
    let run = |cmd: &str, allowed: &[&str]| {
        let r = j.run(0, cmd, PER_COMMAND);
        assert!(r.setup_error.is_none(), "{cmd}: {:?}", r.setup_error);
        violations(&r.events, &names(allowed))
    };
    let kinds = |v: &[Event]| -> BTreeSet<String> {
        v.iter()
            .map(|e| format!("{:?} {}", e.kind, e.detail))
            .collect()
    };

    // Through the whole pipeline: yolo mode allows `touch x` (wrongly, for this oracle's
    // purpose); the segments name `touch`, so only the write is flagged.
    let d = decide(&Request {
        tool: "bash",
        risk: Risk::Shell,
        args: &json!({ "command": "touch x" }),
        mode: Mode::Yolo,
        rules: &RuleSet::new(),
        workspace: &workspace(&j),
        sandbox_available: false,
    });
    assert_eq!(d.verdict, Verdict::Allow);
    let r = j.run(0, "touch x", PER_COMMAND);
    let v = violations(&r.events, &named(&d));
    assert!(
        v.iter().all(|e| e.kind == EventKind::Write)
            && v.iter()
                .any(|e| e.detail.ends_with("/x") || e.detail == "x"),
        "{:?}",
        kinds(&v)
    );
    let v = run("ls >/dev/null; ./payload.sh", &["bash", "ls"]);
    assert!(
        v.iter()
            .any(|e| e.kind == EventKind::Exec && e.detail.ends_with("payload.sh")),
        "{:?}",
        kinds(&v)
    );
    assert!(v
        .iter()
        .any(|e| e.kind == EventKind::Write && e.detail.ends_with("payload_ran")));
    let v = run(
        "rm README.md; mkdir d; mv src s2",
        &["bash", "rm", "mkdir", "mv"],
    );
    assert!(v.len() >= 3, "{:?}", kinds(&v));
    // Metadata only: a time stamp, a mode.
    let v = run(
        "touch -c -d @0 README.md; chmod 600 src/main.rs",
        &["bash", "touch", "chmod"],
    );
    assert!(v.len() >= 2, "{:?}", kinds(&v));
    let v = run("echo x > ~/.bashrc", &["bash"]);
    assert!(
        v.iter().any(|e| e.detail.ends_with(".bashrc")),
        "{:?}",
        kinds(&v)
    );
    let v = run("curl -s http://127.0.0.1:9/", &["bash", "curl"]);
    assert!(
        v.iter().any(|e| e.kind == EventKind::Net),
        "{:?}",
        kinds(&v)
    );
    let v = run("cat ~/.ssh/id_rsa .env", &["bash", "cat"]);
    assert_eq!(
        v.iter().filter(|e| e.kind == EventKind::SecretRead).count(),
        2,
        "{:?}",
        kinds(&v)
    );
    let v = run("sleep 0.1", &["bash", "sleep"]);
    assert!(v.is_empty());
    // Each run starts from the template: the last runs left nothing behind.
    let v = run(
        "test -f README.md && test ! -e x && test ! -e payload_ran && cat README.md && ls -la src \
         && git status && git diff && git log -p -2 && git show --stat HEAD && grep -rn fn src \
         && find . -name '*.rs' && sed -n 1p README.md && tar -tf archive.tar && jq . data.json \
         && man -w ls >/dev/null && less README.md && od -c README.md | head -1 || touch failed",
        &[
            "bash", "cat", "ls", "git", "grep", "find", "sed", "tar", "jq", "man", "less", "od",
            "head", "test",
        ],
    );
    assert!(v.is_empty(), "read-only commands flagged: {:?}", kinds(&v));
}

#[test]
fn a_timed_out_command_is_ended_with_its_jail() {
    if jail::unavailable().is_some() {
        return;
    }
    let j = Jail::new();
    let t = Instant::now();
    let r = j.run(1, "sleep 60 & sleep 60", Duration::from_millis(500));
    assert!(r.timed_out);
    assert!(t.elapsed() < Duration::from_secs(10));
}
