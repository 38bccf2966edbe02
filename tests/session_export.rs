//! `fen session export` and `/export`: a real session (mock provider, a real edit) written as
//! HTML, Markdown and JSON; the HTML rendered by headless Chromium from disk, checking what
//! it shows and that it asks the network for nothing (a local server counts connections to
//! the URLs the model's text points at). Without `chromium` the rendering part is skipped
//! with a notice (`.ci/run` installs it when it can).

use crate::common::Sandbox;
use std::io::Read;
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A server on 127.0.0.1 that counts connections (and answers none usefully).
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            h.fetch_add(1, Ordering::SeqCst);
            let mut s = s;
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
        }
    });
    (port, hits)
}

/// A session with thinking, an edit (a diff), an image in a tool result, markdown with code,
/// remote images in the model's text, and bytes the sanitizer escaped.
fn session(s: &Sandbox, port: u16) -> String {
    s.write("work/a.txt", "old line\n");
    // A 1x1 PNG for `read` to return as an image.
    let png: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
        0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    std::fs::write(s.cwd().join("dot.png"), png).expect("png");
    let script = serde_json::json!([
        {"thinking": "I should edit a.txt", "tool_calls": [
            {"name": "edit", "arguments": {"path": "a.txt", "old_string": "old line", "new_string": "new line"}},
            {"name": "read", "arguments": {"path": "dot.png"}},
            {"name": "bash", "arguments": {"command": "printf 'esc:\\001x\\000y'"}}
        ], "usage": {"input": 1000, "output": 50}},
        {"text": format!("Fixed **a.txt**. ![remote](http://127.0.0.1:{port}/md.png) <img src=\"http://127.0.0.1:{port}/raw.png\">\n\n```rust\nfn main() {{ println!(\"hi\"); }}\n```"),
         "usage": {"input": 1200, "output": 80, "cache_read": 3000}}
    ]);
    s.write("script.json", &script.to_string());
    s.write(
        "config/fen/models.json",
        r#"{"models": {"mock/mock": {"cost": {"input": 3, "output": 15, "cache_read": 0.3}}}}"#,
    );
    let script = s.root().join("script.json");
    let out = s.fen(&[
        "--provider",
        "mock",
        "--mock-script",
        script.to_str().expect("utf-8"),
        "-p",
        "fix a.txt please",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = s.fen(&["session", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    v[0]["id"].as_str().expect("a session").to_string()
}

#[test]
fn export_writes_html_markdown_and_json() {
    let s = Sandbox::new();
    let (port, _) = counting_server();
    let id = session(&s, port);
    let out = s.fen(&["session", "export", &id, "-o", "out.html"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("wrote out.html"));
    let html = std::fs::read_to_string(s.cwd().join("out.html")).expect("html written");
    assert!(html.contains("default-src 'none'"));
    assert!(!html.contains("<script"));
    // The model's raw <img> is text, its markdown image a link: nothing to fetch.
    assert!(!html.contains(&format!("<img src=\"http://127.0.0.1:{port}")));
    assert!(html.contains("&lt;img src="), "{html}");
    assert!(
        html.contains("<span class=\"add\">+new line</span>"),
        "{html}"
    );
    assert!(html.contains("data:image/png;base64,"));
    // The sanitizer's escape stays an escape.
    assert!(html.contains("esc:\\x01x\\x00y"), "{html}");
    // 1000 + 1200 in at $3, 130 out at $15, 3000 cached at $0.3.
    assert!(html.contains("$0.0095"), "{html}");

    // Markdown and JSON; the default file name; a bad id and an unwritable path.
    let out = s.fen(&["session", "export", &id, "--markdown", "-o", "-"]);
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(md.starts_with("# fix a.txt please"), "{md}");
    assert!(md.contains("```diff"));
    let out = s.fen(&["session", "export", &id, "--json"]);
    assert!(out.status.success());
    let name = format!("fen-session-{}.json", &id[..13]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.cwd().join(&name)).expect("default name"))
            .expect("json");
    assert!(v["messages"].as_array().is_some_and(|m| m.len() >= 6));
    let out = s.fen(&["session", "export", "no-such-session"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
    let out = s.fen(&["session", "export", &id, "-o", "/no/such/dir/x.html"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write /no/such/dir/x.html"));
    let out = s.fen(&["session", "export", &id, "--html", "--json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn slash_export_writes_the_conversation() {
    let s = Sandbox::new();
    s.write("script.json", r#"[{"text": "the answer is 42"}]"#);
    let script = s.root().join("script.json");
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--provider",
            "mock",
            "--mock-script",
            script.to_str().expect("utf-8"),
        ],
        "what is it?\n/export talk.md\n/export\n",
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote talk.md"), "{stdout}");
    let md = std::fs::read_to_string(s.cwd().join("talk.md")).expect("markdown");
    assert!(
        md.contains("the answer is 42") && md.contains("> what is it?"),
        "{md}"
    );
    let html = std::fs::read_dir(s.cwd())
        .expect("dir")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".html"))
        .expect("the default HTML file");
    let text = std::fs::read_to_string(html.path()).expect("html");
    assert!(text.contains("the answer is 42"));
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_html_renders_in_headless_chromium_without_network() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: chromium is not installed (apt-get install -y chromium)");
        return;
    };
    let s = Sandbox::new();
    let (port, hits) = counting_server();
    let id = session(&s, port);
    let out = s.fen(&["session", "export", &id, "-o", "out.html"]);
    assert!(out.status.success());
    let page = s.cwd().join("out.html");
    let profile = s.root().join("chromium-profile");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("</html>"),
        "chromium printed no DOM: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for text in [
        "fix a.txt please",
        "esc:\\x01x\\x00y",
        "Fixed <strong>a.txt</strong>",
        "✻ thinking",
        "tool&gt; <span class=\"ok\">ok</span> edit a.txt",
        "+new line",
        "Usage and cost",
        "$0.0095",
    ] {
        assert!(dom.contains(text), "{text:?} not rendered:\n{dom}");
    }
    // Thinking and tool calls are folded (no `open`), the image is inline.
    assert!(!dom.contains("<details open") && !dom.contains("open=\"\""));
    assert!(dom.contains("<img class=\"inline\""));
    // Give a late fetch its chance, then: nothing asked the network.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the page made a request");
    // The check can fail: a page that does load from the server is counted.
    s.write(
        "work/control.html",
        &format!(
            "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:{port}/c.png\"></body></html>"
        ),
    );
    let _ = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", s.cwd().join("control.html").display()))
        .output()
        .expect("run chromium");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        hits.load(Ordering::SeqCst) > 0,
        "the control page's request was not seen"
    );
}
