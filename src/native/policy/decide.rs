//! The decision function: given a tool call, the permission mode, the rules, the workspace and
//! whether a sandbox is available, returns a [`Decision`] with a verdict for the whole call, an
//! item per shell segment and per notable path, and the scope rules a "session"/"always"
//! approval would add.
//!
//! Order for each segment or path: floors, deny rules, opaque, ask rules, destructive, path
//! classes (secret, outside, unknown), allow rules, read-only recognition, then the mode table:
//!
//! | mode    | read  | write in workspace | shell                                   | outside, secrets |
//! |---------|-------|--------------------|-----------------------------------------|------------------|
//! | safe    | allow | ask                | read-only allowed, others denied         | deny             |
//! | default | allow | ask                | read-only allowed, others ask            | ask              |
//! | auto    | allow | allow              | allow if sandbox_available, else ask     | ask              |
//! | yolo    | allow | allow              | allow                                   | allow            |
//!
//! Floors and deny rules hold in every mode; opaque commands ask in every mode (deny in safe);
//! destructive operations ask in every mode but yolo (deny in safe).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::commands::risky_flag;
use super::floors;
use super::paths::{PathClass, PathInfo, ResolveCache, Workspace};
use super::readonly::is_read_only;
use super::rules::{family_of, Family, Rule, RuleKind, RuleSet, RuleSource};
use super::shell::{self, Access, PathRef, Segment, ShellContext};

/// The tool's risk level (from its spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Read,
    Write,
    Shell,
}

/// The permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Safe,
    Default,
    Auto,
    Yolo,
    /// Planning: read-only calls run, everything else is refused (see [`decide`]).
    Plan,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s.to_ascii_lowercase().as_str() {
            "safe" => Ok(Mode::Safe),
            "default" => Ok(Mode::Default),
            "auto" => Ok(Mode::Auto),
            "yolo" => Ok(Mode::Yolo),
            "plan" => Ok(Mode::Plan),
            other => Err(format!(
                "unknown permission mode `{other}` (safe, default, auto, yolo, plan)"
            )),
        }
    }
}

/// Allow < Ask < Deny: combining takes the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// Why an item got its verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// A rule from settings (or the session when `source` is `None`).
    Rule {
        rule: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<RuleSource>,
    },
    /// A floor: denied in every mode.
    Floor,
    /// The permission mode's table (including "read-only").
    Mode,
    /// A secret-like path.
    Secret,
    /// A path outside the workspace (or a device).
    Outside,
    /// The analyser cannot vouch for the command.
    Opaque,
    /// Destructive but legitimate: asks in every mode but yolo.
    Destructive,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Rule {
                rule,
                source: Some(s),
            } => write!(f, "rule {rule} ({s})"),
            Source::Rule { rule, source: None } => write!(f, "rule {rule} (session)"),
            Source::Floor => f.write_str("floor"),
            Source::Mode => f.write_str("mode"),
            Source::Secret => f.write_str("secret"),
            Source::Outside => f.write_str("outside"),
            Source::Opaque => f.write_str("opaque"),
            Source::Destructive => f.write_str("destructive"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// A shell segment (subject: its text).
    Segment,
    /// A path (subject: the path as written; `path` holds the resolved one).
    Path,
    /// The call as a whole (tools with no command and no path).
    Call,
}

/// One thing the decision looked at.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Item {
    pub kind: ItemKind,
    pub subject: String,
    /// The resolved path for path items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<PathClass>,
    pub verdict: Verdict,
    pub source: Source,
    pub reason: String,
}

/// The result of [`decide`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// The source and reason of the item that set the verdict.
    pub source: Source,
    pub reason: String,
    /// The subject (segment text or path) that set the verdict.
    pub subject: String,
    pub items: Vec<Item>,
    /// Rules that a "session" or "always" approval would add so the same ask does not come
    /// back: a stable command prefix (`Bash(cargo test *)`) or a path (`Read(//abs/.env)`).
    /// Empty when nothing can be remembered (floors, opaque, destructive).
    pub scope: Vec<String>,
    /// The shell analysis, for the audit log (empty for other tools).
    pub segments: Vec<Segment>,
    /// The shell command did not parse cleanly (the verdict is then at least ask).
    pub parse_error: bool,
    /// The analysis shows a shell command that changes no file (every segment read-only,
    /// whatever rule allowed it). False when unsure. Checkpoints skip such calls.
    pub read_only: bool,
}

/// One tool call to judge.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The tool name as called (matched case-insensitively).
    pub tool: &'a str,
    pub risk: Risk,
    /// The call's arguments (`command`, `cwd`/`workdir` for shell tools; `path`, `paths`,
    /// `file_path`, `files[].path` for file tools; `url` for fetch tools).
    pub args: &'a Value,
    pub mode: Mode,
    pub rules: &'a RuleSet,
    pub workspace: &'a Workspace,
    pub sandbox_available: bool,
}

fn rule_source(r: &Rule) -> Source {
    Source::Rule {
        rule: r.text.clone(),
        source: r.source.clone(),
    }
}

fn mode_outside(mode: Mode) -> Verdict {
    match mode {
        Mode::Safe | Mode::Plan => Verdict::Deny,
        Mode::Default | Mode::Auto => Verdict::Ask,
        Mode::Yolo => Verdict::Allow,
    }
}

fn mode_write(mode: Mode) -> Verdict {
    match mode {
        Mode::Safe | Mode::Default => Verdict::Ask,
        Mode::Plan => Verdict::Deny,
        Mode::Auto | Mode::Yolo => Verdict::Allow,
    }
}

fn mode_shell(mode: Mode, sandbox: bool) -> Verdict {
    match mode {
        Mode::Safe | Mode::Plan => Verdict::Deny,
        Mode::Default => Verdict::Ask,
        Mode::Auto if sandbox => Verdict::Allow,
        Mode::Auto => Verdict::Ask,
        Mode::Yolo => Verdict::Allow,
    }
}

fn unless_safe(mode: Mode, v: Verdict) -> Verdict {
    if mode == Mode::Safe || mode == Mode::Plan {
        Verdict::Deny
    } else {
        v
    }
}

/// What a call refused in plan mode is told (the model reads it as the result).
pub const PLAN_REFUSAL: &str = "fen is in plan mode: only read-only tools and commands run. Do not try to change anything yet; finish your plan and present it with exit_plan";

/// Judges one tool call. In plan mode, only what is plainly read-only runs: a call that would
/// be asked, a write-risk tool, and a shell command or write an allow rule (rather than the
/// read-only analysis) lets through are refused with [`PLAN_REFUSAL`]; floors and deny rules
/// keep their own reasons.
pub fn decide(req: &Request) -> Decision {
    let mut d = judge(req);
    let own_deny = d.verdict == Verdict::Deny && !matches!(d.source, Source::Mode);
    if req.mode == Mode::Plan && !own_deny {
        let by_rule = d
            .items
            .iter()
            .any(|i| i.verdict == Verdict::Allow && matches!(i.source, Source::Rule { .. }));
        if d.verdict != Verdict::Allow
            || req.risk == Risk::Write
            || (by_rule && req.risk != Risk::Read)
        {
            d.verdict = Verdict::Deny;
            d.source = Source::Mode;
            d.reason = PLAN_REFUSAL.into();
            d.scope.clear();
        }
    }
    d
}

fn judge(req: &Request) -> Decision {
    let tool = req.tool.to_ascii_lowercase();
    let mut items = Vec::new();
    let mut scope = Vec::new();
    let mut segments = Vec::new();
    let fam = family_of(&tool);
    let mut cache = ResolveCache::default();

    // Whole-tool deny and ask rules (bare names, or specifiers over other tools' values).
    for kind in [RuleKind::Deny, RuleKind::Ask] {
        let verdict = if kind == RuleKind::Deny {
            Verdict::Deny
        } else {
            Verdict::Ask
        };
        if let Some(r) = req.rules.of_kind(kind).find(|r| {
            r.covers_tool(&tool)
                && (r.is_bare()
                    || (fam == Family::Fetch
                        && url_arg(req.args).is_some_and(|u| r.matches_domain(&u)))
                    || (fam == Family::Other && r.matches_values(req.args)))
        }) {
            items.push(Item {
                kind: ItemKind::Call,
                subject: req.tool.to_string(),
                path: None,
                class: None,
                verdict,
                source: rule_source(r),
                reason: format!(
                    "{} rule {}",
                    if verdict == Verdict::Deny {
                        "deny"
                    } else {
                        "ask"
                    },
                    r.text
                ),
            });
            if verdict == Verdict::Deny {
                return finish(items, scope, segments);
            }
        }
    }

    let command = req.args.get("command").and_then(Value::as_str);
    // A command is analysed; a shell-risk tool with no command to analyse (an MCP server's
    // tool, job_kill) is judged as a whole below: the mode decides (default mode asks).
    let analyse = match command {
        Some(_) => req.risk == Risk::Shell || fam == Family::Shell,
        None => req.risk == Risk::Shell && fam == Family::Shell,
    };
    if analyse {
        let cwd = cwd_arg(req.args, req.workspace);
        let ctx = ShellContext {
            cwd,
            home: req.workspace.home.clone(),
        };
        let analysis = shell::analyze(command.unwrap_or(""), &ctx);
        for seg in &analysis.segments {
            judge_segment(req, &tool, seg, &mut items, &mut scope, &mut cache);
        }
        if analysis.segments.is_empty() {
            items.push(Item {
                kind: ItemKind::Call,
                subject: command.unwrap_or("").to_string(),
                path: None,
                class: None,
                verdict: Verdict::Allow,
                source: Source::Mode,
                reason: "empty command".into(),
            });
        }
        segments = analysis.segments;
        let read_only = !analysis.parse_error
            && items.iter().all(|i| {
                i.verdict == Verdict::Allow
                    && matches!(
                        i.reason.as_str(),
                        "read-only" | "reads only" | "empty command"
                    )
            });
        let mut d = finish(items, scope, segments);
        d.parse_error = analysis.parse_error;
        d.read_only = read_only;
        return d;
    }

    // File tools: classify every path argument.
    let paths = path_args(req.args);
    let access = if req.risk == Risk::Write {
        Access::Write
    } else {
        Access::Read
    };
    let cwd = cwd_arg(req.args, req.workspace);
    for raw in &paths {
        let abs = req.workspace.absolute(raw, &cwd);
        let pref = PathRef {
            raw: raw.clone(),
            path: Some(abs),
            contents: false,
            access,
            redirect: false,
            implicit: false,
        };
        let info = classify(req.workspace, &pref, &mut cache);
        let (v, src, reason) = judge_path(req, &tool, &pref, &info, false, &mut scope);
        items.push(Item {
            kind: ItemKind::Path,
            subject: raw.clone(),
            path: info.path.clone(),
            class: Some(info.class),
            verdict: v,
            source: src,
            reason,
        });
    }
    if paths.is_empty() {
        let allow_rule = req.rules.of_kind(RuleKind::Allow).find(|r| {
            r.covers_tool(&tool)
                && (r.is_bare()
                    || (fam == Family::Fetch
                        && url_arg(req.args).is_some_and(|u| r.matches_domain(&u)))
                    || (fam == Family::Other && r.matches_values(req.args)))
        });
        let (v, src, reason) = match (allow_rule, req.risk) {
            (Some(r), _) => (
                Verdict::Allow,
                rule_source(r),
                format!("allow rule {}", r.text),
            ),
            (None, Risk::Read) => (Verdict::Allow, Source::Mode, "read-only tool".into()),
            (None, Risk::Write) => (
                mode_write(req.mode),
                Source::Mode,
                format!("write tool in {:?} mode", req.mode).to_lowercase(),
            ),
            // No command reaches the OS sandbox here (an MCP server's tool runs in the
            // server): auto mode asks, as it does for shell commands without a sandbox.
            (None, Risk::Shell) => (
                mode_shell(req.mode, false),
                Source::Mode,
                "shell tool".into(),
            ),
        };
        if v == Verdict::Ask {
            scope.push(capitalize(&tool));
        }
        items.push(Item {
            kind: ItemKind::Call,
            subject: req.tool.to_string(),
            path: None,
            class: None,
            verdict: v,
            source: src,
            reason,
        });
    }
    finish(items, scope, segments)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn finish(items: Vec<Item>, mut scope: Vec<String>, segments: Vec<Segment>) -> Decision {
    // The strictest verdict; among equals a floor, then a rule, then the first item.
    let rank = |s: &Source| match s {
        Source::Floor => 2,
        Source::Rule { .. } => 1,
        _ => 0,
    };
    let top = items.iter().rev().max_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then(rank(&a.source).cmp(&rank(&b.source)))
    });
    let (verdict, source, reason, subject) = match top {
        Some(i) => (
            i.verdict,
            i.source.clone(),
            i.reason.clone(),
            i.subject.clone(),
        ),
        None => (
            Verdict::Allow,
            Source::Mode,
            "nothing to check".into(),
            String::new(),
        ),
    };
    // A deny cannot be approved, so there is nothing to remember.
    if verdict != Verdict::Ask {
        scope.clear();
    }
    let mut seen = std::collections::HashSet::new();
    scope.retain(|s| seen.insert(s.clone()));
    Decision {
        verdict,
        source,
        reason,
        subject,
        items,
        scope,
        segments,
        parse_error: false,
        read_only: false,
    }
}

fn classify(ws: &Workspace, p: &PathRef, cache: &mut ResolveCache) -> PathInfo {
    match &p.path {
        Some(path) => ws.classify_cached(path, p.contents, cache),
        None => PathInfo::unknown(),
    }
}

fn cwd_arg(args: &Value, ws: &Workspace) -> PathBuf {
    for key in ["cwd", "workdir", "working_directory"] {
        if let Some(c) = args
            .get(key)
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        {
            return ws.absolute(c, &ws.cwd);
        }
    }
    ws.cwd.clone()
}

fn url_arg(args: &Value) -> Option<String> {
    args.get("url").and_then(Value::as_str).map(str::to_string)
}

/// `path`, `file_path`, `paths[]`, `files[].path` (and `files[]` strings).
fn path_args(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["path", "file_path", "file", "directory", "dir"] {
        if let Some(p) = args.get(key).and_then(Value::as_str) {
            out.push(p.to_string());
        }
    }
    for key in ["paths", "files"] {
        if let Some(arr) = args.get(key).and_then(Value::as_array) {
            for v in arr {
                if let Some(s) = v.as_str() {
                    out.push(s.to_string());
                } else if let Some(s) = v.get("path").and_then(Value::as_str) {
                    out.push(s.to_string());
                }
            }
        }
    }
    out
}

/// Path rules of the right family for an access.
fn path_rule<'r>(
    rules: &'r RuleSet,
    kind: RuleKind,
    access: Access,
    paths: &[&Path],
    bare_ok: bool,
    tool: &str,
) -> Option<&'r Rule> {
    let want = if access == Access::Read {
        Family::Read
    } else {
        Family::Write
    };
    rules.of_kind(kind).find(|r| {
        r.family() == want
            && ((r.has_path_spec() && r.matches_path(paths))
                || (bare_ok && r.is_bare() && r.covers_tool(tool)))
    })
}

/// Verdict for one path. `in_shell`: the path belongs to a shell segment (then the segment's
/// own verdict covers writes inside the workspace).
fn judge_path(
    req: &Request,
    tool: &str,
    p: &PathRef,
    info: &PathInfo,
    in_shell: bool,
    scope: &mut Vec<String>,
) -> (Verdict, Source, String) {
    let writes = p.access != Access::Read;
    if writes && info.class == PathClass::Protected {
        let what = if info.fen_settings {
            "is fen's own permission settings or code (a model never changes its own permissions)"
        } else {
            "is git metadata that runs code"
        };
        return (
            Verdict::Deny,
            Source::Floor,
            format!("{} {what}", show(info, p)),
        );
    }
    if writes && info.block_device {
        return (
            Verdict::Deny,
            Source::Floor,
            format!("{} is a block device", show(info, p)),
        );
    }
    let mut cands: Vec<&Path> = Vec::new();
    if let Some(r) = &info.path {
        cands.push(r);
    }
    if let Some(l) = &p.path {
        cands.push(l);
    }
    if let Some(r) = path_rule(req.rules, RuleKind::Deny, p.access, &cands, !in_shell, tool) {
        return (
            Verdict::Deny,
            rule_source(r),
            format!("deny rule {}", r.text),
        );
    }
    if let Some(r) = path_rule(req.rules, RuleKind::Ask, p.access, &cands, !in_shell, tool) {
        return (Verdict::Ask, rule_source(r), format!("ask rule {}", r.text));
    }
    // Only a rule naming the path lifts secret/outside; a bare `Read`/`Edit` lifts the mode.
    let allow_path = req.rules.of_kind(RuleKind::Allow).find(|r| {
        r.has_path_spec()
            && r.family() == if writes { Family::Write } else { Family::Read }
            && r.matches_path(&cands)
    });
    if let Some(r) = allow_path {
        return (
            Verdict::Allow,
            rule_source(r),
            format!("allow rule {}", r.text),
        );
    }
    let rule_word = if writes { "Edit" } else { "Read" };
    let abs_rule = |info: &PathInfo| {
        info.path
            .as_ref()
            .map(|p| format!("{rule_word}(/{})", p.display()))
    };
    // Protected only matters for writes; a read goes by where the path is.
    let class = match info.class {
        PathClass::Protected if !writes && !info.in_workspace => PathClass::Outside,
        c => c,
    };
    match class {
        PathClass::Stream => (
            Verdict::Allow,
            Source::Mode,
            format!("{} is a stream", p.raw),
        ),
        PathClass::Unknown => (
            match req.mode {
                Mode::Safe => Verdict::Deny,
                Mode::Yolo => Verdict::Allow,
                _ => Verdict::Ask,
            },
            Source::Opaque,
            format!("`{}` cannot be resolved before it runs", p.raw),
        ),
        PathClass::Secret => {
            let v = mode_outside(req.mode);
            if v == Verdict::Ask {
                scope.extend(abs_rule(info));
            }
            (
                v,
                Source::Secret,
                format!("{} looks like a secret", show(info, p)),
            )
        }
        PathClass::Device | PathClass::Outside => {
            let v = mode_outside(req.mode);
            if v == Verdict::Ask {
                scope.extend(abs_rule(info));
            }
            (
                v,
                Source::Outside,
                format!("{} is outside the workspace", show(info, p)),
            )
        }
        PathClass::Workspace | PathClass::Protected => {
            if !writes || in_shell {
                return (
                    Verdict::Allow,
                    Source::Mode,
                    format!("{} is in the workspace", show(info, p)),
                );
            }
            if let Some(r) = req
                .rules
                .of_kind(RuleKind::Allow)
                .find(|r| r.is_bare() && r.family() == Family::Write && r.covers_tool(tool))
            {
                return (
                    Verdict::Allow,
                    rule_source(r),
                    format!("allow rule {}", r.text),
                );
            }
            let v = mode_write(req.mode);
            if v == Verdict::Ask {
                if let Some(path) = &info.path {
                    let rel = path
                        .parent()
                        .and_then(|d| {
                            req.workspace
                                .roots
                                .iter()
                                .find_map(|r| d.strip_prefix(r).ok())
                        })
                        .map(|d| d.display().to_string());
                    scope.push(match rel {
                        Some(d) if !d.is_empty() => format!("Edit(/{d}/**)"),
                        _ => "Edit(/*)".to_string(),
                    });
                }
            }
            (
                v,
                Source::Mode,
                format!("writes {} ({:?} mode)", show(info, p), req.mode).to_lowercase(),
            )
        }
    }
}

/// `grep -r`/`-R`/`--recursive`/`-d recurse`: reads every file under its directories.
fn recursive_reader(argv: &[String]) -> bool {
    matches!(
        argv.first().map(String::as_str),
        Some("grep" | "egrep" | "fgrep" | "zgrep")
    ) && argv[1..].iter().take_while(|a| *a != "--").any(|a| {
        a == "--recursive"
            || a == "--dereference-recursive"
            || a == "--directories=recurse"
            || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R']))
    })
}

fn implicit_may_be_secret(ws: &Workspace, p: &PathRef, cache: &mut ResolveCache) -> bool {
    let Some(path) = p.path.as_deref() else {
        return false;
    };
    if p.contents {
        return true;
    }
    // By name or place (`is_secret` checks the name too).
    ws.is_secret(path) || cache.is_link(path) || path.parent().is_some_and(|d| cache.is_link(d))
}

/// The first secret file a glob operand matches (`cat .e*v`, `cat certs/*.pem`), looked up
/// on the file system a few levels deep.
fn glob_secret(ws: &Workspace, p: &PathRef) -> Option<PathBuf> {
    if !p.contents || p.access != Access::Read || !p.raw.contains(['*', '?', '[']) {
        return None;
    }
    // The same glob in the same place is listed once a while (a model repeats its commands).
    static LISTINGS: super::secrets::Recent<(PathBuf, String), Option<PathBuf>> =
        super::secrets::Recent::new(1024);
    let key = (p.path.clone()?, p.raw.clone());
    LISTINGS.get_or(key, || glob_secret_uncached(ws, p))
}

fn glob_secret_uncached(ws: &Workspace, p: &PathRef) -> Option<PathBuf> {
    let base = p.path.as_ref()?;
    let pattern = if Path::new(&p.raw).is_absolute() {
        PathBuf::from(&p.raw)
    } else {
        // The glob's base is its directory part joined to the cwd; the rest is the pattern.
        let first_wild = p.raw.find(['*', '?', '['])?;
        let rest = match p.raw[..first_wild].rfind('/') {
            Some(slash) => &p.raw[slash + 1..],
            None => p.raw.as_str(),
        };
        base.join(rest)
    };
    let last = pattern.file_name().and_then(|n| n.to_str()).unwrap_or("*");
    if !super::secrets::glob_may_match_secret(last) {
        return None;
    }
    let depth = p.raw.matches('/').count() + 1;
    let glob = globset::GlobBuilder::new(&pattern.to_string_lossy())
        .literal_separator(true)
        .build()
        .ok()?
        .compile_matcher();
    let walker = ignore::WalkBuilder::new(base)
        .standard_filters(false)
        .hidden(false)
        .max_depth(Some(depth.min(4)))
        .build();
    walker
        .flatten()
        .take(5_000)
        .map(|e| e.into_path())
        .find(|path| glob.is_match(path) && ws.is_secret(path))
}

fn show(info: &PathInfo, p: &PathRef) -> String {
    info.path
        .as_ref()
        .map(|x| x.display().to_string())
        .unwrap_or_else(|| p.raw.clone())
}

fn judge_segment(
    req: &Request,
    tool: &str,
    seg: &Segment,
    items: &mut Vec<Item>,
    scope: &mut Vec<String>,
    cache: &mut ResolveCache,
) {
    // Operands the table does not describe count only when they name a secret.
    let mut paths: Vec<PathRef> = Vec::with_capacity(seg.paths.len());
    let mut infos: Vec<PathInfo> = Vec::with_capacity(seg.paths.len());
    for p in &seg.paths {
        // Any word of any program is checked for a secret: by name, where it lies, or a
        // symlink (it or its directory) that may lead to one; the rest is not classified.
        if p.implicit && !implicit_may_be_secret(req.workspace, p, cache) {
            continue;
        }
        let info = classify(req.workspace, p, cache);
        // A glob reads what it matches (`cat .e*v` reads `.env`); a recursive grep reads
        // every file under a directory, secrets included (the grep tool and rg skip them;
        // `grep -r` does not; with no directory the table gives it `.`).
        let reached = glob_secret(req.workspace, p).or_else(|| {
            (recursive_reader(&seg.argv) && p.access == Access::Read && !p.implicit)
                .then_some(p.path.as_deref())
                .flatten()
                .filter(|d| d.is_dir())
                .and_then(|d| super::secrets::in_tree_cached(d).into_iter().next())
        });
        if let Some(secret) = reached {
            let sp = PathRef {
                raw: secret.display().to_string(),
                path: Some(secret),
                contents: false,
                access: p.access,
                redirect: p.redirect,
                implicit: false,
            };
            infos.push(classify(req.workspace, &sp, cache));
            paths.push(sp);
        }
        if p.implicit && !(info.secret && info.class == PathClass::Secret) {
            continue;
        }
        paths.push(p.clone());
        infos.push(info);
    }
    let hz = floors::check(seg, &paths, &infos);
    let mode = req.mode;
    let subject = if seg.text.is_empty() {
        seg.argv.join(" ")
    } else {
        seg.text.clone()
    };

    let push = |items: &mut Vec<Item>, v: Verdict, src: Source, reason: String| {
        items.push(Item {
            kind: ItemKind::Segment,
            subject: subject.clone(),
            path: None,
            class: None,
            verdict: v,
            source: src,
            reason,
        });
    };
    if let Some(f) = hz.floor {
        items.push(Item {
            kind: ItemKind::Segment,
            // A floor about a path names the path refused, not the command around it.
            subject: hz.floor_path.clone().unwrap_or_else(|| subject.clone()),
            path: hz.floor_path.as_ref().map(PathBuf::from),
            class: None,
            verdict: Verdict::Deny,
            source: Source::Floor,
            reason: f,
        });
        return;
    }
    let cmd_rule = |kind: RuleKind| {
        req.rules.of_kind(kind).find(|r| {
            r.family() == Family::Shell
                && r.covers_tool(tool)
                && !seg.argv.is_empty()
                && r.matches_command(&seg.argv, &seg.wrappers, &seg.via)
        })
    };
    if let Some(r) = cmd_rule(RuleKind::Deny) {
        push(
            items,
            Verdict::Deny,
            rule_source(r),
            format!("deny rule {}", r.text),
        );
        return;
    }

    // Paths first: their verdicts stand whatever the command's verdict.
    let mut path_worst = Verdict::Allow;
    let mut path_items = Vec::new();
    for (p, info) in paths.iter().zip(&infos) {
        let (v, src, reason) = judge_path(req, tool, p, info, true, scope);
        path_worst = path_worst.max(v);
        if v != Verdict::Allow || !matches!(info.class, PathClass::Workspace | PathClass::Stream) {
            path_items.push(Item {
                kind: ItemKind::Path,
                subject: p.raw.clone(),
                path: info.path.clone(),
                class: Some(info.class),
                verdict: v,
                source: src,
                reason,
            });
        }
    }
    let deny_path = path_items.iter().any(|i| i.verdict == Verdict::Deny);
    items.extend(path_items);
    if deny_path {
        push(
            items,
            Verdict::Deny,
            Source::Mode,
            "a path it touches is denied".into(),
        );
        return;
    }

    let (v, src, reason) = if let Some(why) = &seg.opaque {
        (unless_safe(mode, Verdict::Ask), Source::Opaque, why.clone())
    } else if let Some(r) = cmd_rule(RuleKind::Ask) {
        (Verdict::Ask, rule_source(r), format!("ask rule {}", r.text))
    } else if let Some(d) = hz.destructive {
        let v = match mode {
            Mode::Yolo => Verdict::Allow,
            Mode::Safe => Verdict::Deny,
            _ => Verdict::Ask,
        };
        (v, Source::Destructive, d)
    } else {
        let escalates = seg.wrappers.iter().any(|w| w == "sudo" || w == "doas");
        let risky = risky_flag(&seg.argv);
        let allow = cmd_rule(RuleKind::Allow).filter(|r| {
            (!escalates
                || r.text.to_ascii_lowercase().contains("sudo")
                || r.text.to_ascii_lowercase().contains("doas"))
                && risky.is_none_or(|f| {
                    r.text
                        .split_whitespace()
                        .any(|w| w.trim_end_matches(')') == f)
                })
        });
        let writes = paths
            .iter()
            .zip(&infos)
            .any(|(p, i)| p.access != Access::Read && i.class != PathClass::Stream);
        // A rule names a command, not where its output goes: `Bash(echo *)` does not cover
        // `echo x > Makefile`. The redirect is judged as the write it is.
        let redirect_writes = paths
            .iter()
            .zip(&infos)
            .any(|(p, i)| p.redirect && p.access != Access::Read && i.class != PathClass::Stream);
        let allow = allow.filter(|_| !redirect_writes);
        if let Some(r) = allow {
            (
                Verdict::Allow,
                rule_source(r),
                format!("allow rule {}", r.text),
            )
        } else if !escalates && !seg.redirect_only && !writes && is_read_only(&seg.argv) {
            (Verdict::Allow, Source::Mode, "read-only".into())
        } else if seg.redirect_only && !writes && !escalates {
            (Verdict::Allow, Source::Mode, "reads only".into())
        } else {
            let v = mode_shell(mode, req.sandbox_available);
            if v == Verdict::Ask {
                scope.extend(scope_rule(seg));
            }
            let why = match (mode, req.sandbox_available) {
                (Mode::Auto, false) => "not read-only and no sandbox is available".to_string(),
                _ => format!("not read-only ({:?} mode)", mode).to_lowercase(),
            };
            (v, Source::Mode, why)
        }
    };
    push(items, v, src, reason);
}

/// Heads that are never offered as a prefix rule: approving them would approve anything.
const BANNED_PREFIX: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python2", "python3", "node", "perl",
    "ruby", "php", "lua", "deno", "bun", "env", "sudo", "doas", "su", "eval", "exec", "xargs",
    "command", "builtin", "nohup", "timeout", "nice", "time", "stdbuf", "setsid", "watch", "find",
    "awk", "gawk", "sed", "ssh", "docker", "kubectl", "npx", "pnpx", "bunx", "uvx", "source", ".",
];

/// Commands whose first arguments name a subcommand: how many words the prefix keeps.
fn arity(argv: &[String]) -> usize {
    let head = argv[0].as_str();
    let sub = argv.get(1).map(String::as_str).unwrap_or("");
    match head {
        "npm" | "pnpm" | "yarn" | "bun" if sub == "run" || sub == "run-script" => 3,
        "uv" | "poetry" | "pdm" | "hatch" if sub == "run" => 3,
        "bundle" if sub == "exec" => 3,
        "gh" | "glab" | "aws" | "gcloud" | "az" => 3,
        "docker" | "podman" if sub == "compose" => 3,
        "git" | "cargo" | "npm" | "pnpm" | "yarn" | "go" | "make" | "just" | "pip" | "pip3"
        | "uv" | "poetry" | "rustup" | "mvn" | "gradle" | "./gradlew" | "dotnet" | "bundle"
        | "rake" | "mix" | "stack" | "cabal" | "swift" | "zig" | "helm" | "brew" | "apt"
        | "apt-get" | "systemctl" | "terraform" | "tofu" | "composer" | "gem" | "conda" | "pdm"
        | "hatch" | "nix" | "bazel" | "ninja" | "cmake" | "meson" | "tsc" | "deno" | "bun"
        | "jest" | "vitest" | "pytest" | "tox" | "nox" | "rustfmt" | "clippy-driver" => 2,
        _ => 1,
    }
}

/// The rule a "session"/"always" approval of this segment would add.
pub fn scope_rule(seg: &Segment) -> Option<String> {
    if seg.argv.is_empty()
        || seg.opaque.is_some()
        || seg.dynamic && seg.argv.iter().any(|a| a.contains('$'))
    {
        return None;
    }
    let head = seg.argv[0].as_str();
    let quote = |a: &str| {
        if a.contains(char::is_whitespace) || a.contains(['*', '(', ')', '"', '\'']) || a.is_empty()
        {
            format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\""))
        } else {
            a.to_string()
        }
    };
    if BANNED_PREFIX.contains(&head) || head.starts_with("python3.") {
        // Only the exact command.
        return Some(format!(
            "Bash({})",
            seg.argv
                .iter()
                .map(|a| quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let mut keep: Vec<String> = vec![head.to_string()];
    let mut idx = 1;
    // Skip git/cargo global options before the subcommand (`git -C x`, `cargo +nightly`).
    if head == "git" {
        while let Some(a) = seg.argv.get(idx) {
            if a == "-C" || a == "-c" {
                idx += 2;
            } else if a.starts_with('-') {
                idx += 1;
            } else {
                break;
            }
        }
    } else if head == "cargo" && seg.argv.get(1).is_some_and(|a| a.starts_with('+')) {
        idx = 2;
    }
    let mut shifted: Vec<String> = vec![head.to_string()];
    shifted.extend(seg.argv.iter().skip(idx).cloned());
    let want = arity(&shifted);
    while keep.len() < want {
        match seg.argv.get(idx) {
            Some(a) if !a.starts_with('-') && !a.contains(['/', '$', '*']) => {
                keep.push(a.clone());
                idx += 1;
            }
            _ => break,
        }
    }
    Some(format!(
        "Bash({} *)",
        keep.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
    ))
}
