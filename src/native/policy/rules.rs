//! Permission rules in Claude Code's syntax: `Bash(npm run test *)`, `Bash(git diff *)`,
//! `Read(./.env*)`, `Edit(src/**)`, `Write(docs/**)`, `WebFetch(domain:example.com)` and bare
//! tool names. Tool names match case-insensitively. Command rules match the *peeled* argv of
//! each segment token by token (a lone `*` token matches any number of arguments, `*` inside a
//! token matches within that argument), so `Bash(cargo test *)` covers `cd a && cargo test -p
//! x`, `FOO=1 cargo test` and `timeout 60 cargo test`. Path rules are gitignore-like globs
//! anchored by their prefix (`//abs`, `~/home`, `/project-root`, `./cwd`; a pattern with no `/`
//! matches a name at any depth). A rule that can never match is an error naming the rule.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::paths::Workspace;
use super::shell::normalize_name;

/// Where a rule goes in the order deny → ask → allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

/// The settings file and line a rule came from (`None` for rules made in the session).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuleSource {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for RuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A rule as written in settings, before compiling.
#[derive(Debug, Clone)]
pub struct RuleInput {
    pub text: String,
    pub kind: RuleKind,
    pub source: Option<RuleSource>,
}

/// A rule that can never match, or does not parse.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{location}rule `{rule}`: {why}")]
pub struct RuleError {
    pub rule: String,
    /// `file:line: ` or empty.
    pub location: String,
    pub why: String,
}

/// Tools whose specifier is a path, and which tool names each rule name covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Shell,
    Read,
    Write,
    Fetch,
    Other,
}

pub(crate) fn family_of(tool: &str) -> Family {
    match tool {
        "bash" | "shell" => Family::Shell,
        "read" | "grep" | "glob" | "find" | "ls" => Family::Read,
        "edit" | "write" | "multiedit" | "notebookedit" | "apply_patch" => Family::Write,
        "webfetch" | "fetch" => Family::Fetch,
        _ => Family::Other,
    }
}

/// Tool names always known, whatever the caller's tool list.
const BUILTIN: &[&str] = &[
    "bash",
    "shell",
    "read",
    "grep",
    "glob",
    "find",
    "ls",
    "edit",
    "write",
    "multiedit",
    "notebookedit",
    "webfetch",
    "websearch",
    "fetch",
];

#[derive(Debug, Clone)]
enum Tok {
    /// `*` alone: any number of arguments.
    Star,
    Lit(String),
    Glob(String),
}

#[derive(Debug, Clone)]
enum Spec {
    /// Bare tool name or `Tool(*)`.
    Any,
    Command(Vec<Tok>),
    Path(Box<[GlobMatcher]>),
    Domain(String),
    /// Matched against every top-level string argument.
    Value(GlobMatcher),
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub kind: RuleKind,
    /// The rule as written.
    pub text: String,
    /// The tool name or glob, lowercased.
    pub tool: String,
    pub source: Option<RuleSource>,
    spec: Spec,
    tool_glob: Option<GlobMatcher>,
}

impl Rule {
    /// `Bash(cargo test *)`, `Read` — a bare name or a tool with a specifier.
    pub fn is_bare(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// Applies to calls of `tool` (lowercase) as a whole or through its family.
    pub(crate) fn covers_tool(&self, tool: &str) -> bool {
        if let Some(g) = &self.tool_glob {
            return g.is_match(tool);
        }
        if self.tool == tool {
            return true;
        }
        let (a, b) = (family_of(&self.tool), family_of(tool));
        a == b && a != Family::Other
    }

    pub(crate) fn family(&self) -> Family {
        family_of(&self.tool)
    }

    /// Matches a segment's peeled argv (with its wrappers and the containers it came through).
    pub(crate) fn matches_command(
        &self,
        argv: &[String],
        wrappers: &[String],
        via: &[String],
    ) -> bool {
        let toks = match &self.spec {
            Spec::Any => return true,
            Spec::Command(t) => t,
            _ => return false,
        };
        if match_tokens(toks, argv) {
            return true;
        }
        // `Bash(sudo *)`, `Bash(xargs *)`: rules about a wrapper or container match what runs
        // under it.
        if let Some(Tok::Lit(head)) = toks.first() {
            let under = wrappers.iter().any(|w| w == head)
                || via
                    .iter()
                    .any(|v| v.split_whitespace().next() == Some(head.as_str()));
            if under && match_tokens(&toks[1..], argv) {
                return true;
            }
        }
        false
    }

    /// Matches a resolved path (and its lexical form).
    pub(crate) fn matches_path(&self, paths: &[&Path]) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Path(globs) => paths.iter().any(|p| globs.iter().any(|g| g.is_match(p))),
            _ => false,
        }
    }

    /// Matches a URL's host.
    pub(crate) fn matches_domain(&self, url: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Domain(d) => {
                let host = host_of(url);
                if let Some(suffix) = d.strip_prefix("*.") {
                    host.ends_with(&format!(".{suffix}")) || host == suffix
                } else {
                    host == *d || host.ends_with(&format!(".{d}"))
                }
            }
            _ => false,
        }
    }

    pub(crate) fn matches_values(&self, args: &serde_json::Value) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Value(g) => args.as_object().is_some_and(|o| {
                o.values()
                    .any(|v| v.as_str().is_some_and(|s| g.is_match(s)))
            }),
            _ => false,
        }
    }

    pub(crate) fn has_path_spec(&self) -> bool {
        matches!(self.spec, Spec::Path(_))
    }
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let auth = auth.rsplit('@').next().unwrap_or(auth);
    let host = if auth.starts_with('[') {
        auth.split(']')
            .next()
            .unwrap_or(auth)
            .trim_start_matches('[')
    } else {
        auth.split(':').next().unwrap_or(auth)
    };
    host.to_ascii_lowercase()
}

fn match_tokens(toks: &[Tok], argv: &[String]) -> bool {
    match toks.split_first() {
        None => argv.is_empty(),
        Some((Tok::Star, rest)) => (0..=argv.len()).any(|k| match_tokens(rest, &argv[k..])),
        Some((t, rest)) => match argv.split_first() {
            None => false,
            Some((a, more)) => {
                let ok = match t {
                    Tok::Lit(l) => l == a,
                    Tok::Glob(g) => wildcard(g.as_bytes(), a.as_bytes()),
                    Tok::Star => true,
                };
                ok && match_tokens(rest, more)
            }
        },
    }
}

/// `*` matches any run of bytes (including none), `?` one byte.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Splits a command pattern into words, honouring single and double quotes and `\`.
fn split_words(s: &str) -> Option<Vec<(String, bool)>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted_star = false;
    let mut any = false;
    let mut chars = s.chars();
    let mut glob = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                any = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => {
                            quoted_star |= x == '*';
                            cur.push(x)
                        }
                        None => return None,
                    }
                }
            }
            '"' => {
                any = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => cur.push(chars.next()?),
                        Some(x) => {
                            quoted_star |= x == '*';
                            cur.push(x)
                        }
                        None => return None,
                    }
                }
            }
            '\\' => {
                any = true;
                cur.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push((std::mem::take(&mut cur), glob));
                }
                any = false;
                glob = false;
            }
            '*' => {
                glob = true;
                cur.push('*');
            }
            _ => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push((cur, glob));
    }
    let _ = quoted_star;
    Some(out)
}

/// The rules of a session: compiled, in the order given (the order does not matter for the
/// verdict: deny beats ask beats allow).
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
}

impl RuleSet {
    pub fn new() -> RuleSet {
        RuleSet::default()
    }

    /// Compiles rules; every rule that does not parse or can never match is reported.
    /// `known_tools` (lowercase or not) lets a rule naming no known tool be an error; the
    /// built-in names (bash, read, edit, write, grep, glob, find, ls, webfetch, ...) are always
    /// known.
    pub fn parse(
        inputs: &[RuleInput],
        known_tools: Option<&[&str]>,
        ws: &Workspace,
    ) -> Result<RuleSet, Vec<RuleError>> {
        let mut set = RuleSet::new();
        let mut errors = Vec::new();
        for input in inputs {
            match compile(input, known_tools, ws) {
                Ok(r) => set.rules.push(r),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// Adds one rule (a session or "always" approval).
    pub fn add(&mut self, input: &RuleInput, ws: &Workspace) -> Result<(), RuleError> {
        self.rules.push(compile(input, None, ws)?);
        Ok(())
    }

    /// An allow rule of the read family names this path (`Read(./.env)`).
    pub fn allows_read(&self, path: &Path) -> bool {
        self.of_kind(RuleKind::Allow)
            .any(|r| r.family() == Family::Read && r.has_path_spec() && r.matches_path(&[path]))
    }

    pub fn of_kind(&self, kind: RuleKind) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(move |r| r.kind == kind)
    }
}

/// Compiles one rule.
pub fn compile(
    input: &RuleInput,
    known_tools: Option<&[&str]>,
    ws: &Workspace,
) -> Result<Rule, RuleError> {
    let text = input.text.trim();
    let err = |why: String| RuleError {
        rule: input.text.clone(),
        location: input
            .source
            .as_ref()
            .map(|s| format!("{s}: "))
            .unwrap_or_default(),
        why,
    };
    let (name, spec) = match text.find('(') {
        Some(open) => {
            if !text.ends_with(')') {
                return Err(err("missing the closing `)`".into()));
            }
            (&text[..open], Some(&text[open + 1..text.len() - 1]))
        }
        None => {
            if text.contains(')') {
                return Err(err("unbalanced `)`".into()));
            }
            (text, None)
        }
    };
    let tool = name.trim().to_ascii_lowercase();
    if tool.is_empty()
        || !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-*.:".contains(c))
    {
        return Err(err(format!("`{name}` is not a tool name")));
    }
    let tool_glob = if tool.contains('*') {
        Some(
            GlobBuilder::new(&tool)
                .build()
                .map_err(|e| err(format!("bad tool glob: {e}")))?
                .compile_matcher(),
        )
    } else {
        None
    };
    if let Some(known) = known_tools {
        let known: Vec<String> = known.iter().map(|k| k.to_ascii_lowercase()).collect();
        let hit = |k: &str| match &tool_glob {
            Some(g) => g.is_match(k),
            None => k == tool,
        };
        if !known.iter().any(|k| hit(k)) && !BUILTIN.iter().any(|k| hit(k)) {
            return Err(err(format!(
                "no tool is called `{name}`, so the rule can never match"
            )));
        }
    }
    let spec = match spec.map(str::trim) {
        None | Some("*") => Spec::Any,
        Some("") => {
            return Err(err(
                "empty parentheses; write the bare tool name to cover every call".into(),
            ))
        }
        Some(s) => match family_of(&tool) {
            Family::Shell => command_spec(s).map_err(err)?,
            Family::Read | Family::Write => path_spec(s, ws).map_err(err)?,
            Family::Fetch => match s.strip_prefix("domain:") {
                Some(d) if !d.trim().is_empty() => Spec::Domain(d.trim().to_ascii_lowercase()),
                _ => return Err(err("expected `domain:HOST`".into())),
            },
            Family::Other => Spec::Value(
                GlobBuilder::new(s)
                    .build()
                    .map_err(|e| err(format!("bad glob: {e}")))?
                    .compile_matcher(),
            ),
        },
    };
    Ok(Rule {
        kind: input.kind,
        text: text.to_string(),
        tool,
        source: input.source.clone(),
        spec,
        tool_glob,
    })
}

fn command_spec(s: &str) -> Result<Spec, String> {
    // Legacy `npm run test:*` = `npm run test *`.
    let s = match s.strip_suffix(":*") {
        Some(head) => format!("{head} *"),
        None => s.to_string(),
    };
    let words = split_words(&s).ok_or("unbalanced quote in the command pattern")?;
    if words.is_empty() {
        return Err("empty command pattern".into());
    }
    let mut toks = Vec::new();
    for (i, (w, glob)) in words.into_iter().enumerate() {
        let w = if i == 0 && !glob {
            normalize_name(&w)
        } else {
            w
        };
        toks.push(if glob && w == "*" {
            Tok::Star
        } else if glob {
            Tok::Glob(w)
        } else {
            Tok::Lit(w)
        });
    }
    Ok(Spec::Command(toks))
}

fn path_spec(s: &str, ws: &Workspace) -> Result<Spec, String> {
    let s = s.trim();
    let base: PathBuf;
    let rel: &str;
    if let Some(r) = s.strip_prefix("//") {
        base = PathBuf::from("/");
        rel = r;
    } else if s == "~" {
        base = ws.home.clone();
        rel = "";
    } else if let Some(r) = s.strip_prefix("~/") {
        base = ws.home.clone();
        rel = r;
    } else if let Some(r) = s.strip_prefix('/') {
        base = ws.root().to_path_buf();
        rel = r;
    } else if let Some(r) = s.strip_prefix("./") {
        base = ws.cwd.clone();
        rel = r;
    } else if s.trim_end_matches('/').contains('/') {
        base = ws.cwd.clone();
        rel = s;
    } else {
        // A bare name matches at any depth, like gitignore.
        base = PathBuf::from("/");
        rel = s;
    }
    let rel = rel.trim_end_matches('/');
    let any_depth = !s.starts_with(['/', '~', '.']) && !s.trim_end_matches('/').contains('/');
    let full = if any_depth {
        format!("**/{rel}")
    } else if rel.is_empty() {
        base.display().to_string()
    } else {
        format!("{}/{rel}", base.display().to_string().trim_end_matches('/'))
    };
    let mut globs = Vec::new();
    for pat in [full.clone(), format!("{}/**", full.trim_end_matches('/'))] {
        let g = GlobBuilder::new(&pat)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("bad glob: {e}"))?;
        globs.push(g.compile_matcher());
    }
    Ok(Spec::Path(globs.into_boxed_slice()))
}
