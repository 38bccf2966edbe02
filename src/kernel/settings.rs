//! Where fen keeps things: XDG directories, resolved once from the environment.

use crate::native::process::spill::{prune, PruneLimits};
use std::path::{Path, PathBuf};

/// The directories fen reads and writes.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `$XDG_CONFIG_HOME/fen` (default `~/.config/fen`): extensions, settings, models.
    pub config_dir: PathBuf,
    /// `$XDG_STATE_HOME/fen` (default `~/.local/state/fen`): logs, sessions, tool output.
    pub state_dir: PathBuf,
}

impl Paths {
    pub fn from_env() -> Paths {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let xdg = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(fallback))
        };
        Paths {
            config_dir: xdg("XDG_CONFIG_HOME", ".config").join("fen"),
            state_dir: xdg("XDG_STATE_HOME", ".local/state").join("fen"),
        }
    }
}

/// `FEN_EXTENSIONS_PATH`, colon-separated, empty entries ignored.
pub fn extensions_path_from_env() -> Vec<PathBuf> {
    std::env::var_os("FEN_EXTENSIONS_PATH")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Which of fen's environment variables tool child processes (bash, jobs) must not see:
/// every `*_API_KEY`, the key variables the configured providers declare, and settings.json's
/// `tool_env.remove`, less `tool_env.keep`. Secrets never reach a child by default.
pub fn hidden_child_env(
    names: impl Iterator<Item = String>,
    provider_keys: &[String],
    remove: &[String],
    keep: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = names
        .filter(|n| n.ends_with("_API_KEY") || provider_keys.contains(n) || remove.contains(n))
        .filter(|n| !keep.contains(n))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Top-level keys of settings.json that fen (or a first-party extension) reads; any other is
/// reported once, with its file and line, as a warning (never fatal: pi's and Claude Code's
/// keys may share the file).
pub const KNOWN_KEYS: &[&str] = &[
    "$schema",
    "provider",
    "model",
    "thinking",
    "defaultProvider",
    "defaultModel",
    "defaultThinkingLevel",
    "handler_budget_ms",
    "tool_env",
    "tool_output",
    "permissions",
    "sandbox",
    "tui",
    "notifications",
    "hooks",
    "lsp",
    "checkpoints",
    "auth",
];

/// Which settings file a layer is, in the order they apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// `$XDG_CONFIG_HOME/fen/settings.json`.
    User,
    /// The project's `.fen/settings.json` (shared with the repository).
    Project,
    /// The project's `.fen/settings.local.json` (personal; where "always" answers go).
    Local,
}

/// One settings file as read.
#[derive(Debug, Clone)]
pub struct Layer {
    pub scope: Scope,
    pub path: PathBuf,
    /// The file's JSON; `Null` when the file is missing or unusable.
    pub value: serde_json::Value,
    /// Why the file could not be used (unreadable, not JSON, not an object).
    pub error: Option<String>,
    /// The file's text (line numbers of rules and keys).
    text: String,
}

impl Layer {
    pub fn read(scope: Scope, path: PathBuf) -> Layer {
        let mut layer = Layer {
            scope,
            path,
            value: serde_json::Value::Null,
            error: None,
            text: String::new(),
        };
        let shown = layer.path.display().to_string();
        match std::fs::read_to_string(&layer.path) {
            Ok(t) => layer.text = t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return layer,
            Err(e) => {
                layer.error = Some(format!("cannot read {shown}: {e}"));
                return layer;
            }
        }
        match serde_json::from_str::<serde_json::Value>(&layer.text) {
            Ok(v) => layer.value = v,
            Err(e) => {
                layer.error = Some(format!(
                    "{shown}:{}:{}: not valid JSON: {e}",
                    e.line(),
                    e.column()
                ))
            }
        }
        layer
    }

    /// The line (1-based) where a JSON string first appears in the file; 0 when it does not.
    pub fn line_of(&self, s: &str) -> u32 {
        let needle = serde_json::to_string(s).unwrap_or_default();
        self.text
            .find(&needle)
            .map(|at| self.text[..at].matches('\n').count() as u32 + 1)
            .unwrap_or(0)
    }

    /// `permissions` and `sandbox` of this file, each rule with its line.
    pub fn permissions(&self) -> PermissionSettings {
        let perms = self.value.get("permissions").cloned().unwrap_or_default();
        let list = |key: &str| -> Vec<RuleLine> {
            perms
                .get(key)
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|r| r.as_str())
                        .map(|r| RuleLine {
                            text: r.to_string(),
                            line: self.line_of(r),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        PermissionSettings {
            mode: perms
                .get("mode")
                .and_then(|m| m.as_str())
                .map(str::to_string),
            allow: list("allow"),
            ask: list("ask"),
            deny: list("deny"),
            additional_dirs: perms
                .get("additional_dirs")
                .or_else(|| perms.get("additionalDirectories"))
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            sandbox: self.value.get("sandbox").cloned().unwrap_or_default(),
        }
    }
}

/// What one settings file says about permissions and the sandbox, each rule with its line.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PermissionSettings {
    pub mode: Option<String>,
    pub allow: Vec<RuleLine>,
    pub ask: Vec<RuleLine>,
    pub deny: Vec<RuleLine>,
    pub additional_dirs: Vec<String>,
    pub sandbox: serde_json::Value,
}

/// A permission rule and the line it is written on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuleLine {
    pub text: String,
    pub line: u32,
}

/// `tool_env` of settings.json: `{"remove": [...], "keep": [...]}` (both optional).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
pub struct ToolEnv {
    pub remove: Vec<String>,
    pub keep: Vec<String>,
}

/// settings.json, typed and loaded once per run (again on `/reload`): the user's file, then the
/// project's `.fen/settings.json` and `.fen/settings.local.json`. Each reader applies its own
/// trust rule to the project layers (permissions may only tighten, hooks and language servers
/// need a trusted folder); `merged` is every layer a generic reader may trust. The keys below
/// are read from the user's file only, as they always were: a cloned repository does not
/// choose the provider, the budgets or what children see.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `provider` (or pi's `defaultProvider`).
    pub provider: Option<String>,
    /// `model` (or `defaultModel`).
    pub model: Option<String>,
    /// `thinking` (or `defaultThinkingLevel`), as written: the CLI checks the level.
    pub thinking: Option<String>,
    /// `handler_budget_ms`: how long an event handler, panel, status item or hook may run.
    pub handler_budget_ms: Option<u64>,
    pub tool_env: ToolEnv,
    /// `tool_output`: bounds of the bash spill files.
    pub tool_output: PruneLimits,
    /// The files, user first; missing ones are kept with a `Null` value.
    pub layers: Vec<Layer>,
    /// User, then (in a trusted folder) project, then local, objects merged key by key.
    pub merged: serde_json::Value,
    /// Unknown keys (with file and line) and unusable files, to report once.
    pub problems: Vec<String>,
}

impl Settings {
    /// Reads the three files of `config_dir` and `project_root`; `trusted`: the project folder
    /// is trusted (its layers join `merged`).
    pub fn load(config_dir: &Path, project_root: &Path, trusted: bool) -> Settings {
        let layers = vec![
            Layer::read(Scope::User, config_dir.join("settings.json")),
            Layer::read(Scope::Project, project_root.join(".fen/settings.json")),
            Layer::read(Scope::Local, project_root.join(".fen/settings.local.json")),
        ];
        Settings::from_layers(layers, trusted)
    }

    fn from_layers(layers: Vec<Layer>, trusted: bool) -> Settings {
        let mut s = Settings::default();
        for layer in &layers {
            if let Some(e) = &layer.error {
                s.problems.push(e.clone());
            }
            if let Some(obj) = layer.value.as_object() {
                for key in obj.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                    s.problems.push(format!(
                        "{}:{}: unknown setting {key:?} (ignored)",
                        layer.path.display(),
                        layer.line_of(key)
                    ));
                }
            } else if !layer.value.is_null() {
                s.problems.push(format!(
                    "{}: settings must be a JSON object",
                    layer.path.display()
                ));
            }
        }
        let user = &layers[0].value;
        let get = |a: &str, b: &str| {
            user.get(a)
                .or_else(|| user.get(b))
                .and_then(|x| x.as_str())
                .map(str::to_string)
        };
        s.provider = get("provider", "defaultProvider");
        s.model = get("model", "defaultModel");
        s.thinking = get("thinking", "defaultThinkingLevel");
        s.handler_budget_ms = user.get("handler_budget_ms").and_then(|x| x.as_u64());
        let list = |k: &str| -> Vec<String> {
            user.pointer(&format!("/tool_env/{k}"))
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        s.tool_env = ToolEnv {
            remove: list("remove"),
            keep: list("keep"),
        };
        s.tool_output = tool_output_limits(user);
        let mut merged = serde_json::Value::Object(Default::default());
        for layer in &layers {
            if layer.scope == Scope::User || trusted {
                merge(&mut merged, &layer.value);
            }
        }
        s.merged = merged;
        s.layers = layers;
        s
    }

    /// The files that parsed, in the order they apply, each flagged when it is a project
    /// file; and why the others could not be used.
    pub fn files(&self) -> (Vec<(PathBuf, serde_json::Value, bool)>, Vec<String>) {
        let files = self
            .layers
            .iter()
            .filter(|l| !l.value.is_null())
            .map(|l| (l.path.clone(), l.value.clone(), l.scope != Scope::User))
            .collect();
        let errors = self.layers.iter().filter_map(|l| l.error.clone()).collect();
        (files, errors)
    }

    /// The layer of `scope`.
    pub fn layer(&self, scope: Scope) -> Option<&Layer> {
        self.layers.iter().find(|l| l.scope == scope)
    }

    /// The value at a dotted path of `merged` (`tui.theme`); `None` when absent.
    pub fn get(&self, path: &str) -> Option<&serde_json::Value> {
        if path.is_empty() {
            return Some(&self.merged);
        }
        path.split('.')
            .try_fold(&self.merged, |v, key| v.as_object()?.get(key))
    }

    /// Top-level keys whose merged value differs between `self` and `other`, sorted.
    pub fn changed_keys(&self, other: &Settings) -> Vec<String> {
        let empty = serde_json::Map::new();
        let a = self.merged.as_object().unwrap_or(&empty);
        let b = other.merged.as_object().unwrap_or(&empty);
        let mut keys: Vec<String> = a
            .keys()
            .chain(b.keys())
            .filter(|k| a.get(*k) != b.get(*k))
            .cloned()
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Objects merge key by key (a later layer's value wins); anything else replaces.
fn merge(into: &mut serde_json::Value, from: &serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (_, serde_json::Value::Null) => {}
        (slot, v) => *slot = v.clone(),
    }
}

/// settings.json `tool_output`: `{"max_age_days": 7, "max_mb": 100}` bounds the bash spill
/// files under `$XDG_STATE_HOME/fen/tool-output/`. Missing or invalid values keep the default.
fn tool_output_limits(v: &serde_json::Value) -> PruneLimits {
    let mut limits = PruneLimits::default();
    let section = &v["tool_output"];
    if let Some(days) = section["max_age_days"].as_f64().filter(|d| *d >= 0.0) {
        limits.max_age = std::time::Duration::from_secs_f64(days * 86_400.0);
    }
    if let Some(mb) = section["max_mb"].as_f64().filter(|m| *m >= 0.0) {
        limits.max_total_bytes = (mb * 1024.0 * 1024.0) as u64;
    }
    limits
}

static PRUNER: std::sync::Mutex<Option<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(None);

/// Prunes the bash spill directory on a thread of its own (start-up must not wait on the
/// disk); [`wait_for_tool_output_pruning`] lets it finish before the process exits.
pub fn prune_tool_output_in_background(paths: &Paths, limits: PruneLimits) {
    let dir = paths.state_dir.join("tool-output");
    let spawned = std::thread::Builder::new()
        .name("fen-prune".into())
        .spawn(move || {
            // An unreadable directory only means nothing is pruned this run; bash reports
            // its own spill errors when it writes there.
            let _ = prune(&dir, &limits, std::time::SystemTime::now());
        });
    if let (Ok(handle), Ok(mut slot)) = (spawned, PRUNER.lock()) {
        *slot = Some(handle);
    }
}

/// Waits up to `bound` for the start-up pruning to end (a prune cut short is harmless: each
/// removal is whole).
pub fn wait_for_tool_output_pruning(bound: std::time::Duration) {
    let Some(handle) = PRUNER.lock().ok().and_then(|mut s| s.take()) else {
        return;
    };
    let start = std::time::Instant::now();
    while !handle.is_finished() && start.elapsed() < bound {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::{Scope, Settings};

    #[test]
    fn layers_merge_in_order_and_unknown_keys_are_reported_with_file_and_line() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".fen")).unwrap();
        std::fs::write(
            config.path().join("settings.json"),
            "{\n  \"provider\": \"anthropic\",\n  \"tui\": {\"theme\": \"dark\", \"mouse\": true},\n  \"colour\": 1\n}",
        )
        .unwrap();
        std::fs::write(
            project.path().join(".fen/settings.json"),
            r#"{"provider": "openai", "tui": {"theme": "light"}, "permissions": {"deny": ["Bash(rm *)"]}}"#,
        )
        .unwrap();
        std::fs::write(project.path().join(".fen/settings.local.json"), "{not json").unwrap();
        let s = Settings::load(config.path(), project.path(), true);
        // Keys a cloned repository must not choose come from the user's file only.
        assert_eq!(s.provider.as_deref(), Some("anthropic"));
        // A trusted project's layers merge over the user's, object by object.
        assert_eq!(s.get("tui.theme"), Some(&serde_json::json!("light")));
        assert_eq!(s.get("tui.mouse"), Some(&serde_json::json!(true)));
        assert_eq!(s.get("tui.nothing"), None);
        let user = config.path().join("settings.json");
        assert!(
            s.problems.iter().any(
                |p| p == &format!("{}:4: unknown setting \"colour\" (ignored)", user.display())
            ),
            "{:?}",
            s.problems
        );
        assert!(s
            .problems
            .iter()
            .any(|p| p.contains("settings.local.json:1:2: not valid JSON")));
        let deny = &s.layer(Scope::Project).unwrap().permissions().deny;
        assert_eq!((deny[0].text.as_str(), deny[0].line), ("Bash(rm *)", 1));
        // An untrusted project's layers stay out of the merged view.
        let untrusted = Settings::load(config.path(), project.path(), false);
        assert_eq!(untrusted.get("tui.theme"), Some(&serde_json::json!("dark")));
        assert_eq!(
            untrusted.changed_keys(&s),
            ["permissions", "provider", "tui"]
        );
    }

    #[test]
    fn provider_keys_and_api_keys_are_hidden_unless_kept() {
        let names = [
            "PATH",
            "OPENAI_API_KEY",
            "MY_LLM_TOKEN",
            "FOO_API_KEY",
            "HOME",
            "X",
        ]
        .iter()
        .map(|s| s.to_string());
        let hidden = super::hidden_child_env(
            names,
            &["MY_LLM_TOKEN".into()],
            &["X".into()],
            &["FOO_API_KEY".into()],
        );
        assert_eq!(hidden, ["MY_LLM_TOKEN", "OPENAI_API_KEY", "X"]);
    }
}
