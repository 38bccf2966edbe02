//! Where fen keeps things: XDG directories, resolved once from the environment.

use crate::native::process::spill::{prune, PruneLimits};
use std::path::PathBuf;

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

/// `tool_env` of `settings.json`: `{"remove": [...], "keep": [...]}` (both optional).
pub fn tool_env_settings(config_dir: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let Ok(text) = std::fs::read_to_string(config_dir.join("settings.json")) else {
        return (Vec::new(), Vec::new());
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return (Vec::new(), Vec::new());
    };
    let list = |k: &str| -> Vec<String> {
        v.pointer(&format!("/tool_env/{k}"))
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    (list("remove"), list("keep"))
}

/// settings.json `tool_output`: `{"max_age_days": 7, "max_mb": 100}` bounds the bash spill
/// files under `$XDG_STATE_HOME/fen/tool-output/`. Missing or invalid values keep the default.
pub fn tool_output_limits(config_dir: &std::path::Path) -> PruneLimits {
    let mut limits = PruneLimits::default();
    let Ok(text) = std::fs::read_to_string(config_dir.join("settings.json")) else {
        return limits;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return limits;
    };
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
pub fn prune_tool_output_in_background() {
    let paths = Paths::from_env();
    let spawned = std::thread::Builder::new()
        .name("fen-prune".into())
        .spawn(move || {
            let limits = tool_output_limits(&paths.config_dir);
            let dir = paths.state_dir.join("tool-output");
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
