//! Which language servers fen knows: the built-in definitions (data, one row each) and the
//! `lsp` table of settings.json that adds, changes or disables them. Pure: takes the parsed
//! settings, starts nothing.
//!
//! ```json
//! {"lsp": {"diagnostics_wait_ms": 3000,
//!          "pyright": {"disabled": true},
//!          "ruff": {"command": "ruff", "args": ["server"], "extensions": ["py"]}}}
//! ```

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Default time fen waits for diagnostics after an edit.
pub const DEFAULT_DIAGNOSTICS_WAIT_MS: u64 = 3000;

/// One server definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerDef {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// File extensions without the dot.
    pub extensions: Vec<String>,
    /// Files or directories whose presence marks a workspace root.
    pub root_markers: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub initialization_options: Value,
    pub disabled: bool,
    /// Defined or changed by a project's settings (needs a trusted folder).
    pub project: bool,
    pub builtin: bool,
    /// How long to keep listening after a publication for a later one of the same version
    /// (servers that publish in stages, such as typescript-language-server's syntactic then
    /// semantic diagnostics); 0 takes the first.
    pub settle_ms: u64,
}

/// A built-in row: name, command, args, extensions, root markers.
type Row = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// The built-in servers, in the order they are tried for a file (pyright before pylsp).
const BUILTIN: &[Row] = &[
    (
        "rust-analyzer",
        "rust-analyzer",
        &[],
        &["rs"],
        &["Cargo.toml", "rust-project.json"],
    ),
    (
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &["py", "pyi"],
        &[
            "pyrightconfig.json",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    ),
    (
        "pylsp",
        "pylsp",
        &[],
        &["py", "pyi"],
        &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    ),
    (
        "typescript",
        "typescript-language-server",
        &["--stdio"],
        &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    ("gopls", "gopls", &[], &["go"], &["go.work", "go.mod"]),
    (
        "clangd",
        "clangd",
        &[],
        &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    ),
];

/// The LSP language id of a file extension (what `didOpen` says).
pub fn language_id(ext: &str) -> &str {
    match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        other => other,
    }
}

/// What a folder that is not trusted may not do with a built-in server: rust-analyzer would
/// run the project's build scripts and proc macros (`cargo check`), so they are turned off.
pub fn untrusted_options(name: &str) -> Option<Value> {
    (name == "rust-analyzer").then(|| {
        serde_json::json!({
            "cargo": {"buildScripts": {"enable": false}},
            "procMacro": {"enable": false},
            "checkOnSave": false,
        })
    })
}

pub fn builtins() -> Vec<ServerDef> {
    BUILTIN
        .iter()
        .map(|(name, command, args, exts, roots)| ServerDef {
            name: name.to_string(),
            command: command.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            extensions: exts.iter().map(|s| s.to_string()).collect(),
            root_markers: roots.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            initialization_options: Value::Null,
            disabled: false,
            project: false,
            builtin: true,
            settle_ms: if *name == "typescript" { 150 } else { 0 },
        })
        .collect()
}

/// What [`load`] made of the settings.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub servers: Vec<ServerDef>,
    pub diagnostics_wait_ms: u64,
    /// Problems, each naming the file and the server.
    pub errors: Vec<String>,
    /// Project entries left off because the folder is not trusted: (server, file).
    pub untrusted: Vec<(String, PathBuf)>,
}

/// Applies the `lsp` tables of `files` (each `(path, parsed settings.json, is_project)`, in
/// the order they apply) to the built-ins. In a folder that is not `trusted`, a project file
/// may only disable servers.
pub fn load(files: &[(PathBuf, Value, bool)], trusted: bool) -> Loaded {
    let mut out = Loaded {
        servers: builtins(),
        diagnostics_wait_ms: DEFAULT_DIAGNOSTICS_WAIT_MS,
        ..Loaded::default()
    };
    for (file, settings, project) in files {
        let lsp = &settings["lsp"];
        if lsp.is_null() {
            continue;
        }
        if lsp == &Value::Bool(false) {
            for s in &mut out.servers {
                s.disabled = true;
            }
            continue;
        }
        let Some(table) = lsp.as_object() else {
            out.errors
                .push(format!("{}: `lsp` must be an object", file.display()));
            continue;
        };
        let mut added = 0;
        for (name, v) in table {
            if name == "diagnostics_wait_ms" {
                match v.as_u64() {
                    Some(ms) if !project || trusted || ms <= out.diagnostics_wait_ms => {
                        out.diagnostics_wait_ms = ms.min(60_000)
                    }
                    Some(_) => {}
                    None => out.errors.push(format!(
                        "{}: lsp.diagnostics_wait_ms must be a whole number of milliseconds",
                        file.display()
                    )),
                }
                continue;
            }
            let Some(obj) = v.as_object() else {
                out.errors.push(format!(
                    "{}: lsp.{name} must be an object like {{\"command\": \"...\"}}",
                    file.display()
                ));
                continue;
            };
            let only_disables = obj.len() == 1 && obj.get("disabled") == Some(&Value::Bool(true));
            if *project && !trusted && !only_disables {
                out.untrusted.push((name.clone(), file.clone()));
                continue;
            }
            match apply(&mut out.servers, name, obj, *project, added) {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => out
                    .errors
                    .push(format!("{} (server '{name}'): {e}", file.display())),
            }
        }
    }
    out
}

fn strings(v: &Value, what: &str) -> Result<Vec<String>, String> {
    v.as_array()
        .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
        .ok_or_else(|| format!("{what} must be an array of strings"))
}

fn apply(
    servers: &mut Vec<ServerDef>,
    name: &str,
    obj: &Map<String, Value>,
    project: bool,
    at: usize,
) -> Result<bool, String> {
    const KNOWN: [&str; 7] = [
        "command",
        "args",
        "extensions",
        "root_markers",
        "env",
        "initialization_options",
        "disabled",
    ];
    if let Some(k) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("unknown key `{k}` (known: {})", KNOWN.join(", ")));
    }
    let mut new = false;
    let idx = match servers.iter().position(|s| s.name == name) {
        Some(i) => i,
        None => {
            new = true;
            if obj.get("command").is_none() {
                return Err("a new server needs `command` (and `extensions`)".into());
            }
            // Servers the user adds are tried before the built-ins, in the order written.
            let at = at.min(servers.len());
            servers.insert(
                at,
                ServerDef {
                    name: name.to_string(),
                    command: String::new(),
                    args: Vec::new(),
                    extensions: Vec::new(),
                    root_markers: Vec::new(),
                    env: BTreeMap::new(),
                    initialization_options: Value::Null,
                    disabled: false,
                    project,
                    builtin: false,
                    settle_ms: 0,
                },
            );
            at
        }
    };
    let s = &mut servers[idx];
    let only_disables = obj.len() == 1 && obj.contains_key("disabled");
    if project && !only_disables {
        s.project = true;
    }
    if let Some(c) = obj.get("command") {
        // `"cmd"` or `["cmd", "arg", ...]` (opencode's form).
        let mut parts = match c {
            Value::String(c) => vec![c.clone()],
            other => strings(other, "command")?,
        };
        if parts.is_empty() || parts[0].is_empty() {
            return Err("command is empty".into());
        }
        s.command = parts.remove(0);
        if !parts.is_empty() {
            s.args = parts;
        }
    }
    if let Some(a) = obj.get("args") {
        s.args = strings(a, "args")?;
    }
    if let Some(e) = obj.get("extensions") {
        s.extensions = strings(e, "extensions")?
            .into_iter()
            .map(|x| x.trim_start_matches('.').to_string())
            .collect();
    }
    if let Some(r) = obj.get("root_markers") {
        s.root_markers = strings(r, "root_markers")?;
    }
    if let Some(e) = obj.get("env") {
        let m = e.as_object().ok_or("env must be an object of strings")?;
        for (k, v) in m {
            let v = v.as_str().ok_or("env must be an object of strings")?;
            s.env.insert(k.clone(), v.to_string());
        }
    }
    if let Some(o) = obj.get("initialization_options") {
        s.initialization_options = o.clone();
    }
    if let Some(d) = obj.get("disabled") {
        s.disabled = d.as_bool().ok_or("disabled must be true or false")?;
    }
    if s.extensions.is_empty() && !s.disabled {
        return Err("no `extensions`: the server would never be used".into());
    }
    Ok(new)
}

/// The workspace root of `file` for `def`: the nearest directory from the file's up to
/// `project_root` (or the file system root, for a file outside it) holding one of the
/// server's root markers; else the project root when the file is inside it, else the file's
/// directory.
pub fn root_for(def: &ServerDef, file: &Path, project_root: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(file);
    let inside = file.starts_with(project_root);
    for d in dir.ancestors() {
        if def.root_markers.iter().any(|m| d.join(m).exists()) {
            return d.to_path_buf();
        }
        if inside && d == project_root {
            break;
        }
    }
    if inside {
        project_root.to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(l: &Loaded) -> Vec<&str> {
        l.servers.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn settings_add_change_and_disable() {
        let user = json!({"lsp": {
            "diagnostics_wait_ms": 500,
            "pyright": {"disabled": true},
            "ruff": {"command": ["ruff", "server"], "extensions": [".py"]},
            "pylsp": {"env": {"A": "1"}, "initialization_options": {"x": 1}},
        }});
        let l = load(&[("u.json".into(), user, false)], false);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        assert_eq!(l.diagnostics_wait_ms, 500);
        assert_eq!(names(&l)[0], "ruff");
        let ruff = &l.servers[0];
        assert_eq!(
            (ruff.command.as_str(), ruff.args.clone()),
            ("ruff", vec!["server".to_string()])
        );
        assert_eq!(ruff.extensions, ["py"]);
        assert!(
            l.servers
                .iter()
                .find(|s| s.name == "pyright")
                .unwrap()
                .disabled
        );
        let pylsp = l.servers.iter().find(|s| s.name == "pylsp").unwrap();
        assert_eq!(pylsp.env["A"], "1");
        assert_eq!(pylsp.initialization_options, json!({"x": 1}));
    }

    #[test]
    fn untrusted_projects_may_only_disable() {
        let project = json!({"lsp": {
            "evil": {"command": "./run-me", "extensions": ["py"]},
            "pylsp": {"command": "./also-me"},
            "gopls": {"disabled": true},
        }});
        let files = [(PathBuf::from(".fen/settings.json"), project, true)];
        let l = load(&files, false);
        assert!(!names(&l).contains(&"evil"));
        assert_eq!(
            l.servers
                .iter()
                .find(|s| s.name == "pylsp")
                .unwrap()
                .command,
            "pylsp"
        );
        assert!(
            l.servers
                .iter()
                .find(|s| s.name == "gopls")
                .unwrap()
                .disabled
        );
        assert_eq!(l.untrusted.len(), 2);
        let l = load(&files, true);
        let evil = l.servers.iter().find(|s| s.name == "evil").unwrap();
        assert!(evil.project);
    }

    #[test]
    fn bad_entries_name_what_is_wrong() {
        let bad = json!({"lsp": {"x": {"command": "x"}, "y": 3, "z": {"comand": "z", "extensions": ["z"]}}});
        let l = load(&[("s.json".into(), bad, false)], false);
        assert_eq!(l.errors.len(), 3, "{:?}", l.errors);
        assert!(l.errors.iter().any(|e| e.contains("unknown key `comand`")));
    }

    #[test]
    fn roots_come_from_markers_within_the_project() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(d.path().join("a/Cargo.toml"), "").unwrap();
        let def = &builtins()[0];
        assert_eq!(
            root_for(def, &sub.join("x.rs"), d.path()),
            d.path().join("a")
        );
        let py = &builtins()[1];
        assert_eq!(root_for(py, &sub.join("x.py"), d.path()), d.path());
    }
}
