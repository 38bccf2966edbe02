//! Standalone fake LLM server for manual testing and benchmarks.
//!
//! ```text
//! cargo run --example fake_llm -- [--port P] [--repeat] SOURCE
//! SOURCE: --scenario FILE.json          a Scenario (see tests/support/fake_llm.rs)
//!       | --deltas N [--api A]          N one-character text deltas (benchmark)
//!       | --text TEXT [--api A]         one text turn
//! A: openai_chat (default) | openai_responses | anthropic
//! ```
//! Prints `fake-llm listening on http://127.0.0.1:P/v1`, then serves until killed.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use std::error::Error;
use std::io::Write;
use std::net::SocketAddr;

fn parse_api(name: &str) -> Result<Api, String> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        format!("unknown --api {name:?}; use openai_chat, openai_responses or anthropic")
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut port: u16 = 0;
    let mut repeat = false;
    let mut api = Api::OpenAiChat;
    let mut scenario_file: Option<String> = None;
    let mut deltas: Option<usize> = None;
    let mut text: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--port" => port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--repeat" => repeat = true,
            "--api" => api = parse_api(&value()?)?,
            "--scenario" => scenario_file = Some(value()?),
            "--deltas" => deltas = Some(value()?.parse().map_err(|e| format!("--deltas: {e}"))?),
            "--text" => text = Some(value()?),
            "-h" | "--help" => {
                println!("usage: fake_llm [--port P] [--repeat] (--scenario FILE | --deltas N | --text T) [--api A]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}; try --help").into()),
        }
    }
    let mut scenario = match (scenario_file, deltas, text) {
        (Some(path), None, None) => {
            let json = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read scenario {path}: {e}"))?;
            Scenario::from_json(&json).map_err(|e| format!("bad scenario {path}: {e}"))?
        }
        (None, Some(count), None) => Scenario::new().then(Reply::Deltas { api, count }),
        (None, None, Some(text)) => Scenario::new().then(Reply::stream(api, Turn::text(&text))),
        _ => return Err("give exactly one of --scenario, --deltas, --text (see --help)".into()),
    };
    scenario.repeat |= repeat;
    let server = FakeLlm::try_start_on(SocketAddr::from(([127, 0, 0, 1], port)), scenario)
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    println!("fake-llm listening on {}", server.base_url());
    std::io::stdout().flush()?;
    loop {
        std::thread::park();
    }
}
