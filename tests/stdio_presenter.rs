//! The line REPL (`fen` with piped stdin): prefixes, slash commands, starting without a
//! provider, and quitting at end of input.

mod common;
use common::Sandbox;

fn repl(s: &Sandbox, args: &[&str], input: &str, env: &[(&str, &str)]) -> (String, i32) {
    let out = s.fen_stdin(args, input, env);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn the_repl_runs_turns_and_commands_with_prefixes() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let script = s.write(
        "script.json",
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"It says alpha."},{"text":"Second answer."}]"#,
    );
    let (out, code) = repl(
        &s,
        &["--mock-script", script.to_str().unwrap()],
        "what is in a.txt?\n/help\n/nope\nand again\n",
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"tool> run read a.txt"), "{out}");
    assert!(
        lines.iter().any(|l| l.starts_with("tool> ok read a.txt")),
        "{out}"
    );
    assert!(lines.contains(&"ai> It says alpha."), "{out}");
    assert!(lines.iter().any(|l| l.contains("/reload")), "{out}");
    assert!(
        lines.contains(&"err> unknown command: /nope (try /help)"),
        "{out}"
    );
    assert!(lines.contains(&"ai> Second answer."), "{out}");
    // Order: the answer to the first line comes before /help's listing.
    let answer = out.find("It says alpha").unwrap();
    let help = out.find("/reload").unwrap();
    assert!(answer < help);
}

#[test]
fn the_repl_starts_without_a_provider_and_says_how_to_configure_one() {
    let s = Sandbox::new();
    let (out, code) = repl(&s, &[], "hello\n", &[]);
    assert_eq!(code, 0);
    assert!(
        out.contains("err> no provider is configured") && out.contains("--mock-script"),
        "{out}"
    );
}

#[test]
fn settings_json_picks_the_default_provider_and_models_are_listed() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"defaultProvider": "anthropic", "unknown": 1}"#,
    );
    let (out, _) = repl(&s, &[], "hi\n", &[]);
    assert!(
        out.contains("err> anthropic needs an API key: set ANTHROPIC_API_KEY"),
        "{out}"
    );
    s.write(
        "config/fen/settings.json",
        r#"{"provider": "openai", "model": "gpt-4.1"}"#,
    );
    let (out, _) = repl(&s, &[], "hi\n", &[]);
    assert!(
        out.contains("err> openai needs an API key: set OPENAI_API_KEY"),
        "{out}"
    );
    let models = s.fen_json(&["list", "models", "--json"]);
    assert!(models
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["provider"] == "anthropic" && m["id"].is_string()));
}
