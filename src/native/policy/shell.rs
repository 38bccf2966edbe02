//! Shell command analysis: parses a bash command line with tree-sitter-bash and flattens it into
//! [`Segment`]s, one per simple command that would run, with wrappers peeled, argv unquoted, the
//! effective working directory tracked through `cd`, and the paths each segment reads and writes.
//!
//! Parser choice: tree-sitter-bash (MIT) over brush-parser (MIT). tree-sitter is a table-driven
//! GLR parser with error recovery: it never fails outright, marks the broken region with ERROR
//! nodes (so the rest of the command is still analysed and floors still fire), and does not
//! recurse on the Rust stack, so a 4 KB run of `((((` cannot overflow it. It is what codex and
//! opencode parse with, so its gaps are known and listed in the reference notes. Build cost: one
//! C file (parser.c, ~10 MB) compiled once by `cc`, which the tree already has; no proc macros.
//! brush-parser is pure Rust but is a recursive-descent `peg` grammar (stack depth grows with
//! nesting), fails the whole input on the first error, and pulls `insta`, `cached`, `bon` and
//! `tracing` as normal dependencies.
//!
//! Recursion (depth <= [`MAX_DEPTH`]): `$(...)`, backticks, `<(...)`/`>(...)`, subshells, brace
//! groups, `bash|sh|zsh|dash|ksh -c '...'`, `eval`, `xargs CMD`, `find -exec ... ;`, `trap`,
//! `watch`, `env -S`, and heredocs or here-strings fed to a shell. Anything the analyser cannot
//! see through is marked opaque on the segment ([`Segment::opaque`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser};

use super::commands;

/// Deepest nesting of `bash -c`, `$(...)`, `eval` and the like that is analysed; deeper input
/// is opaque.
pub const MAX_DEPTH: u8 = 8;

/// What the analysis knows about the process that runs the command.
#[derive(Debug, Clone)]
pub struct ShellContext {
    /// The working directory the command starts in (absolute).
    pub cwd: PathBuf,
    /// The user's home directory, for `~` and `$HOME`.
    pub home: PathBuf,
}

/// How a segment touches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read (operand of cat/grep/..., `<` redirect, `cp` source).
    Read,
    /// Created, overwritten, appended to or changed (redirect targets, tee, touch, chmod, ...).
    Write,
    /// Removed (rm, rmdir, mv source, unlink, shred).
    Delete,
}

/// A path operand or redirect target of a segment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathRef {
    /// The word as written after unquoting (`~` expanded), or its source text if dynamic.
    pub raw: String,
    /// The absolute path (lexically joined to the segment's cwd; not yet resolved against the
    /// file system). `None` when the word has an expansion the analyser cannot evaluate or the
    /// cwd is unknown.
    pub path: Option<PathBuf>,
    /// The operation reaches the entries under `path` (a glob like `dir/*`, `find DIR -exec`,
    /// xargs input), not only `path` itself.
    pub contents: bool,
    pub access: Access,
    /// Came from a redirect (`>`, `>>`, `<`, `2>`, `&>`, ...) rather than an operand.
    pub redirect: bool,
}

/// One simple command that would run, after peeling wrappers.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Segment {
    /// The source text of the command as written (for display).
    pub text: String,
    /// The peeled, unquoted argv: wrappers removed, `/bin/rm` and `\rm` normalised to `rm`.
    /// Arguments the analyser cannot evaluate appear as their source text and set `dynamic`.
    pub argv: Vec<String>,
    /// Some argument (or the command name) contains an expansion that was not evaluated.
    pub dynamic: bool,
    /// Wrappers peeled off the front, outermost first (`sudo`, `env`, `timeout`, ...).
    pub wrappers: Vec<String>,
    /// How the analyser reached this segment, outermost first (`bash -c`, `$(...)`, `xargs`,
    /// `find -exec`, `eval`, `heredoc`, ...). Empty for a top-level segment.
    pub via: Vec<String>,
    /// The segment's effective working directory (`None` once a `cd` went somewhere unknown).
    pub cwd: Option<PathBuf>,
    /// Paths read, written or deleted, in order of appearance.
    pub paths: Vec<PathRef>,
    /// Why the analyser cannot vouch for this segment (parse error, expansion in command
    /// position, `cd $UNKNOWN`, too deep, a shell reading an unknown stdin, ...).
    pub opaque: Option<String>,
    /// The segment has no command, only redirects (`> file`, or the redirects of a compound
    /// statement such as `{ ...; } > out`).
    pub redirect_only: bool,
    /// Takes extra arguments from stdin (`xargs CMD`) or from `find -exec`.
    pub extra_args: bool,
    /// Reads the output of another command through a pipe.
    pub piped_stdin: bool,
    /// A floor the parser saw in the syntax itself (a fork bomb).
    pub hazard: Option<String>,
}

impl Segment {
    /// The syntactic floor found by the parser, if any.
    pub fn hazard_text(&self) -> Option<String> {
        self.hazard.clone()
    }

    /// The command name (argv[0]) or "" for a redirect-only segment.
    pub fn name(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }
}

/// The result of [`analyze`]: every segment that would run, in source order (a container such
/// as `bash -c '...'` contributes its inner segments, not itself).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ShellAnalysis {
    pub segments: Vec<Segment>,
    /// The whole input failed to parse cleanly (an ERROR or MISSING node somewhere). When set,
    /// at least one segment also carries an `opaque` reason.
    pub parse_error: bool,
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `source` with tree-sitter-bash, reusing a per-thread parser. `None` when the parser
/// cannot be created or gives up (treated as opaque by the caller).
///
/// Every non-ASCII byte is handed to the parser as `a`: tree-sitter-bash 0.25.1 segfaults on
/// some of them (`{` followed by U+E01DE, found by the property test). Bash treats non-ASCII
/// characters as word characters, so the tree has the same shape; byte offsets are unchanged and
/// all text is taken from the original.
fn parse(source: &str) -> Option<tree_sitter::Tree> {
    let ascii: std::borrow::Cow<[u8]> = if source.is_ascii() {
        std::borrow::Cow::Borrowed(source.as_bytes())
    } else {
        std::borrow::Cow::Owned(
            source
                .bytes()
                .map(|b| if b.is_ascii() { b } else { b'a' })
                .collect(),
        )
    };
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(&ascii, None)
    })
}

/// Analyses a shell command line.
pub fn analyze(command: &str, ctx: &ShellContext) -> ShellAnalysis {
    let mut walker = Walker {
        home: ctx.home.clone(),
        out: Vec::new(),
        parse_error: false,
    };
    let mut state = State {
        cwd: Some(ctx.cwd.clone()),
        vars: HashMap::new(),
    };
    walker.script(command, &mut state, &Frame::top());
    if walker.out.is_empty() && walker.parse_error {
        walker.out.push(Segment {
            text: command.to_string(),
            opaque: Some("the command could not be parsed".into()),
            cwd: state.cwd.clone(),
            ..Segment::default()
        });
    }
    ShellAnalysis {
        segments: walker.out,
        parse_error: walker.parse_error,
    }
}

/// Mutable shell state that flows from one statement to the next.
#[derive(Clone)]
struct State {
    cwd: Option<PathBuf>,
    /// Variables assigned a literal value earlier in the same command; `None` = assigned
    /// something unknown.
    vars: HashMap<String, Option<String>>,
}

/// Where we are in the recursion.
#[derive(Clone)]
struct Frame {
    depth: u8,
    via: Vec<String>,
}

impl Frame {
    fn top() -> Self {
        Frame {
            depth: 0,
            via: Vec::new(),
        }
    }
    fn nested(&self, how: &str) -> Frame {
        let mut via = self.via.clone();
        via.push(how.to_string());
        Frame {
            depth: self.depth.saturating_add(1),
            via,
        }
    }
}

/// The value of a shell word after quote removal.
#[derive(Debug, Clone, Default)]
struct Val {
    text: String,
    /// Contains an expansion that could not be evaluated.
    dynamic: bool,
    /// Contains an unquoted glob or brace character (`* ? [ {`).
    glob: bool,
    /// The word is a process substitution (`<(...)`), i.e. a /dev/fd path.
    procsub: bool,
}

/// An evaluated redirect.
struct Redir {
    target: Val,
    access: Access,
    /// A heredoc or here-string body (text) fed to stdin.
    stdin_text: Option<String>,
}

struct Walker {
    home: PathBuf,
    out: Vec<Segment>,
    parse_error: bool,
}

/// Kinds of nodes that are statements the walker descends into generically.
fn is_word_kind(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "number"
            | "brace_expression"
    )
}

impl Walker {
    /// Parses and walks a whole script (top level or a recursed string).
    fn script(&mut self, source: &str, state: &mut State, frame: &Frame) {
        if frame.depth > MAX_DEPTH {
            self.opaque_segment(source, state, frame, "nested deeper than 8 levels");
            return;
        }
        let Some(tree) = parse(source) else {
            self.parse_error = true;
            self.opaque_segment(source, state, frame, "the command could not be parsed");
            return;
        };
        let root = tree.root_node();
        let src = source.as_bytes();
        if root.has_error() {
            self.parse_error = true;
            let at = first_error(root)
                .map(|n| snippet(src, n))
                .unwrap_or_default();
            self.opaque_segment(
                source,
                state,
                frame,
                &format!("the command could not be parsed (near `{at}`)"),
            );
        }
        self.statement(root, src, state, frame, &[]);
    }

    fn opaque_segment(&mut self, text: &str, state: &State, frame: &Frame, why: &str) {
        self.out.push(Segment {
            text: truncate(text, 200),
            via: frame.via.clone(),
            cwd: state.cwd.clone(),
            opaque: Some(why.to_string()),
            ..Segment::default()
        });
    }

    /// Walks any statement-level node. `redirs` are redirects inherited from an enclosing
    /// `redirected_statement`.
    fn statement(
        &mut self,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
        redirs: &[Node],
    ) {
        match node.kind() {
            "command" => self.command(node, src, state, frame, redirs, false),
            "redirected_statement" => {
                let mut all: Vec<Node> = redirs.to_vec();
                let mut body = None;
                let mut cur = node.walk();
                for (i, child) in node.children(&mut cur).enumerate() {
                    if node.field_name_for_child(i as u32) == Some("body") {
                        body = Some(child);
                    } else if child.kind().ends_with("_redirect") {
                        all.push(child);
                    }
                }
                match body {
                    Some(b) if b.kind() == "command" => {
                        self.command(b, src, state, frame, &all, false)
                    }
                    Some(b) if b.kind() == "list" => {
                        // tree-sitter hangs `cd x && echo y > f`'s redirect on the whole list;
                        // bash binds it to the last command, so it sees the list's `cd`.
                        self.statement(b, src, state, frame, &[]);
                        self.redirect_only(node, &all, src, state, frame);
                    }
                    Some(b) => {
                        // Redirects of a compound statement: a redirect-only segment plus the
                        // body's own segments.
                        self.redirect_only(node, &all, src, state, frame);
                        self.statement(b, src, state, frame, &[]);
                    }
                    None => self.redirect_only(node, &all, src, state, frame),
                }
            }
            "pipeline" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                let start = self.out.len();
                for (i, child) in kids.iter().enumerate() {
                    let before = self.out.len();
                    // Each side of a pipe runs in a subshell: cd does not leak.
                    let mut sub = state.clone();
                    self.statement(*child, src, &mut sub, frame, &[]);
                    if i > 0 {
                        for s in &mut self.out[before..] {
                            if s.via.len() == frame.via.len() {
                                s.piped_stdin = true;
                            }
                        }
                    }
                }
                // A shell at the receiving end of a pipe runs code the analyser cannot see.
                for s in &mut self.out[start..] {
                    if s.piped_stdin && s.opaque.is_none() && reads_script_from_stdin(&s.argv) {
                        s.opaque = Some(format!("`{}` runs commands read from a pipe", s.name()));
                    }
                }
            }
            "subshell" => {
                let mut sub = state.clone();
                self.children_statements(node, src, &mut sub, &frame.nested("( )"));
            }
            "variable_assignment" => {
                self.assignment(node, src, state, frame, true);
            }
            "variable_assignments" => {
                let mut cur = node.walk();
                for c in node.named_children(&mut cur) {
                    self.assignment(c, src, state, frame, true);
                }
            }
            "function_definition" => {
                // A function that pipes into itself in the background is a fork bomb.
                let name = node
                    .child_by_field_name("name")
                    .map(|n| text(src, n).to_string())
                    .unwrap_or_default();
                let body: String = text(src, node)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if !name.is_empty() && body.contains(&format!("{name}|{name}")) {
                    let mut seg = self.new_segment(node, src, state, frame);
                    seg.argv = vec![name.clone()];
                    seg.hazard = Some(format!("fork bomb: `{name}` pipes into itself"));
                    self.out.push(seg);
                }
                // The body may run later under the function's name: analyse it as if it ran.
                let mut sub = state.clone();
                self.children_statements(node, src, &mut sub, &frame.nested("function"));
            }
            "for_statement" | "select_statement" => {
                let mut cur = node.walk();
                for (i, child) in node.children(&mut cur).enumerate() {
                    match node.field_name_for_child(i as u32) {
                        Some("variable") => {
                            let name = text(src, child).to_string();
                            state.vars.insert(name, None);
                        }
                        Some("value") => {
                            self.eval_word(child, src, state, frame);
                        }
                        Some("body") => self.statement(child, src, state, frame, &[]),
                        _ => {}
                    }
                }
            }
            "comment" | "heredoc_end" | "heredoc_start" | "file_descriptor" => {}
            "ERROR" => {
                self.parse_error = true;
                self.children_statements(node, src, state, frame);
            }
            "declaration_command" | "unset_command" => {
                self.declaration(node, src, state, frame, redirs)
            }
            "test_command" => {
                // `[[ ... ]]`: read-only, but expansions inside may run commands.
                self.substitutions_in(node, src, state, frame);
                let mut seg = self.new_segment(node, src, state, frame);
                seg.argv = vec!["[[".into()];
                self.attach_redirects(&mut seg, redirs, src, state, frame);
                self.out.push(seg);
            }
            k if is_word_kind(k) => {
                // A bare word at statement level (inside ERROR or odd constructs): still run
                // its substitutions.
                self.eval_word(node, src, state, frame);
            }
            _ => self.children_statements(node, src, state, frame),
        }
    }

    fn children_statements(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) {
        if frame.depth > MAX_DEPTH {
            self.opaque_segment(text(src, node), state, frame, "nested deeper than 8 levels");
            return;
        }
        let mut cur = node.walk();
        // Iterated in place: one allocation less per statement list.
        for child in node.named_children(&mut cur) {
            if child.kind() == "ERROR" || child.is_missing() {
                self.parse_error = true;
            }
            self.statement(child, src, state, frame, &[]);
        }
    }

    /// Evaluates command substitutions anywhere below `node` (for constructs whose words are
    /// not otherwise evaluated, such as `[[ ]]`, arithmetic and heredoc bodies).
    fn substitutions_in(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) {
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            match child.kind() {
                "command_substitution" | "process_substitution" => {
                    self.eval_word(child, src, state, frame);
                }
                _ => self.substitutions_in(child, src, state, frame),
            }
        }
    }

    fn new_segment(&self, node: Node, src: &[u8], state: &State, frame: &Frame) -> Segment {
        Segment {
            text: truncate(text(src, node), 400),
            via: frame.via.clone(),
            cwd: state.cwd.clone(),
            ..Segment::default()
        }
    }

    fn redirect_only(
        &mut self,
        node: Node,
        redirs: &[Node],
        src: &[u8],
        state: &mut State,
        frame: &Frame,
    ) {
        let mut seg = self.new_segment(node, src, state, frame);
        seg.redirect_only = true;
        self.attach_redirects(&mut seg, redirs, src, state, frame);
        if !seg.paths.is_empty() || seg.opaque.is_some() {
            self.out.push(seg);
        }
    }

    /// Evaluates redirects and adds their targets to `seg.paths`; returns the text fed to
    /// stdin by a heredoc or here-string, if any.
    fn attach_redirects(
        &mut self,
        seg: &mut Segment,
        redirs: &[Node],
        src: &[u8],
        state: &mut State,
        frame: &Frame,
    ) -> Option<String> {
        let mut stdin_text = None;
        for r in redirs {
            for redir in self.redirect(*r, src, state, frame) {
                if let Some(t) = redir.stdin_text {
                    stdin_text = Some(t);
                    continue;
                }
                let v = redir.target;
                if v.procsub {
                    continue;
                }
                if !v.dynamic && (v.text == "-" || v.text.chars().all(|c| c.is_ascii_digit())) {
                    // `2>&1`, `>&-`: a descriptor, not a file.
                    continue;
                }
                seg.dynamic |= v.dynamic;
                seg.paths
                    .push(path_ref(&v, redir.access, true, state.cwd.as_deref()));
            }
        }
        stdin_text
    }

    fn redirect(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) -> Vec<Redir> {
        let mut out = Vec::new();
        match node.kind() {
            "file_redirect" => {
                let mut op = String::new();
                let mut cur = node.walk();
                let kids: Vec<Node> = node.children(&mut cur).collect();
                for (i, child) in kids.iter().enumerate() {
                    let field = node.field_name_for_child(i as u32);
                    if !child.is_named() {
                        op.push_str(text(src, *child));
                    } else if field == Some("destination") || is_word_kind(child.kind()) {
                        let v = self.eval_word(*child, src, state, frame);
                        let access = match op.as_str() {
                            "<" | "<&" | "<&-" => Access::Read,
                            _ => Access::Write,
                        };
                        if op == "<>" {
                            out.push(Redir {
                                target: v.clone(),
                                access: Access::Read,
                                stdin_text: None,
                            });
                        }
                        out.push(Redir {
                            target: v,
                            access,
                            stdin_text: None,
                        });
                    }
                }
            }
            "herestring_redirect" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                for child in kids {
                    if is_word_kind(child.kind()) {
                        let v = self.eval_word(child, src, state, frame);
                        out.push(Redir {
                            target: Val::default(),
                            access: Access::Read,
                            stdin_text: Some(if v.dynamic { String::new() } else { v.text }),
                        });
                    }
                }
            }
            "heredoc_redirect" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                for child in kids {
                    match child.kind() {
                        "heredoc_body" => {
                            // An unquoted heredoc expands `$(...)` in its body.
                            self.substitutions_in(child, src, state, frame);
                            out.push(Redir {
                                target: Val::default(),
                                access: Access::Read,
                                stdin_text: Some(text(src, child).to_string()),
                            });
                        }
                        "file_redirect" | "herestring_redirect" => {
                            out.extend(self.redirect(child, src, state, frame));
                        }
                        "heredoc_start" | "heredoc_end" | "file_descriptor" => {}
                        k if is_word_kind(k) => {
                            self.eval_word(child, src, state, frame);
                        }
                        _ => {
                            // `cat <<EOF | sh`, `<<EOF && cmd`: the rest of the line.
                            let mut sub = state.clone();
                            let start = self.out.len();
                            self.statement(child, src, &mut sub, frame, &[]);
                            for s in &mut self.out[start..] {
                                if s.opaque.is_none() && reads_script_from_stdin(&s.argv) {
                                    s.opaque = Some(format!(
                                        "`{}` runs commands read from a pipe",
                                        s.name()
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn assignment(
        &mut self,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
        persist: bool,
    ) -> Option<(String, Val)> {
        let name = node
            .child_by_field_name("name")
            .map(|n| text(src, n).to_string())?;
        let val = match node.child_by_field_name("value") {
            Some(v) if is_word_kind(v.kind()) => self.eval_word(v, src, state, frame),
            Some(v) => {
                self.substitutions_in(v, src, state, frame);
                Val {
                    text: text(src, v).to_string(),
                    dynamic: true,
                    ..Val::default()
                }
            }
            None => Val::default(),
        };
        if persist {
            let known = (!val.dynamic).then(|| val.text.clone());
            state.vars.insert(name.clone(), known);
        }
        Some((name, val))
    }

    fn declaration(
        &mut self,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
        redirs: &[Node],
    ) {
        let mut seg = self.new_segment(node, src, state, frame);
        let mut cur = node.walk();
        let kids: Vec<Node> = node.children(&mut cur).collect();
        for child in kids {
            if !child.is_named() {
                seg.argv.push(text(src, child).to_string());
            } else if child.kind() == "variable_assignment" {
                if let Some((n, v)) = self.assignment(child, src, state, frame, true) {
                    seg.argv.push(format!("{n}={}", v.text));
                }
            } else if child.kind() == "variable_name" {
                let n = text(src, child).to_string();
                state.vars.insert(n.clone(), None);
                seg.argv.push(n);
            } else if is_word_kind(child.kind()) {
                let v = self.eval_word(child, src, state, frame);
                seg.dynamic |= v.dynamic;
                seg.argv.push(v.text);
            }
        }
        self.attach_redirects(&mut seg, redirs, src, state, frame);
        self.out.push(seg);
    }

    /// A simple command: evaluate words, peel wrappers, recurse into containers, collect paths.
    fn command(
        &mut self,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
        redirs: &[Node],
        _piped: bool,
    ) {
        let mut seg = self.new_segment(node, src, state, frame);
        let mut words: Vec<Val> = Vec::new();
        let mut all_redirs: Vec<Node> = Vec::new();
        let mut name_dynamic = false;
        let mut prefix_env: Vec<(String, Val)> = Vec::new();
        let mut cur = node.walk();
        let kids: Vec<Node> = node.children(&mut cur).collect();
        for child in kids {
            match child.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(child, src, state, frame, false) {
                        prefix_env.push(a);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    all_redirs.push(child)
                }
                "command_name" => {
                    let mut v = Val::default();
                    let mut c2 = child.walk();
                    let inner: Vec<Node> = child.named_children(&mut c2).collect();
                    for n in inner {
                        let w = self.eval_word(n, src, state, frame);
                        v.text.push_str(&w.text);
                        v.dynamic |= w.dynamic;
                        v.glob |= w.glob;
                    }
                    if inner_has_expansion(child) {
                        name_dynamic = true;
                    }
                    words.push(v);
                }
                "subshell" => {
                    // `cmd (...)`: odd, but still run what is inside.
                    let mut sub = state.clone();
                    self.children_statements(child, src, &mut sub, &frame.nested("( )"));
                }
                "ERROR" => {
                    self.parse_error = true;
                    seg.opaque = Some("the command could not be parsed".into());
                    self.children_statements(child, src, state, frame);
                }
                k if child.is_named() && (is_word_kind(k) || k == "regex") => {
                    words.push(self.eval_word(child, src, state, frame));
                }
                _ if !child.is_named() => {
                    let t = text(src, child);
                    if !t.trim().is_empty() {
                        words.push(Val {
                            text: t.to_string(),
                            ..Val::default()
                        });
                    }
                }
                _ => {
                    self.substitutions_in(child, src, state, frame);
                }
            }
        }
        all_redirs.extend_from_slice(redirs);
        let stdin_text = self.attach_redirects(&mut seg, &all_redirs, src, state, frame);

        if words.is_empty() {
            // Only assignments and/or redirects: `FOO=1 > out`.
            seg.redirect_only = true;
            if !seg.paths.is_empty() || seg.opaque.is_some() {
                self.out.push(seg);
            }
            return;
        }
        if name_dynamic && seg.opaque.is_none() {
            seg.opaque = Some(format!(
                "expansion in command position: `{}`",
                truncate(&words[0].text, 80)
            ));
        }
        let _ = prefix_env;
        self.finish_command(seg, words, stdin_text, state, frame);
    }

    /// Peels wrappers from evaluated words and dispatches containers; pushes the segment(s).
    fn finish_command(
        &mut self,
        mut seg: Segment,
        mut words: Vec<Val>,
        stdin_text: Option<String>,
        state: &mut State,
        frame: &Frame,
    ) {
        if frame.depth > MAX_DEPTH {
            seg.opaque = Some("nested deeper than 8 levels".into());
            self.out.push(seg);
            return;
        }
        // Peel wrappers until the real command shows.
        while let Some(first) = words.first() {
            if first.dynamic {
                break;
            }
            let name = normalize_name(&first.text);
            let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
            match commands::peel(&name, &texts) {
                commands::Peel::No => break,
                commands::Peel::Skip(n) => {
                    seg.wrappers.push(name.clone());
                    if name == "env" {
                        // `env -C DIR` changes the directory; `env -S STRING` splits a string.
                        if let Some(dir) = commands::env_chdir(&texts) {
                            let d = Val {
                                text: dir.to_string(),
                                ..Val::default()
                            };
                            seg.cwd = join_cwd(seg.cwd.as_deref(), &d);
                        }
                    }
                    words.drain(..n.min(words.len()));
                }
                commands::Peel::Split { skip, string } => {
                    seg.wrappers.push(name.clone());
                    let joined = string.to_string();
                    let rest: Vec<Val> = words.split_off(skip.min(words.len()));
                    let mut sub = state.clone();
                    sub.cwd = seg.cwd.clone();
                    let extra: Vec<String> = rest.iter().map(|w| shell_quote(&w.text)).collect();
                    let script = if extra.is_empty() {
                        joined
                    } else {
                        format!("{joined} {}", extra.join(" "))
                    };
                    self.script(&script, &mut sub, &frame.nested(&name));
                    return;
                }
                commands::Peel::Opaque(why) => {
                    seg.wrappers.push(name.clone());
                    seg.opaque.get_or_insert(why);
                    break;
                }
            }
        }
        if words.is_empty() {
            // `env`, `time`, `nohup` alone: prints or does nothing.
            seg.argv = seg.wrappers.first().cloned().into_iter().collect();
            self.out.push(seg);
            return;
        }
        for w in &words {
            seg.dynamic |= w.dynamic;
        }
        let name = if words[0].dynamic {
            words[0].text.clone()
        } else {
            normalize_name(&words[0].text)
        };
        seg.argv = std::iter::once(name.clone())
            .chain(words[1..].iter().map(|w| w.text.clone()))
            .collect();

        // Containers whose argument is more shell.
        let texts: Vec<&str> = seg.argv.iter().map(String::as_str).collect();
        match commands::container(&texts) {
            commands::Container::None => {}
            commands::Container::Script { how, script } => {
                let mut sub = state.clone();
                sub.cwd = seg.cwd.clone();
                let script = script.to_string();
                self.script(&script, &mut sub, &frame.nested(&how));
                return;
            }
            commands::Container::Stdin { how } => {
                if let Some(body) = stdin_text.as_ref().filter(|b| !b.is_empty()) {
                    let mut sub = state.clone();
                    sub.cwd = seg.cwd.clone();
                    self.script(body, &mut sub, &frame.nested(&how));
                    return;
                }
                if !seg.piped_stdin {
                    // Reads from the terminal or an unknown stdin.
                    seg.opaque
                        .get_or_insert_with(|| format!("`{name}` runs commands read from stdin"));
                }
            }
            commands::Container::Argv { how, ranges, with } => {
                if how == "find -exec" {
                    // The find itself (minus its -exec clauses) reads its start directories.
                    let mut outer = seg.clone();
                    outer.argv = seg
                        .argv
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !ranges.iter().any(|(a, b)| *i + 1 >= *a && *i <= *b))
                        .map(|(_, a)| a.clone())
                        .collect();
                    let texts: Vec<&str> = outer.argv.iter().map(String::as_str).collect();
                    let (paths, opq) = commands::collect_paths(&texts, outer.cwd.as_deref());
                    outer.paths.extend(paths);
                    if let Some(o) = opq {
                        outer.opaque.get_or_insert(o);
                    }
                    self.out.push(outer);
                }
                for (at, end) in ranges {
                    let end = end.min(words.len());
                    let at = at.min(end);
                    let mut inner_words: Vec<Val> = words[at..end].to_vec();
                    let inner = Segment {
                        text: seg.argv[at..end].join(" "),
                        via: frame.nested(&how).via,
                        cwd: seg.cwd.clone(),
                        extra_args: true,
                        opaque: seg.opaque.clone(),
                        wrappers: seg.wrappers.clone(),
                        ..Segment::default()
                    };
                    // `{}` / xargs input: entries under `with` (find's start dirs), or unknown.
                    let mut placeholder = false;
                    for w in &mut inner_words {
                        if w.text.contains("{}") {
                            placeholder = true;
                            match &with {
                                Some(dir) => {
                                    w.text = w.text.replace("{}", &format!("{dir}/*"));
                                    w.glob = true;
                                }
                                None => w.dynamic = true,
                            }
                        }
                    }
                    if !placeholder && how == "xargs" {
                        inner_words.push(Val {
                            text: "{stdin}".into(),
                            dynamic: true,
                            ..Val::default()
                        });
                    }
                    if inner_words.is_empty() {
                        inner_words.push(Val {
                            text: "echo".into(),
                            ..Val::default()
                        });
                    }
                    let f = frame.nested(&how);
                    self.finish_command(inner, inner_words, None, state, &f);
                }
                return;
            }
        }

        // cd / pushd / popd change the state for what follows.
        if matches!(name.as_str(), "cd" | "pushd" | "popd") {
            let target = words.iter().skip(1).find(|w| {
                !(w.text.starts_with('-') && w.text.len() > 1 && !w.dynamic) || w.text == "-"
            });
            let new_cwd = match (name.as_str(), target) {
                ("popd", _) => None,
                (_, None) => Some(self.home.clone()),
                (_, Some(t)) if t.text == "-" || t.dynamic || t.glob => None,
                (_, Some(t)) => join_cwd(seg.cwd.as_deref(), t),
            };
            if new_cwd.is_none() {
                seg.opaque.get_or_insert_with(|| {
                    format!("`{}` goes somewhere the analyser cannot tell", seg.text)
                });
            }
            state.cwd = new_cwd;
            self.out.push(seg);
            return;
        }

        let texts: Vec<&str> = seg.argv.iter().map(String::as_str).collect();
        // Operands that are globs or dynamic reach entries the analyser cannot list.
        let (mut paths, opq) = commands::collect_paths(&texts, seg.cwd.as_deref());
        for p in &mut paths {
            if p.raw.starts_with("~/") {
                p.path = Some(self.home.join(&p.raw[2..]));
            }
            let dyn_hit = words.iter().any(|w| {
                w.dynamic && (w.text.contains(p.raw.as_str()) || p.raw.contains(w.text.as_str()))
            });
            if words.iter().any(|w| w.procsub && w.text == p.raw) {
                p.raw.clear();
                continue;
            }
            if dyn_hit {
                p.path = None;
                continue;
            }
            if let Some(w) = words.iter().find(|w| w.text == p.raw) {
                if w.procsub {
                    p.path = None;
                    p.raw.clear();
                } else if w.dynamic {
                    p.path = None;
                } else if w.glob {
                    let (base, had) = glob_base(&w.text);
                    if had {
                        p.path = join_path(seg.cwd.as_deref(), &base);
                        p.contents = true;
                    }
                }
            }
        }
        paths.retain(|p| !p.raw.is_empty());
        seg.paths.extend(paths);
        if let Some(o) = opq {
            seg.opaque.get_or_insert(o);
        }
        self.out.push(seg);
    }

    /// Evaluates a word-like node: quote removal, known variables, `~`; recurses into
    /// command and process substitutions.
    fn eval_word(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) -> Val {
        let mut v = Val::default();
        self.eval_into(node, src, state, frame, &mut v, true);
        v
    }

    fn eval_into(
        &mut self,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
        v: &mut Val,
        first: bool,
    ) {
        match node.kind() {
            "word" | "number" => {
                let t = text(src, node);
                let mut s = unescape_unquoted(t);
                if first && (s == "~" || s.starts_with("~/")) {
                    s = format!("{}{}", self.home.display(), &s[1..]);
                } else if first && s.starts_with('~') {
                    v.dynamic = true;
                }
                if t.contains(['*', '?', '[', '{']) {
                    v.glob = true;
                }
                v.text.push_str(&s);
            }
            "raw_string" => {
                let t = text(src, node);
                v.text.push_str(
                    t.strip_prefix('\'')
                        .unwrap_or(t)
                        .strip_suffix('\'')
                        .unwrap_or(t),
                );
            }
            "ansi_c_string" => {
                let t = text(src, node);
                let inner = t.strip_prefix("$'").unwrap_or(t);
                let inner = inner.strip_suffix('\'').unwrap_or(inner);
                match ansi_c_unescape(inner) {
                    Some(s) => v.text.push_str(&s),
                    None => {
                        v.dynamic = true;
                        v.text.push_str(t);
                    }
                }
            }
            "string" | "translated_string" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.children(&mut cur).collect();
                for child in kids {
                    match child.kind() {
                        "\"" | "$\"" => {}
                        "string_content" => v.text.push_str(&unescape_dquoted(text(src, child))),
                        k if child.is_named() && is_word_kind(k) => {
                            // Expansions inside quotes: no globbing, no tilde.
                            let mut inner = Val::default();
                            self.eval_into(child, src, state, frame, &mut inner, false);
                            v.text.push_str(&inner.text);
                            v.dynamic |= inner.dynamic;
                        }
                        _ if child.is_named() => {
                            self.substitutions_in(child, src, state, frame);
                            v.dynamic = true;
                            v.text.push_str(text(src, child));
                        }
                        _ => v.text.push_str(text(src, child)),
                    }
                }
            }
            "concatenation" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.children(&mut cur).collect();
                for (i, child) in kids.into_iter().enumerate() {
                    if child.is_named() {
                        self.eval_into(child, src, state, frame, v, first && i == 0);
                    } else {
                        let t = text(src, child);
                        if t.contains(['*', '?', '[', '{']) {
                            v.glob = true;
                        }
                        v.text.push_str(t);
                    }
                }
            }
            "simple_expansion" | "expansion" => {
                let name = variable_name(node, src);
                let known = match name.as_deref() {
                    Some("HOME") => Some(self.home.display().to_string()),
                    Some("PWD") => state.cwd.as_ref().map(|c| c.display().to_string()),
                    Some(n) => state.vars.get(n).cloned().flatten(),
                    None => None,
                };
                if node.kind() == "expansion" {
                    self.substitutions_in(node, src, state, frame);
                }
                match known {
                    Some(k) => v.text.push_str(&k),
                    None => {
                        v.dynamic = true;
                        v.text.push_str(text(src, node));
                    }
                }
            }
            "command_substitution" if text(src, node).starts_with("$(") => {
                // The parser already parsed its inside: walk that subtree (no second parse).
                let mut sub = state.clone();
                self.children_statements(node, src, &mut sub, &frame.nested("$(...)"));
                v.dynamic = true;
                v.text.push_str(text(src, node));
            }
            "command_substitution" => {
                // Backticks: the inside must be unescaped before it means anything.
                let t = text(src, node);
                let inner = if let Some(rest) = t.strip_prefix("$(") {
                    rest.strip_suffix(')').unwrap_or(rest)
                } else if let Some(rest) = t.strip_prefix('`') {
                    rest.strip_suffix('`').unwrap_or(rest)
                } else {
                    t
                };
                let how = if t.starts_with('`') {
                    "`...`"
                } else {
                    "$(...)"
                };
                let mut sub = state.clone();
                let inner = if how == "`...`" {
                    inner.replace("\\`", "`").replace("\\\\", "\\")
                } else {
                    inner.to_string()
                };
                self.script(&inner, &mut sub, &frame.nested(how));
                v.dynamic = true;
                v.text.push_str(t);
            }
            "process_substitution" => {
                let mut sub = state.clone();
                self.children_statements(node, src, &mut sub, &frame.nested("<(...)"));
                v.procsub = true;
                v.dynamic = true;
                v.text.push_str(text(src, node));
            }
            "arithmetic_expansion" => {
                self.substitutions_in(node, src, state, frame);
                v.dynamic = true;
                v.text.push_str(text(src, node));
            }
            "brace_expression" => {
                v.glob = true;
                v.text.push_str(text(src, node));
            }
            _ => {
                self.substitutions_in(node, src, state, frame);
                if node.is_error() || node.is_missing() {
                    self.parse_error = true;
                }
                v.dynamic = true;
                v.text.push_str(text(src, node));
            }
        }
    }
}

/// True when the command name node contains an expansion or substitution.
fn inner_has_expansion(node: Node) -> bool {
    if matches!(
        node.kind(),
        "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
    ) {
        return true;
    }
    let mut cur = node.walk();
    let found = node.named_children(&mut cur).any(inner_has_expansion);
    found
}

/// `$X` / `${X}` → `X`; `None` for anything fancier (`${X:-y}`, `$@`, `$1`).
fn variable_name(node: Node, src: &[u8]) -> Option<String> {
    let t = text(src, node);
    let name = if let Some(rest) = t.strip_prefix("${") {
        rest.strip_suffix('}')?
    } else {
        t.strip_prefix('$')?
    };
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| name.to_string())
}

/// A shell (or interpreter) with no script operand reads its program from stdin.
fn reads_script_from_stdin(argv: &[String]) -> bool {
    let texts: Vec<&str> = argv.iter().map(String::as_str).collect();
    matches!(
        commands::container(&texts),
        commands::Container::Stdin { .. }
    ) || commands::is_interpreter_reading_stdin(&texts)
}

fn first_error(node: Node) -> Option<Node> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cur = node.walk();
    let found = node
        .children(&mut cur)
        .filter(|c| c.has_error() || c.is_missing())
        .find_map(first_error);
    found
}

fn snippet(src: &[u8], node: Node) -> String {
    truncate(text(src, node), 40)
}

fn text<'a>(src: &'a [u8], node: Node) -> &'a str {
    let r = node.byte_range();
    src.get(r)
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or("")
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `/bin/rm` → `rm`; leaves relative paths (`./build.sh`) alone.
pub(crate) fn normalize_name(name: &str) -> String {
    if name.starts_with('/') {
        if let Some(base) = name.rsplit('/').next().filter(|b| !b.is_empty()) {
            return base.to_string();
        }
    }
    name.to_string()
}

/// Quote removal for an unquoted word: `\x` → `x`, `\<newline>` → nothing.
fn unescape_unquoted(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut chars = t.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Inside double quotes only `\$ \` \" \\ \<newline>` are escapes.
fn unescape_dquoted(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `$'...'` escapes; `None` for ones not decoded (the word is then dynamic).
fn ansi_c_unescape(t: &str) -> Option<String> {
    let mut out = String::new();
    let b = t.as_bytes();
    let mut i = 0;
    let mut bytes: Vec<u8> = Vec::new();
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let c = b[i + 1];
            i += 2;
            match c {
                b'n' => bytes.push(b'\n'),
                b't' => bytes.push(b'\t'),
                b'r' => bytes.push(b'\r'),
                b'\\' => bytes.push(b'\\'),
                b'\'' => bytes.push(b'\''),
                b'"' => bytes.push(b'"'),
                b'a' => bytes.push(7),
                b'b' => bytes.push(8),
                b'e' | b'E' => bytes.push(27),
                b'x' => {
                    let mut n = 0u32;
                    let mut k = 0;
                    while k < 2 && i < b.len() && (b[i] as char).is_ascii_hexdigit() {
                        n = n * 16 + (b[i] as char).to_digit(16)?;
                        i += 1;
                        k += 1;
                    }
                    if k == 0 {
                        return None;
                    }
                    bytes.push(n as u8);
                }
                b'0'..=b'7' => {
                    let mut n = u32::from(c - b'0');
                    let mut k = 1;
                    while k < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                        n = n * 8 + u32::from(b[i] - b'0');
                        i += 1;
                        k += 1;
                    }
                    bytes.push((n & 0xff) as u8);
                }
                _ => return None,
            }
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    out.push_str(std::str::from_utf8(&bytes).ok()?);
    Some(out)
}

/// Re-quotes a word so it survives being spliced into a script again.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The directory part of a glob before its first wildcard: `/etc/*.conf` → `/etc`, `*` → `.`.
pub(crate) fn glob_base(word: &str) -> (String, bool) {
    let Some(pos) = word.find(['*', '?', '[', '{']) else {
        return (word.to_string(), false);
    };
    let head = &word[..pos];
    match head.rfind('/') {
        Some(0) => ("/".to_string(), true),
        Some(i) => (head[..i].to_string(), true),
        None => (".".to_string(), true),
    }
}

fn join_cwd(cwd: Option<&Path>, target: &Val) -> Option<PathBuf> {
    if target.dynamic || target.glob {
        return None;
    }
    join_path(cwd, &target.text)
}

/// Joins `p` to `cwd` lexically (no file-system access); `None` if relative with no cwd.
pub(crate) fn join_path(cwd: Option<&Path>, p: &str) -> Option<PathBuf> {
    let path = Path::new(p);
    if path.is_absolute() {
        Some(path.to_path_buf())
    } else {
        cwd.map(|c| c.join(path))
    }
}

fn path_ref(v: &Val, access: Access, redirect: bool, cwd: Option<&Path>) -> PathRef {
    let (path, contents) = if v.dynamic {
        (None, false)
    } else if v.glob {
        let (base, had) = glob_base(&v.text);
        (join_path(cwd, &base), had)
    } else {
        (join_path(cwd, &v.text), false)
    };
    PathRef {
        raw: v.text.clone(),
        path,
        contents,
        access,
        redirect,
    }
}
