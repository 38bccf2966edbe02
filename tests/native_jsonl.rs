//! Integration tests of the JSONL session core: real files in temp dirs, real child processes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use fen::native::jsonl::{
    self, doctor, lease, list_sessions, read_all, read_from_latest_compaction, repair, BadLineKind,
    Entry, IssueCode, JsonlError, ReadReport, RecordIter, SessionWriter,
};
use serde_json::{json, Value};

fn header(id: &str) -> Value {
    jsonl::header_record(id, Path::new("/work/proj"), SystemTime::now(), "0.1.0")
}

fn msg(id: &str, parent: Option<&str>, message: Value) -> Value {
    json!({"type":"message","id":id,"parent_id":parent,"timestamp":"2026-11-21T22:44:58.000Z","message":message})
}

fn user(id: &str, parent: Option<&str>, text: &str) -> Value {
    msg(id, parent, json!({"role":"user","content":text}))
}

fn assistant_call(id: &str, parent: Option<&str>, calls: &[(&str, &str)]) -> Value {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(cid, name)| json!({"type":"tool-call","id":cid,"name":name,"arguments":{"path":"a.rs"}}))
        .collect();
    msg(
        id,
        parent,
        json!({"role":"assistant","content":blocks,"stop_reason":"tool-use"}),
    )
}

fn result(id: &str, parent: Option<&str>, call: &str, text: &str) -> Value {
    msg(
        id,
        parent,
        json!({"role":"tool-result","tool_call_id":call,"tool_name":"read","content":[{"type":"text","text":text}],"is_error":false}),
    )
}

/// Line numbers of a report's records.
fn record_lines(rep: &ReadReport) -> Vec<usize> {
    rep.records.iter().map(|r| r.line.unwrap()).collect()
}

fn write_lines(path: &Path, records: &[Value]) {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).unwrap());
        text.push('\n');
    }
    fs::write(path, text).unwrap();
}

#[test]
fn round_trip_of_every_record_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let records = vec![
        header("sess-1"),
        user("m1", None, "hello"),
        msg(
            "m2",
            Some("m1"),
            json!({"role":"user","content":[{"type":"text","text":"blocks ü \u{1F600}"}]}),
        ),
        msg(
            "m3",
            Some("m2"),
            json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hmm"},
            {"type":"text","text":"reading"},
            {"type":"tool-call","id":"c1","name":"read","arguments":{"path":"x","opts":null,"list":[]}}
        ],"stop_reason":"tool-use","usage":{"input":1,"output":2}}),
        ),
        result("m4", Some("m3"), "c1", "line\twith tab\nand newline"),
        json!({"type":"compaction","id":"k1","parent_id":"m4","summary":"did things","first_kept_entry_id":"m3",
               "tokens_before":1000,"tokens_after":200,"guidance":null,"trigger":"manual"}),
        json!({"type":"extension-state","extension":"todo","version":1,"state":{"items":[],"note":null}}),
    ];
    {
        let mut w = SessionWriter::create(&path, &records[0]).unwrap();
        for r in &records[1..] {
            w.append(r).unwrap();
        }
        w.sync().unwrap();
    }
    let rep = read_all(&path).unwrap();
    assert_eq!(rep.values().unwrap(), records);
    assert!(rep.bad_lines.is_empty());
    assert!(rep.ends_with_newline);
    assert_eq!(rep.lines, records.len());
    assert_eq!(record_lines(&rep), (1..=records.len()).collect::<Vec<_>>());
    // The structural fields are at hand without a parse, and agree with the trees.
    for (r, v) in rep.records.iter().zip(&records) {
        assert_eq!(rep.record_type(r).as_deref(), v["type"].as_str());
        assert_eq!(rep.id(r).as_deref(), v["id"].as_str());
        assert_eq!(rep.parent_id(r).as_deref(), v["parent_id"].as_str());
        assert_eq!(rep.text(r), serde_json::to_string(v).unwrap());
    }

    // Resume: the compaction keeps m3 onwards; header comes separately.
    let res = read_from_latest_compaction(&path).unwrap();
    assert_eq!(res.header.as_ref(), Some(&records[0]));
    assert_eq!(res.values().unwrap(), records[3..].to_vec());
    assert_eq!(res.compaction_index, Some(2));
    assert!(res.notes.is_empty(), "{:?}", res.notes);

    // The iterator form agrees and carries line numbers.
    let lines: Vec<usize> = RecordIter::open(&path)
        .unwrap()
        .map(|e| match e.unwrap() {
            Entry::Record { line, .. } => line.unwrap(),
            Entry::Bad(b) => panic!("bad line {b:?}"),
        })
        .collect();
    assert_eq!(lines, (1..=records.len()).collect::<Vec<_>>());
}

#[test]
fn torn_last_line_is_reported_and_never_appended_onto() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let recs = [
        header("s"),
        user("m1", None, "one"),
        user("m2", Some("m1"), "two"),
    ];
    write_lines(&path, &recs);
    // Half a record, no newline: a crash mid-write.
    let full = serde_json::to_string(&user("m3", Some("m2"), "three")).unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
    drop(f);

    let rep = read_all(&path).unwrap();
    assert_eq!(rep.values().unwrap(), recs.to_vec());
    assert_eq!(rep.bad_lines.len(), 1);
    assert_eq!(rep.bad_lines[0].line, Some(4));
    assert_eq!(rep.bad_lines[0].kind, BadLineKind::TornLine);
    assert!(!rep.ends_with_newline);

    let mut w = SessionWriter::open(&path).unwrap();
    assert!(w.repaired_torn_tail());
    let m4 = user("m4", Some("m2"), "four");
    w.append(&m4).unwrap();
    drop(w);

    let rep = read_all(&path).unwrap();
    let mut want = recs.to_vec();
    want.push(m4);
    assert_eq!(
        rep.values().unwrap(),
        want,
        "nothing before the tear is lost"
    );
    assert_eq!(rep.bad_lines.len(), 1);
    assert_eq!(rep.bad_lines[0].line, Some(4));
    assert_eq!(rep.bad_lines[0].kind, BadLineKind::TornLine);
    assert!(rep.ends_with_newline);
    assert_eq!(record_lines(&rep).last(), Some(&5));
}

#[test]
fn malformed_middle_line_is_counted_not_silently_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = "{\"type\":\"session\",\"id\":\"s\"}\nnot json at all\n\n[1,2]\n{\"type\":\"message\",\"id\":\"a\"}\n";
    fs::write(&path, text).unwrap();
    let rep = read_all(&path).unwrap();
    assert_eq!(rep.records.len(), 2);
    let bad: Vec<(Option<usize>, BadLineKind)> =
        rep.bad_lines.iter().map(|b| (b.line, b.kind)).collect();
    assert_eq!(
        bad,
        vec![
            (Some(2), BadLineKind::MalformedJson),
            (Some(4), BadLineKind::MalformedJson)
        ]
    );
    assert_eq!(rep.blank_lines, 1);
    assert_eq!(rep.lines, 5);

    // Records keep their exact text and place.
    assert_eq!(record_lines(&rep), vec![1, 5]);
    assert_eq!(
        rep.records[1].offset,
        text.find("{\"type\":\"message\"").unwrap() as u64
    );
    assert_eq!(rep.bad_lines[1].offset, text.find("[1,2]").unwrap() as u64);
    assert_eq!(
        rep.text(&rep.records[1]),
        "{\"type\":\"message\",\"id\":\"a\"}"
    );
    assert_eq!(
        rep.value(&rep.records[1]).unwrap(),
        json!({"type":"message","id":"a"})
    );
}

#[test]
fn second_writer_in_process_gets_session_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let _w = SessionWriter::create(&path, &header("s")).unwrap();
    match SessionWriter::open(&path) {
        Err(e @ JsonlError::SessionBusy { .. }) => {
            let JsonlError::SessionBusy { pid, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*pid, std::process::id());
            assert!(e.to_string().contains("--fork"), "{e}");
        }
        other => panic!("expected SessionBusy, got {other:?}"),
    }
}

#[test]
fn stale_lease_of_a_dead_pid_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    write_lines(&path, &[header("s")]);
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    assert!(!lease::pid_alive(dead_pid));
    let lock = lease::lock_path_for(&path);
    fs::write(
        &lock,
        json!({"pid": dead_pid, "host": lease::hostname()}).to_string(),
    )
    .unwrap();

    let w = SessionWriter::open(&path).unwrap();
    let owner = lease::read_owner(&lock).unwrap();
    assert_eq!(owner.pid, std::process::id());
    drop(w);
    assert!(!lock.exists());
}

#[test]
fn live_pid_lease_is_busy_even_without_flock() {
    // A lease naming a live process (here: a sleeping child) is respected.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut alive = Command::new("sleep").arg("30").spawn().unwrap();
    let lock = lease::lock_path_for(&path);
    fs::write(
        &lock,
        json!({"pid": alive.id(), "host": lease::hostname()}).to_string(),
    )
    .unwrap();
    let got = SessionWriter::open(&path);
    alive.kill().unwrap();
    alive.wait().unwrap();
    match got {
        Err(JsonlError::SessionBusy { pid, .. }) => assert_eq!(pid, alive.id()),
        other => panic!("expected busy, got {other:?}"),
    }
    // Now dead: recovered.
    assert!(SessionWriter::open(&path).is_ok());
}

/// A realistic ~2 KB message line (user / assistant with a tool call / tool result).
fn realistic_line(i: usize, parent: &str) -> (String, String) {
    let id = format!("00000000-0000-7000-8000-{i:012}");
    let body = "The quick brown fox jumps over the lazy dog; fn main() { println!(\"hi\"); } ";
    let text: String = body.repeat(24 + i % 8);
    let message = match i % 3 {
        0 => json!({"role":"user","content":[{"type":"text","text":text}]}),
        1 => json!({"role":"assistant","content":[
                {"type":"text","text":&text[..text.len()/2]},
                {"type":"tool-call","id":format!("call-{i}"),"name":"read","arguments":{"path":format!("src/f{i}.rs")}}],
                "stop_reason":"tool-use"}),
        _ => json!({"role":"tool-result","tool_call_id":format!("call-{}", i-1),"tool_name":"read",
                "content":[{"type":"text","text":text}],"is_error":false}),
    };
    let rec = json!({"type":"message","id":id,"parent_id":parent,"timestamp":"2026-11-21T22:44:58.000Z","message":message});
    (id, serde_json::to_string(&rec).unwrap())
}

#[test]
fn hundred_thousand_message_session_loads_and_resumes_near_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    writeln!(out, "{}", header("big")).unwrap();
    let n = 100_000;
    let compact_at = 99_000;
    let mut parent = String::new();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        if i == compact_at {
            // Keep the last 60 messages before the compaction.
            let kept = &ids[i - 60];
            let c = json!({"type":"compaction","id":"compaction-1","parent_id":parent,"summary":"earlier work",
                           "first_kept_entry_id":kept,"tokens_before":500000,"tokens_after":20000});
            writeln!(out, "{c}").unwrap();
        }
        let (id, line) = realistic_line(i, &parent);
        writeln!(out, "{line}").unwrap();
        parent = id.clone();
        ids.push(id);
    }
    drop(out);
    let size = fs::metadata(&path).unwrap().len();
    assert!(size > 150_000_000, "generated {size} bytes");

    let rep = read_all(&path).unwrap();
    assert_eq!(rep.records.len(), n + 2);
    assert!(rep.bad_lines.is_empty());
    assert_eq!(rep.id(&rep.records[n + 1]).as_deref(), Some(&*ids[n - 1]));
    assert_eq!(
        rep.value(&rep.records[n + 1]).unwrap()["id"],
        json!(ids[n - 1])
    );
    assert_eq!(rep.records[n + 1].line, Some(n + 2));
    drop(rep);

    let res = read_from_latest_compaction(&path).unwrap();
    assert_eq!(res.header.as_ref().unwrap()["id"], "big");
    // 60 kept + compaction + the 1000 after it.
    assert_eq!(res.records.len(), 60 + 1 + (n - compact_at));
    let values = res.values().unwrap();
    assert_eq!(values[0]["id"], json!(ids[compact_at - 60]));
    assert_eq!(res.compaction_index, Some(60));
    assert_eq!(values[60]["type"], "compaction");
    assert_eq!(values.last().unwrap()["id"], json!(ids[n - 1]));
    assert!(res.start_offset > size * 9 / 10);
}

#[test]
fn resume_skips_an_invalid_latest_compaction_and_handles_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let good = json!({"type":"compaction","id":"k1","summary":"s1"});
    let recs = vec![
        header("s"),
        user("m1", None, "one"),
        good.clone(),
        user("m2", Some("k1"), "two"),
        // A "compaction" without a summary is not valid: skipped.
        json!({"type":"compaction","id":"k2"}),
        user("m3", Some("k2"), "mentions \"compaction\" in text"),
    ];
    write_lines(&path, &recs);
    let res = read_from_latest_compaction(&path).unwrap();
    assert_eq!(res.values().unwrap(), recs[2..].to_vec());
    assert_eq!(res.compaction_index, Some(0));
    assert_eq!(res.notes.len(), 1, "{:?}", res.notes);

    let plain = dir.path().join("p.jsonl");
    write_lines(&plain, &recs[..2]);
    let res = read_from_latest_compaction(&plain).unwrap();
    assert_eq!(res.values().unwrap(), recs[1..2].to_vec());
    assert_eq!(res.compaction_index, None);

    // Unknown first_kept_entry_id: replay from the compaction, with a note.
    let lost = dir.path().join("l.jsonl");
    write_lines(
        &lost,
        &[
            header("s"),
            user("m1", None, "one"),
            json!({"type":"compaction","id":"k","summary":"s","first_kept_entry_id":"nope"}),
        ],
    );
    let res = read_from_latest_compaction(&lost).unwrap();
    assert_eq!(res.records.len(), 1);
    assert_eq!(res.compaction_index, Some(0));
    assert!(res.notes[0].contains("nope"));
}

#[test]
fn resume_without_compaction_replays_everything_and_reports_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (h, m1, m2) = (
        header("s"),
        user("m1", None, "one"),
        user("m2", Some("m1"), "two \u{e9}"),
    );
    let text = format!("{h}\n{m1}\nnot json\n\n{m2}\n{{\"type\":\"message\",\"id\":");
    fs::write(&path, &text).unwrap();
    let res = read_from_latest_compaction(&path).unwrap();
    assert_eq!(res.header.as_ref(), Some(&h));
    assert_eq!(res.values().unwrap(), vec![m1.clone(), m2.clone()]);
    assert_eq!(res.record_type(&res.records[1]).as_deref(), Some("message"));
    assert_eq!(res.compaction_index, None);
    let bad: Vec<_> = res
        .bad_lines
        .iter()
        .map(|b| (b.line, b.offset, b.kind))
        .collect();
    assert_eq!(
        bad,
        vec![
            (
                None,
                text.find("not json").unwrap() as u64,
                BadLineKind::MalformedJson
            ),
            (
                None,
                text.rfind("{\"type\"").unwrap() as u64,
                BadLineKind::TornLine
            ),
        ]
    );
    // Without a header, replay starts at the file start and lines are counted.
    let headless = dir.path().join("h.jsonl");
    fs::write(&headless, format!("{m1}\nbad\n{m2}\n")).unwrap();
    let res = read_from_latest_compaction(&headless).unwrap();
    assert_eq!(res.start_offset, 0);
    assert_eq!(
        res.records.iter().map(|r| r.line).collect::<Vec<_>>(),
        vec![Some(1), Some(3)]
    );
    assert_eq!(res.bad_lines[0].line, Some(2));
    assert_eq!(res.notes.len(), 1, "{:?}", res.notes);
}

#[test]
fn list_sessions_reads_titles_and_counts_cheaply() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let now = SystemTime::now();
    let mut paths = Vec::new();
    for k in 0..5 {
        let id = jsonl::new_session_id();
        let p = jsonl::new_session_path(d, now, id);
        let mut recs = vec![jsonl::header_record(
            &id.to_string(),
            Path::new("/w"),
            now,
            "0.1",
        )];
        recs.push(user(
            "u1",
            None,
            &format!("task number {k}:   please\n\nfix {}", "the bug ".repeat(30)),
        ));
        for j in 0..k {
            recs.push(assistant_call(
                &format!("a{j}"),
                Some("u1"),
                &[("c", "read")],
            ));
        }
        write_lines(&p, &recs);
        paths.push((p, id, k));
    }
    fs::write(d.join("x.repaired.jsonl"), "{}\n").unwrap();
    fs::write(d.join("notes.txt"), "hi").unwrap();
    fs::write(d.join("torn.jsonl"), "{\"type\":\"sess").unwrap();

    let list = list_sessions(d).unwrap();
    assert_eq!(list.len(), 6);
    for (p, id, k) in &paths {
        let s = list.iter().find(|s| &s.path == p).unwrap();
        assert_eq!(s.id.as_deref(), Some(id.to_string().as_str()));
        assert_eq!(s.message_count, 1 + k);
        let title = s.title.as_deref().unwrap();
        assert!(title.starts_with(&format!("task number {k}: please fix the bug")));
        assert!(title.chars().count() <= 80);
        assert!(s.created.is_some());
    }
    let torn = list
        .iter()
        .find(|s| s.path.ends_with("torn.jsonl"))
        .unwrap();
    assert_eq!((torn.id.as_deref(), torn.message_count), (None, 0));
    assert!(list.windows(2).all(|w| w[0].modified >= w[1].modified));
    assert!(jsonl::latest_session(d).unwrap().is_some());
    assert!(list_sessions(&d.join("missing")).unwrap().is_empty());
}

fn codes(path: &Path) -> Vec<(IssueCode, usize)> {
    doctor(path)
        .unwrap()
        .issues
        .iter()
        .map(|i| (i.code, i.line))
        .collect()
}

fn broken(dir: &Path, name: &str, recs: &[Value], tail: &str) -> PathBuf {
    let p = dir.join(name);
    write_lines(&p, recs);
    let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(tail.as_bytes()).unwrap();
    p
}

#[test]
fn doctor_reports_each_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let h = header("s");

    let healthy = broken(
        d,
        "ok.jsonl",
        &[
            h.clone(),
            user("u", None, "hi"),
            assistant_call("a", Some("u"), &[("c1", "read")]),
            result("r", Some("a"), "c1", "fine\ttext\r\n"),
        ],
        "",
    );
    let rep = doctor(&healthy).unwrap();
    assert!(rep.ok && rep.issues.is_empty(), "{rep:?}");

    let p = broken(d, "mal.jsonl", std::slice::from_ref(&h), "{oops\n");
    assert_eq!(codes(&p), vec![(IssueCode::MalformedJson, 2)]);

    let p = broken(
        d,
        "torn.jsonl",
        std::slice::from_ref(&h),
        "{\"type\":\"mess",
    );
    assert_eq!(codes(&p), vec![(IssueCode::TornLine, 2)]);

    let p = broken(
        d,
        "missing.jsonl",
        &[
            h.clone(),
            user("u", None, "hi"),
            assistant_call("a", Some("u"), &[("c1", "read"), ("c2", "bash")]),
            result("r", Some("a"), "c1", "ok"),
            user("u2", Some("r"), "next"),
        ],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::MissingToolResult, 3)]);
    assert!(!doctor(&p).unwrap().ok);

    let p = broken(
        d,
        "orphan.jsonl",
        &[
            h.clone(),
            user("u", None, "hi"),
            result("r", Some("u"), "ghost", "x"),
        ],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::OrphanToolResult, 3)]);

    let p = broken(
        d,
        "dup.jsonl",
        &[
            h.clone(),
            assistant_call("a", None, &[("c1", "read")]),
            result("r1", Some("a"), "c1", "x"),
            result("r2", Some("r1"), "c1", "x again"),
            assistant_call("a2", Some("r2"), &[("c1", "read")]),
            result("r3", Some("a2"), "c1", "reused id"),
        ],
        "",
    );
    assert_eq!(
        codes(&p),
        vec![
            (IssueCode::DuplicateToolCall, 4),
            (IssueCode::DuplicateToolCall, 5),
            (IssueCode::DuplicateToolCall, 6)
        ]
    );

    let p = broken(
        d,
        "unsafe.jsonl",
        &[
            h.clone(),
            assistant_call("a", None, &[("c1", "bash")]),
            result("r", Some("a"), "c1", "bell\u{7}nul\u{0}del\u{7f}"),
        ],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::UnsanitizedToolResult, 3)]);

    let p = broken(
        d,
        "big.jsonl",
        &[
            h.clone(),
            assistant_call("a", None, &[("c1", "read")]),
            result("r", Some("a"), "c1", &"y".repeat(100_001)),
        ],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::OversizedToolResult, 3)]);
    let p = broken(
        d,
        "notbig.jsonl",
        &[
            h.clone(),
            assistant_call("a", None, &[("c1", "read")]),
            result("r", Some("a"), "c1", &"y".repeat(100_000)),
        ],
        "",
    );
    assert!(codes(&p).is_empty());

    let p = broken(
        d,
        "err.jsonl",
        &[
            h.clone(),
            user("u", None, "hi"),
            msg(
                "a",
                Some("u"),
                json!({"role":"assistant","content":[],"stop_reason":"error","error":"500"}),
            ),
        ],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::AssistantError, 3)]);
    assert!(doctor(&p).unwrap().ok, "assistant_error is a warning");

    let p = broken(
        d,
        "hdr.jsonl",
        &[h.clone(), user("u", None, "hi"), h.clone()],
        "",
    );
    assert_eq!(codes(&p), vec![(IssueCode::OrphanedHeader, 3)]);
}

#[test]
fn repair_writes_a_healthy_copy_beside_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let recs = vec![
        header("s"),
        user("u", None, "hi"),
        assistant_call("a", Some("u"), &[("c1", "read"), ("c2", "bash")]),
        result("r1", Some("a"), "c1", "ok"),
        result("r1b", Some("r1"), "c1", "duplicate"),
        result("ghost", Some("r1b"), "c-none", "orphan"),
        user("u2", Some("ghost"), "next"),
        assistant_call("a2", Some("u2"), &[("c3", "bash")]),
        result("r3", Some("a2"), "c3", "esc\u{1b}[31mred\u{0}"),
        assistant_call("a3", Some("r3"), &[("c4", "read")]),
        result("r4", Some("a3"), "c4", &"z".repeat(150_000)),
        user("u3", Some("r4"), "last"),
    ];
    let p = broken(
        d,
        "s.jsonl",
        &recs,
        "{broken\n{\"type\":\"message\",\"id\":\"t",
    );
    let original = fs::read(&p).unwrap();

    let before = doctor(&p).unwrap();
    assert!(!before.ok);
    let rep = repair(&p).unwrap();
    assert_eq!(fs::read(&p).unwrap(), original, "original untouched");
    assert_eq!(rep.repaired_path, d.join("s.repaired.jsonl"));
    assert_eq!(rep.report_path, d.join("s.doctor.json"));
    let on_disk: Value = serde_json::from_slice(&fs::read(&rep.report_path).unwrap()).unwrap();
    assert!(!on_disk["changes"].as_array().unwrap().is_empty());
    assert_eq!(rep.doctor, before);

    let after = doctor(&rep.repaired_path).unwrap();
    assert!(after.ok && after.issues.is_empty(), "{after:?}");

    let out = read_all(&rep.repaired_path).unwrap();
    assert!(out.bad_lines.is_empty());
    let records = out.values().unwrap();
    let ids: Vec<&str> = records[1..]
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    // The synthesized result for c2 comes right after the group of `a` (after r1).
    assert_eq!(&ids[..3], &["u", "a", "r1"]);
    let synth = &records[4];
    assert_eq!(synth["message"]["tool_call_id"], "c2");
    assert_eq!(synth["message"]["is_error"], true);
    assert_eq!(
        synth["message"]["content"][0]["text"],
        "[session doctor: missing tool result replaced]"
    );
    assert!(!ids.contains(&"r1b") && !ids.contains(&"ghost"));
    // u2 pointed at the dropped orphan; it now hangs below the inserted result.
    assert_eq!(records[5]["id"], "u2");
    assert_eq!(records[5]["parent_id"], synth["id"]);
    // Every parent is an earlier id (or null).
    let mut seen = std::collections::HashSet::new();
    for r in &records[1..] {
        if let Some(p) = r["parent_id"].as_str() {
            assert!(seen.contains(p), "dangling parent {p} in {r}");
        }
        seen.insert(r["id"].as_str().unwrap().to_string());
    }
    let r3 = records.iter().find(|r| r["id"] == "r3").unwrap();
    assert_eq!(r3["message"]["content"][0]["text"], "esc\\x1b[31mred\\x00");
    let r4 = records.iter().find(|r| r["id"] == "r4").unwrap();
    let t = r4["message"]["content"][0]["text"].as_str().unwrap();
    assert!(t.len() <= 100_000 && t.contains("[session doctor: tool result cut from 150000"));
    // Unchanged lines are copied byte for byte.
    let orig_text = String::from_utf8(original).unwrap();
    let rep_text = fs::read_to_string(&rep.repaired_path).unwrap();
    assert_eq!(orig_text.lines().next(), rep_text.lines().next());
    assert!(rep_text.contains(orig_text.lines().nth(1).unwrap()));
    assert!(rep.changes.iter().any(|c| c.code == IssueCode::TornLine));
    assert!(rep
        .changes
        .iter()
        .any(|c| c.code == IssueCode::MalformedJson));
}
