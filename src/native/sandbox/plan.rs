//! Where and with which environment every child process fen starts runs: the one answer to
//! "why did this run inside, or outside, the sandbox, and what did it see?". [`plan`] takes
//! the kind of child ([`Child`]) and what the run shares ([`Inputs`]: the tool sandbox, the
//! `sandbox.unsandboxed` rules, the hidden environment, the sandbox settings to hand down) and
//! returns a [`Plan`]: the sandbox (or none), the variables removed and set, and a reason
//! that the spawn site writes to its log.
//!
//! | child | sandbox | environment | why |
//! | --- | --- | --- | --- |
//! | [`Child::Shell`]: bash (`process.run`), settings hooks (through it), background jobs (`jobs.start`) | the tool sandbox, unless a `sandbox.unsandboxed` rule covers every segment that writes, or the user approved a rerun outside | hidden variables removed | model-chosen commands |
//! | [`Child::Subagent`]: a child `fen` | outside | hidden variables removed but its provider's key; [`PARENT_SANDBOX_ENV`] carries the parent's sandbox settings | the child is fen: it plans its own tool commands with the parent's mode (`--permission-mode`), sandbox settings (this variable) and hidden environment (what it inherits) |
//! | [`Child::McpServer`], [`Child::LanguageServer`] | outside, in every mode | hidden variables removed but those the server's config sets | programs the user configured (a project's only once the folder is trusted): they need their caches, sockets and network, which the tool sandbox denies; codex and Claude Code run them unsandboxed too; their tools go through the permission policy |
//! | [`Child::Notifier`]: `notifications.command` | outside | hidden variables removed | the user's own command, run on events, never with model input |
//! | [`Child::Editor`]: `$VISUAL`/`$EDITOR` for the prompt | outside | unchanged | the person's editor, in their terminal, on their behalf |
//!
//! Not planned, because they run no program anybody chose: fen's own plumbing with fixed
//! arguments (git for checkpoints, with a fixed environment of its own; git for `--worktree`;
//! the bubblewrap trial; the sandbox launcher, which runs the planned shell commands) and the
//! URL opener of logins.
//!
//! The denial classifier ([`super::classify`]) reads the plan's sandbox after a failure; the
//! escalation dialogue ("run it again outside the sandbox?") stays with the bash tool.

use super::Sandbox;
use crate::native::policy::{
    decide, Decision, Mode, Request, Risk, RuleInput, RuleKind, RuleSet, Source, Verdict, Workspace,
};
use std::sync::{Arc, Mutex};

/// Rules whose commands run outside the sandbox, with the workspace they resolve against.
/// Cheap to clone (shared); [`Unsandboxed::add`] adds to every clone.
#[derive(Debug, Clone)]
pub struct Unsandboxed {
    workspace: Arc<Workspace>,
    rules: Arc<Mutex<RuleSet>>,
}

impl Unsandboxed {
    /// No rules yet, resolved against `workspace`.
    pub fn new(workspace: Workspace) -> Unsandboxed {
        Unsandboxed {
            workspace: Arc::new(workspace),
            rules: Arc::new(Mutex::new(RuleSet::default())),
        }
    }

    /// The workspace the rules resolve against.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// Adds one rule (`Bash(cargo test *)`); an error says why it does not parse.
    pub fn add(&self, rule: &str) -> Result<(), String> {
        let input = RuleInput {
            text: rule.to_string(),
            kind: RuleKind::Allow,
            source: None,
        };
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        rules
            .add(&input, &self.workspace)
            .map_err(|e| e.to_string())
    }

    /// Whether no rule is set (then every command stays in the sandbox, with no analysis).
    pub fn is_empty(&self) -> bool {
        let rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let empty = rules.of_kind(RuleKind::Allow).next().is_none();
        empty
    }

    /// How the analyser judges `command` as a bash call in default mode with these rules only.
    pub fn shell_decision(&self, command: &str) -> Decision {
        shell_decision(command, &self.rules, &self.workspace)
    }
}

/// How the analyser judges `command` as a bash call in default mode with `rules` only.
pub fn shell_decision(command: &str, rules: &Mutex<RuleSet>, ws: &Workspace) -> Decision {
    let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
    decide(&Request {
        tool: "bash",
        risk: Risk::Shell,
        args: &serde_json::json!({ "command": command }),
        mode: Mode::Default,
        rules: &rules,
        workspace: ws,
        sandbox_available: false,
    })
}

/// The environment variable that hands a parent's sandbox settings to a subagent's `fen`
/// (JSON of [`SandboxSettings`]).
pub const PARENT_SANDBOX_ENV: &str = "FEN_PARENT_SANDBOX";

/// The sandbox settings of a session, as `policy.use_sandbox` received them: what a child
/// `fen` must plan its own tool commands with.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SandboxSettings {
    pub enabled: bool,
    pub required: bool,
    pub network: bool,
    /// Absolute paths.
    pub writable_roots: Vec<String>,
    /// `sandbox.unsandboxed` rules, settings' and this session's.
    pub unsandboxed: Vec<String>,
}

/// What the plan decides from: what the run shares (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The sandbox tool shell commands run in; `None`: off.
    pub sandbox: Option<Sandbox>,
    /// The rules that send shell commands outside it.
    pub rules: Option<Unsandboxed>,
    /// Variables no child sees unless its plan says otherwise.
    pub hidden_env: Vec<String>,
    /// The session's sandbox settings, handed to a child `fen`.
    pub settings: Option<SandboxSettings>,
}

/// A child process fen starts (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub enum Child<'a> {
    /// A tool's shell command; `requested = false`: a rerun the user approved outside.
    Shell { command: &'a str, requested: bool },
    /// A child `fen` for a subagent; `keep_env`: hidden variables it needs (its provider's key).
    Subagent { keep_env: &'a [String] },
    /// A configured MCP stdio server; `env`: the variables its config sets.
    McpServer { env: &'a [String] },
    /// A configured language server; `env`: the variables its config sets.
    LanguageServer { env: &'a [String] },
    /// The `notifications.command` of the settings.
    Notifier,
    /// The person's editor (`$VISUAL`, `$EDITOR`).
    Editor,
}

/// Where one child runs and with what environment.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The sandbox to run it in; `None`: outside any.
    pub sandbox: Option<Sandbox>,
    /// The `sandbox.unsandboxed` rule that sent it outside the sandbox, if one did.
    pub rule: Option<String>,
    /// Inherited variables removed from its environment.
    pub env_remove: Vec<String>,
    /// Variables set in its environment (after the removal).
    pub env: Vec<(String, String)>,
    /// Why it runs where it runs, for the logs.
    pub reason: String,
}

/// Commands longer than this are analysed off the async thread (see [`plan_is_slow`]).
const LONG_COMMAND: usize = 1024;

/// Whether planning `child` may take long enough to belong on a blocking thread.
pub fn plan_is_slow(child: &Child, inputs: &Inputs) -> bool {
    match (child, &inputs.rules) {
        (Child::Shell { command, .. }, Some(rules)) => {
            command.len() > LONG_COMMAND && !rules.is_empty()
        }
        _ => false,
    }
}

/// The plan for `child` given what the run shares (see the module documentation). A shell
/// command leaves the sandbox only when every segment that is not read-only is allowed by a
/// `sandbox.unsandboxed` rule (so `cargo test; rm -rf x` is not covered by
/// `Bash(cargo test *)`) and at least one rule matched (a read-only command alone never
/// leaves the sandbox).
pub fn plan(child: &Child, inputs: &Inputs) -> Plan {
    let hidden_but = |keep: &[String]| -> Vec<String> {
        inputs
            .hidden_env
            .iter()
            .filter(|k| !keep.contains(k))
            .cloned()
            .collect()
    };
    let outside = |env_remove: Vec<String>, reason: &str| Plan {
        env_remove,
        reason: reason.to_string(),
        ..Plan::default()
    };
    match *child {
        Child::Shell { command, requested } => {
            let env_remove = inputs.hidden_env.clone();
            let Some(sandbox) = inputs.sandbox.as_ref() else {
                return outside(
                    env_remove,
                    "outside: the tool sandbox is off (yolo mode, sandbox.enabled = false, or no sandbox on this machine and none required)",
                );
            };
            if !requested {
                return outside(env_remove, "outside: a rerun the user approved");
            }
            if let Some(rule) = inputs
                .rules
                .as_ref()
                .and_then(|r| unsandboxed_rule(command, r))
            {
                return Plan {
                    reason: format!("outside: sandbox.unsandboxed rule {rule}"),
                    rule: Some(rule),
                    ..outside(env_remove, "")
                };
            }
            Plan {
                sandbox: Some(sandbox.clone()),
                reason: format!(
                    "inside the tool sandbox ({}, network {})",
                    sandbox.tier.name(),
                    if sandbox.policy.network { "allowed" } else { "denied" }
                ),
                ..outside(env_remove, "")
            }
        }
        Child::Subagent { keep_env } => {
            let mut p = outside(
                hidden_but(keep_env),
                "outside: a subagent is fen, which plans its own tool commands with the parent's mode, sandbox settings and hidden environment",
            );
            if let Some(settings) = &inputs.settings {
                if let Ok(json) = serde_json::to_string(settings) {
                    p.env.push((PARENT_SANDBOX_ENV.to_string(), json));
                }
            }
            p
        }
        Child::McpServer { env } | Child::LanguageServer { env } => outside(
            hidden_but(env),
            "outside, in every mode: a server the user configured (a project's only in a trusted folder) needs its own caches and network; its tool calls go through the permission policy",
        ),
        Child::Notifier => outside(
            inputs.hidden_env.clone(),
            "outside: the user's notification command, given no model input",
        ),
        Child::Editor => outside(Vec::new(), "outside: the person's editor, in their terminal"),
    }
}

/// The rule that lets `command` run outside the sandbox, if one does (see [`plan`]).
fn unsandboxed_rule(command: &str, rules: &Unsandboxed) -> Option<String> {
    if rules.is_empty() {
        return None;
    }
    let d = rules.shell_decision(command);
    if d.verdict != Verdict::Allow {
        return None;
    }
    d.items.iter().find_map(|i| match &i.source {
        Source::Rule { rule, .. } => Some(rule.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::sandbox::{PolicyInputs, SandboxPolicy, Tier};
    use std::path::PathBuf;

    fn sandbox(ws: &std::path::Path) -> Sandbox {
        let policy = SandboxPolicy::build(&PolicyInputs {
            workspace: ws.to_path_buf(),
            ..Default::default()
        });
        Sandbox {
            policy: Arc::new(policy),
            tier: Tier::None,
            required: false,
        }
    }

    fn shell<'a>(command: &'a str) -> Child<'a> {
        Child::Shell {
            command,
            requested: true,
        }
    }

    fn inputs(sb: Option<Sandbox>, rules: &Unsandboxed) -> Inputs {
        Inputs {
            sandbox: sb,
            rules: Some(rules.clone()),
            hidden_env: vec!["OPENAI_API_KEY".into(), "SOME_API_KEY".into()],
            settings: Some(SandboxSettings {
                enabled: true,
                unsandboxed: vec!["Bash(make out *)".into()],
                ..Default::default()
            }),
        }
    }

    fn workspace(dir: &std::path::Path) -> Workspace {
        Workspace::new(
            dir,
            &[],
            &PathBuf::from("/nonexistent-home"),
            &PathBuf::from("/nonexistent-config"),
        )
    }

    #[test]
    fn a_rule_sends_only_the_commands_it_covers_outside() {
        let dir = tempfile::tempdir().unwrap();
        let rules = Unsandboxed::new(workspace(dir.path()));
        let on = inputs(Some(sandbox(dir.path())), &rules);
        // No rule: inside.
        let p = plan(&shell("make out"), &on);
        assert!(p.sandbox.is_some() && p.rule.is_none());
        assert!(
            p.reason.starts_with("inside the tool sandbox"),
            "{}",
            p.reason
        );
        rules.add("Bash(make out *)").unwrap();
        let p = plan(&shell("make out"), &on);
        assert!(p.sandbox.is_none());
        assert_eq!(p.rule.as_deref(), Some("Bash(make out *)"));
        assert_eq!(
            p.reason,
            "outside: sandbox.unsandboxed rule Bash(make out *)"
        );
        // A second command the rule does not cover keeps the whole line inside.
        let p = plan(&shell("make out; rm -rf x"), &on);
        assert!(p.sandbox.is_some() && p.rule.is_none());
        // A read-only command alone never leaves.
        let p = plan(&shell("ls"), &on);
        assert!(p.sandbox.is_some());
        // No sandbox at all: nothing to leave.
        let off = inputs(None, &rules);
        let p = plan(&shell("make out"), &off);
        assert!(p.sandbox.is_none() && p.rule.is_none());
        assert!(p.reason.contains("sandbox is off"), "{}", p.reason);
        // A rerun the user approved.
        let p = plan(
            &Child::Shell {
                command: "make other",
                requested: false,
            },
            &on,
        );
        assert!(p.sandbox.is_none() && p.reason.contains("approved"));
        assert!(rules.add("Bash(").is_err());
    }

    /// Each kind of child gets the plan the module documentation promises.
    #[test]
    fn each_kind_of_child_gets_its_documented_plan() {
        let dir = tempfile::tempdir().unwrap();
        let rules = Unsandboxed::new(workspace(dir.path()));
        let on = inputs(Some(sandbox(dir.path())), &rules);
        let hidden = on.hidden_env.clone();
        // Shell commands: in the sandbox, every hidden variable removed.
        let p = plan(&shell("make out"), &on);
        assert!(p.sandbox.is_some());
        assert_eq!(p.env_remove, hidden);
        assert!(p.env.is_empty());
        // A subagent: outside, its provider's key kept, the parent's sandbox settings handed on.
        let keep = ["OPENAI_API_KEY".to_string()];
        let p = plan(&Child::Subagent { keep_env: &keep }, &on);
        assert!(p.sandbox.is_none() && p.rule.is_none());
        assert_eq!(p.env_remove, ["SOME_API_KEY"]);
        let (k, v) = &p.env[0];
        assert_eq!(k, PARENT_SANDBOX_ENV);
        let handed: SandboxSettings = serde_json::from_str(v).unwrap();
        assert_eq!(Some(handed), on.settings);
        assert!(
            p.reason.contains("plans its own tool commands"),
            "{}",
            p.reason
        );
        // Servers: outside in every mode, even with the sandbox required; what their config
        // sets is theirs.
        let mut required = on.clone();
        if let Some(sb) = &mut required.sandbox {
            sb.required = true;
        }
        let set = ["SOME_API_KEY".to_string()];
        for child in [
            Child::McpServer { env: &set },
            Child::LanguageServer { env: &set },
        ] {
            let p = plan(&child, &required);
            assert!(p.sandbox.is_none(), "{child:?}");
            assert_eq!(p.env_remove, ["OPENAI_API_KEY"], "{child:?}");
            assert!(p.env.is_empty());
            assert!(p.reason.contains("configured"), "{}", p.reason);
        }
        let p = plan(&Child::McpServer { env: &[] }, &on);
        assert_eq!(p.env_remove, hidden);
        // The notifier: outside, no secrets. The editor: the person's, unchanged.
        let p = plan(&Child::Notifier, &on);
        assert!(p.sandbox.is_none());
        assert_eq!(p.env_remove, hidden);
        let p = plan(&Child::Editor, &on);
        assert!(p.sandbox.is_none() && p.env_remove.is_empty());
        // Only a long shell command with rules is slow to plan.
        let long = "x".repeat(LONG_COMMAND + 1);
        assert!(!plan_is_slow(&shell(&long), &on));
        rules.add("Bash(make out *)").unwrap();
        assert!(plan_is_slow(&shell(&long), &on));
        assert!(!plan_is_slow(&Child::Notifier, &on));
    }
}
