//! Where fen keeps things: XDG directories, resolved once from the environment.

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
