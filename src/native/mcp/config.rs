//! MCP server configuration: the `mcpServers` files (`~/.config/fen/mcp.json`, a project's
//! `.mcp.json` as Claude Code writes it, and `.fen/mcp.json`), `${VAR}` expansion and the
//! per-server options. Pure: reads files and an environment look-up, starts nothing.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default time a server has to start (spawn, `initialize`, `tools/list`).
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
/// Default time one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;

/// How fen reaches a server.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url`.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// When set, only these tools (by their MCP name) are offered.
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    /// The file it came from.
    pub source: PathBuf,
    /// From a project file (`.mcp.json`, `.fen/mcp.json`): needs a trusted folder.
    pub project: bool,
    /// `oauth: {client_id, scopes}`: the client for an OAuth server without registration.
    pub oauth: Option<crate::native::auth::mcp::ClientConfig>,
}

impl ServerConfig {
    /// Whether the tool `name` (its MCP name) is offered, per `enabled_tools`/`disabled_tools`.
    pub fn tool_allowed(&self, name: &str) -> bool {
        if let Some(only) = &self.enabled_tools {
            if !only.iter().any(|t| t == name) {
                return false;
            }
        }
        !self.disabled_tools.iter().any(|t| t == name)
    }
}

/// A configuration problem, naming the file and (when it is about one) the server.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), server.as_ref().map(|s| format!(" (server '{s}')")).unwrap_or_default())]
pub struct ConfigError {
    pub file: PathBuf,
    pub server: Option<String>,
    pub message: String,
}

/// What [`load`] found: the servers to use (later files override earlier ones by name), the
/// problems, and the project servers left off because the folder is not trusted.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub servers: Vec<ServerConfig>,
    pub errors: Vec<ConfigError>,
    pub untrusted: Vec<(String, PathBuf)>,
}

/// The config files in the order they apply (later wins a name): the user's
/// `CONFIG_DIR/mcp.json`, then the project's `.mcp.json` and `.fen/mcp.json` (in the project
/// root, then in `cwd` when that is below it). The flag says whether the file is a project's.
pub fn files(config_dir: &Path, cwd: &Path, project_root: &Path) -> Vec<(PathBuf, bool)> {
    let mut out = vec![(config_dir.join("mcp.json"), false)];
    let mut dirs = vec![project_root.to_path_buf()];
    if cwd != project_root {
        dirs.push(cwd.to_path_buf());
    }
    for d in &dirs {
        out.push((d.join(".mcp.json"), true));
    }
    for d in &dirs {
        out.push((d.join(".fen").join("mcp.json"), true));
    }
    out
}

/// Reads every file of [`files`] that exists. Project servers are kept only when `trusted`.
/// `env` looks up `${VAR}`s.
pub fn load(
    files: &[(PathBuf, bool)],
    trusted: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Loaded {
    let mut loaded = Loaded::default();
    let mut by_name: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (file, project) in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                loaded
                    .errors
                    .push(err(file, None, format!("cannot read: {e}")));
                continue;
            }
        };
        let (servers, errors) = parse(&text, file, *project, env);
        loaded.errors.extend(errors);
        for s in servers {
            if s.project && !trusted {
                loaded.untrusted.push((s.name.clone(), s.source.clone()));
                continue;
            }
            if !by_name.contains_key(&s.name) {
                order.push(s.name.clone());
            }
            by_name.insert(s.name.clone(), s);
        }
    }
    loaded.servers = order
        .into_iter()
        .filter_map(|n| by_name.remove(&n))
        .collect();
    loaded
}

fn err(file: &Path, server: Option<&str>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        server: server.map(str::to_string),
        message: message.into(),
    }
}

/// Parses one file's text. A server with a problem is left out and reported; the others stay.
pub fn parse(
    text: &str,
    file: &Path,
    project: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return (
                Vec::new(),
                vec![err(file, None, format!("not valid JSON: {e}"))],
            )
        }
    };
    let Some(servers) = root.get("mcpServers") else {
        if !root.is_object() {
            errors.push(err(
                file,
                None,
                "expected a JSON object with \"mcpServers\"",
            ));
        }
        return (Vec::new(), errors);
    };
    let Some(servers) = servers.as_object() else {
        return (
            Vec::new(),
            vec![err(file, None, "\"mcpServers\" must be an object")],
        );
    };
    let mut out = Vec::new();
    for (name, spec) in servers {
        match server(name, spec, file, project, env) {
            Ok(s) => out.push(s),
            Err(message) => errors.push(err(file, Some(name), message)),
        }
    }
    (out, errors)
}

fn server(
    name: &str,
    spec: &Value,
    file: &Path,
    project: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    if name.is_empty() {
        return Err("the server name is empty".into());
    }
    let Some(obj) = spec.as_object() else {
        return Err("expected an object".into());
    };
    const KNOWN: [&str; 14] = [
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "enabled",
        "startup_timeout_ms",
        "tool_timeout_ms",
        "enabled_tools",
        "disabled_tools",
        "description",
        "oauth",
    ];
    if let Some(k) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!(
            "unknown field \"{k}\" (known: {})",
            KNOWN.join(", ")
        ));
    }
    let expand = |s: &str| expand_vars(s, env);
    let ty = str_field(obj, "type")?;
    let command = str_field(obj, "command")?;
    let url = str_field(obj, "url")?;
    let transport = match (ty.as_deref(), command, url) {
        (Some("sse"), _, _) => {
            return Err("the legacy \"sse\" transport is not supported; use streamable HTTP (\"type\": \"http\")".into())
        }
        (Some(t), _, _) if !["stdio", "http", "streamable-http", "streamable_http"].contains(&t) => {
            return Err(format!("unknown \"type\" \"{t}\" (stdio or http)"))
        }
        (_, Some(_), Some(_)) => return Err("has both \"command\" and \"url\"; give one".into()),
        (_, Some(command), None) => {
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .ok_or_else(|| "\"args\" must be an array of strings".to_string())
                            .and_then(expand)
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("\"args\" must be an array of strings".into()),
            };
            let cwd = str_field(obj, "cwd")?
                .map(|c| expand(&c))
                .transpose()?
                .map(|c| {
                    let p = crate::native::fs::expand_path(&c);
                    // A relative cwd is relative to the file's folder (the project's root).
                    if p.is_relative() {
                        let base = file.parent().unwrap_or(Path::new("."));
                        let base = if base.file_name().is_some_and(|n| n == ".fen") {
                            base.parent().unwrap_or(base)
                        } else {
                            base
                        };
                        base.join(p)
                    } else {
                        p
                    }
                });
            Transport::Stdio {
                command: expand(&command)?,
                args,
                env: str_map(obj, "env", &expand)?,
                cwd,
            }
        }
        (_, None, Some(url)) => {
            let url = expand(&url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("\"url\" must start with http:// or https:// (got {url})"));
            }
            Transport::Http {
                url,
                headers: str_map(obj, "headers", &expand)?,
            }
        }
        (_, None, None) => return Err("needs \"command\" (stdio) or \"url\" (http)".into()),
    };
    let ms = |k: &str, default: u64| -> Result<Duration, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(Duration::from_millis(default)),
            Some(v) => v
                .as_u64()
                .filter(|n| *n > 0)
                .map(Duration::from_millis)
                .ok_or_else(|| format!("\"{k}\" must be a positive number of milliseconds")),
        }
    };
    let list = |k: &str| -> Result<Option<Vec<String>>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("\"{k}\" must be an array of tool names"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("\"{k}\" must be an array of tool names")),
        }
    };
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"enabled\" must be true or false".into()),
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        startup_timeout: ms("startup_timeout_ms", DEFAULT_STARTUP_TIMEOUT_MS)?,
        tool_timeout: ms("tool_timeout_ms", DEFAULT_TOOL_TIMEOUT_MS)?,
        enabled_tools: list("enabled_tools")?,
        disabled_tools: list("disabled_tools")?.unwrap_or_default(),
        source: file.to_path_buf(),
        project,
        oauth: oauth_field(obj)?,
    })
}

/// The URL and `oauth` of the configured HTTP server `name` (for `fen mcp login`), or why
/// there is none.
pub fn http_server(
    config_dir: &Path,
    cwd: &Path,
    project_root: &Path,
    trusted: bool,
    name: &str,
) -> Result<(String, Option<crate::native::auth::mcp::ClientConfig>), String> {
    let loaded = load(&files(config_dir, cwd, project_root), trusted, &|k| {
        std::env::var(k).ok()
    });
    let Some(server) = loaded.servers.into_iter().find(|s| s.name == name) else {
        let why = loaded
            .untrusted
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| format!(" ({} is in an untrusted folder; pass --trust)", f.display()))
            .unwrap_or_default();
        return Err(format!("no MCP server named '{name}' is configured{why}"));
    };
    match server.transport {
        Transport::Http { url, .. } => Ok((url, server.oauth)),
        Transport::Stdio { .. } => Err(format!(
            "MCP server '{name}' runs as a local process; only HTTP servers use OAuth"
        )),
    }
}

/// `"oauth": {"client_id": "...", "scopes": ["..."]}`.
fn oauth_field(
    obj: &Map<String, Value>,
) -> Result<Option<crate::native::auth::mcp::ClientConfig>, String> {
    let Some(v) = obj.get("oauth").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Some(o) = v.as_object() else {
        return Err("\"oauth\" must be an object {\"client_id\", \"scopes\"}".into());
    };
    if let Some(k) = o.keys().find(|k| *k != "client_id" && *k != "scopes") {
        return Err(format!(
            "unknown field \"oauth.{k}\" (known: client_id, scopes)"
        ));
    }
    let scopes = match o.get("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"oauth.scopes\" must be an array of strings")?,
        Some(_) => return Err("\"oauth.scopes\" must be an array of strings".into()),
    };
    Ok(Some(crate::native::auth::mcp::ClientConfig {
        client_id: str_field(o, "client_id")?,
        scopes,
    }))
}

fn str_field(obj: &Map<String, Value>, k: &str) -> Result<Option<String>, String> {
    match obj.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{k}\" must be a string")),
    }
}

fn str_map(
    obj: &Map<String, Value>,
    k: &str,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    match obj.get(k) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(name, v)| match v {
                Value::String(s) => Ok((name.clone(), expand(s)?)),
                _ => Err(format!("\"{k}.{name}\" must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("\"{k}\" must be an object of strings")),
    }
}

/// Expands `${VAR}` and `${VAR:-default}`; an unset variable without a default is an error
/// naming it. `$$` is not special; a `$` not followed by `{` stays as it is.
pub fn expand_vars(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed \"${{\" in \"{s}\""));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad variable name \"${{{inner}}}\""));
        }
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "environment variable {name} is not set (used as ${{{name}}})"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("t0k".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    #[test]
    fn vars_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand_vars("a ${TOKEN} b", &env).unwrap(), "a t0k b");
        assert_eq!(
            expand_vars("${NOPE:-x}/${HOME}", &env).unwrap(),
            "x//home/u"
        );
        assert_eq!(expand_vars("$PATH", &env).unwrap(), "$PATH");
        let e = expand_vars("${NOPE}", &env).unwrap_err();
        assert!(e.contains("NOPE is not set"), "{e}");
        assert!(expand_vars("${OPEN", &env).is_err());
    }

    #[test]
    fn both_shapes_parse_and_a_bad_server_is_named_alone() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "srv", "${HOME}"], "env": {"K": "${TOKEN}"}, "tool_timeout_ms": 5},
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "enabled": false},
            "bad": {"command": "x", "url": "http://y"},
            "worse": {"command": "x", "colour": 1},
            "unset": {"command": "${MISSING}"}
        }}"#;
        let (servers, errors) = parse(text, Path::new("/p/.mcp.json"), true, &env);
        assert_eq!(servers.len(), 2);
        let fs = &servers[0];
        assert_eq!(fs.name, "fs");
        let Transport::Stdio { args, env: e, .. } = &fs.transport else {
            panic!("stdio expected");
        };
        assert_eq!(args, &["-y", "srv", "/home/u"]);
        assert_eq!(e["K"], "t0k");
        assert_eq!(fs.tool_timeout, Duration::from_millis(5));
        assert_eq!(fs.startup_timeout, Duration::from_millis(10_000));
        let web = &servers[1];
        assert!(!web.enabled);
        assert_eq!(web.transport.kind(), "http");
        let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].contains("/p/.mcp.json (server 'bad')"), "{msgs:?}");
        assert!(
            msgs[1].contains("server 'unset'") && msgs[1].contains("MISSING"),
            "{msgs:?}"
        );
        assert!(
            msgs[2].contains("server 'worse'") && msgs[2].contains("colour"),
            "{msgs:?}"
        );
    }

    #[test]
    fn broken_json_names_the_file_and_project_servers_need_trust() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("mcp.json");
        let proj = dir.path().join(".mcp.json");
        std::fs::write(&user, r#"{"mcpServers": {"a": {"command": "u"}}}"#).unwrap();
        std::fs::write(
            &proj,
            r#"{"mcpServers": {"a": {"command": "p"}, "b": {"command": "q"}}}"#,
        )
        .unwrap();
        let files = vec![(user.clone(), false), (proj.clone(), true)];
        let l = load(&files, false, &env);
        assert_eq!(l.servers.len(), 1);
        assert_eq!(l.untrusted.len(), 2);
        let l = load(&files, true, &env);
        let cmds: Vec<_> = l
            .servers
            .iter()
            .map(|s| match &s.transport {
                Transport::Stdio { command, .. } => command.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(cmds, ["p", "q"]);
        std::fs::write(&proj, "{not json").unwrap();
        let l = load(&files, true, &env);
        assert_eq!(l.servers.len(), 1);
        assert!(l.errors[0]
            .to_string()
            .contains(".mcp.json: not valid JSON"));
    }

    #[test]
    fn tool_filters() {
        let (s, _) = parse(
            r#"{"mcpServers": {"a": {"command": "x", "enabled_tools": ["e", "d"], "disabled_tools": ["d"]}}}"#,
            Path::new("f"),
            false,
            &env,
        );
        assert!(s[0].tool_allowed("e"));
        assert!(!s[0].tool_allowed("d"));
        assert!(!s[0].tool_allowed("z"));
    }
}
