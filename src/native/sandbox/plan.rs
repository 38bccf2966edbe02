//! Where a tool's shell command runs: inside the session's OS sandbox, or outside it because a
//! `sandbox.unsandboxed` rule (settings, or an "always" answer to an escalation) covers it.
//! One decision for every caller that starts a shell command for a tool: `process.run` (bash,
//! settings hooks through `process.run_all`) and `jobs.start` (background jobs). Subagent
//! children (a fen that sandboxes its own tool commands) and MCP and language servers (the
//! user's configured programs, started like the user's shell would) are not tool shell
//! commands and run outside the sandbox, as before.
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

/// Where one command runs.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The sandbox to run it in; `None`: outside any.
    pub sandbox: Option<Sandbox>,
    /// The `sandbox.unsandboxed` rule that sent it outside the sandbox, if one did.
    pub rule: Option<String>,
}

/// Commands longer than this are analysed off the async thread (see [`plan_is_slow`]).
const LONG_COMMAND: usize = 1024;

/// Whether planning `command` may take long enough to belong on a blocking thread.
pub fn plan_is_slow(command: &str, rules: &Unsandboxed) -> bool {
    command.len() > LONG_COMMAND && !rules.is_empty()
}

/// The plan for `command` given the session's tool sandbox (`None`: off) and its unsandboxed
/// rules. A command leaves the sandbox only when every segment that is not read-only is allowed
/// by such a rule (so `cargo test; rm -rf x` is not covered by `Bash(cargo test *)`) and at
/// least one rule matched (a read-only command alone never leaves the sandbox).
pub fn plan(command: &str, sandbox: Option<&Sandbox>, rules: &Unsandboxed) -> Plan {
    let Some(sandbox) = sandbox else {
        return Plan::default();
    };
    if let Some(rule) = unsandboxed_rule(command, rules) {
        return Plan {
            sandbox: None,
            rule: Some(rule),
        };
    }
    Plan {
        sandbox: Some(sandbox.clone()),
        rule: None,
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

    #[test]
    fn a_rule_sends_only_the_commands_it_covers_outside() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(
            dir.path(),
            &[],
            &PathBuf::from("/nonexistent-home"),
            &PathBuf::from("/nonexistent-config"),
        );
        let rules = Unsandboxed::new(ws);
        let sb = sandbox(dir.path());
        // No rule: inside.
        let p = plan("make out", Some(&sb), &rules);
        assert!(p.sandbox.is_some() && p.rule.is_none());
        rules.add("Bash(make out *)").unwrap();
        let p = plan("make out", Some(&sb), &rules);
        assert!(p.sandbox.is_none());
        assert_eq!(p.rule.as_deref(), Some("Bash(make out *)"));
        // A second command the rule does not cover keeps the whole line inside.
        let p = plan("make out; rm -rf x", Some(&sb), &rules);
        assert!(p.sandbox.is_some() && p.rule.is_none());
        // A read-only command alone never leaves.
        let p = plan("ls", Some(&sb), &rules);
        assert!(p.sandbox.is_some());
        // No sandbox at all: nothing to leave.
        let p = plan("make out", None, &rules);
        assert!(p.sandbox.is_none() && p.rule.is_none());
        assert!(rules.add("Bash(").is_err());
    }
}
