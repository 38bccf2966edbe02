//! Shared test helpers: an isolated home (config, state, cwd) in a temp dir, and running the
//! real `fen` binary against it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = Sandbox { dir };
        std::fs::create_dir_all(s.cwd()).unwrap();
        std::fs::create_dir_all(s.config().join("fen/extensions")).unwrap();
        // Most tests exercise tools, not approvals: they run in yolo mode (no asks, no OS
        // sandbox; floors still hold). The permission tests write their own settings or pass
        // --permission-mode, which wins.
        std::fs::write(
            s.config().join("fen/settings.json"),
            r#"{"permissions": {"mode": "yolo"}}"#,
        )
        .unwrap();
        s
    }
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
    pub fn cwd(&self) -> PathBuf {
        self.root().join("work")
    }
    pub fn config(&self) -> PathBuf {
        self.root().join("config")
    }
    pub fn state(&self) -> PathBuf {
        self.root().join("state")
    }
    pub fn user_extensions(&self) -> PathBuf {
        self.config().join("fen/extensions")
    }
    /// Writes a file (creating parents) under the sandbox root.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
    /// `fen ARGS` with HOME/XDG pointed into the sandbox, run in `cwd()`.
    pub fn fen(&self, args: &[&str]) -> Output {
        self.fen_env(args, &[])
    }
    pub fn fen_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = self.base_command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run fen")
    }
    /// `fen ARGS` with `input` on its stdin (the REPL, `-p -`); provider keys and the mock
    /// script variable are cleared so only `env` configures a provider.
    pub fn fen_stdin(&self, args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
        use std::io::Write;
        let mut cmd = self.base_command(args);
        cmd.env_remove("FEN_MOCK_SCRIPT")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("run fen");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes()).expect("write stdin");
        }
        child.wait_with_output().expect("wait for fen")
    }

    /// `fen ARGS --json`, parsed; panics with stderr when fen fails.
    pub fn fen_json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.fen(args);
        assert!(
            out.status.success(),
            "fen {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("fen printed JSON")
    }
    /// Library boot options equivalent to what `fen` would use in this sandbox.
    pub fn boot_options(&self) -> fen::host::BootOptions {
        fen::host::BootOptions {
            discovery: fen::kernel::loader::DiscoveryConfig {
                explicit: Vec::new(),
                overlay: None,
                cwd: self.cwd(),
                extensions_path: Vec::new(),
                config_dir: self.config().join("fen"),
                embedded: true,
                project_trusted: true,
            },
            paths: fen::kernel::settings::Paths {
                config_dir: self.config().join("fen"),
                state_dir: self.state().join("fen"),
            },
        }
    }
}

/// A one-tool extension source whose tool description says where it came from.
pub fn tool_extension(tool: &str, marker: &str) -> String {
    format!(
        r#"return function(api)
  api.register("tool", {{
    name = "{tool}", description = "{marker}",
    parameters = {{ type = "object", properties = {{}} }},
    execute = function() return {{ content = {{}}, is_error = false }} end,
  }})
end
"#
    )
}

/// Finds the entry of `name` in a JSON array of listings.
pub fn find<'a>(rows: &'a serde_json::Value, key: &str, name: &str) -> Vec<&'a serde_json::Value> {
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r[key] == name)
        .collect()
}

/// Runs a slash command to completion on a booted kernel (a runtime for the one call).
pub fn run_command(k: &fen::host::Kernel, line: &str) -> Result<Option<String>, String> {
    fen::cmd::block_on(k.run_command(line))
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

impl Sandbox {
    /// `fen ARGS` in `cwd()` with HOME/XDG pointed into the sandbox and fen's own variables
    /// of the outer environment removed.
    fn base_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fen"));
        cmd.args(args)
            .current_dir(self.cwd())
            .env("HOME", self.root())
            .env("XDG_CONFIG_HOME", self.config())
            .env("XDG_STATE_HOME", self.state())
            .env_remove("FEN_EXTENSIONS_PATH")
            .env_remove("FEN_EXTENSION_ROOT")
            .env_remove("FEN_LOG");
        cmd
    }

    /// `fen ARGS` as a command to spawn (piped stdio).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.base_command(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }
}

/// A kernel booted in the sandbox with an agent on the mock provider playing `script` (a
/// JSON or Lua file of the sandbox).
pub fn boot_with_agent(
    s: &Sandbox,
    script: &Path,
) -> (fen::host::Kernel, std::rc::Rc<fen::kernel::agent::Agent>) {
    let k = fen::host::Kernel::boot(s.boot_options()).unwrap();
    let config = fen::kernel::agent::AgentConfig {
        provider: "mock".into(),
        model: "mock".into(),
        max_turns: 20,
        max_tokens: 1000,
        system_override: None,
        cwd: s.cwd(),
        provider_options: serde_json::json!({"mock_script": script.to_string_lossy()}),
        no_provider_help: String::new(),
    };
    let a = std::rc::Rc::new(fen::kernel::agent::Agent::new(&k.lua, config).unwrap());
    *k.inner.agent.borrow_mut() = Some(a.clone());
    (k, a)
}

/// A mock model (Lua, for `--mock-script`) that answers `saw[P1|P2|...]` with the user
/// prompts it was sent: what the context holds.
pub const ECHO_PROMPTS: &str = r#"return function(n, ctx)
  local seen = {}
  for _, m in ipairs(ctx.messages) do
    if m.role == "user" then
      local c = m.content
      if type(c) ~= "string" then
        local t = {}
        for _, b in ipairs(c or {}) do if b.type == "text" then t[#t + 1] = b.text end end
        c = table.concat(t)
      end
      seen[#seen + 1] = c
    end
  end
  return { text = "saw[" .. table.concat(seen, "|") .. "]" }
end"#;

/// Whether git is installed; says the test is skipped when it is not.
pub fn have_git() -> bool {
    let ok = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("skipped: git is not installed");
    }
    ok
}
