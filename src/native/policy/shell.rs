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
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser};

use super::commands;
use super::table;

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
    /// An operand the command table does not describe (any word of any program): judged
    /// only for what it would reveal (a secret), not as a read of the workspace boundary.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub implicit: bool,
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
        tainted: HashSet::new(),
        input_vars: false,
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
    /// Variables whose value may hold code (a command substitution's output, a literal with
    /// `$`, a backtick or `[`): evaluating them as arithmetic or a prompt runs it.
    tainted: HashSet<String>,
    /// A builtin set variables from input (`read`, `mapfile`, `printf -v`, a nameref): every
    /// variable not assigned a known value in this command may hold code.
    input_vars: bool,
}

impl State {
    fn tainted(&self, name: &str) -> bool {
        self.tainted.contains(name)
            || (self.input_vars && !matches!(self.vars.get(name), Some(Some(_))))
    }
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
    stdin_text: Option<StdinText>,
}

/// Text fed to a command's stdin by a heredoc or here-string.
#[derive(Clone)]
struct StdinText {
    text: String,
    /// Expanded when it runs (an unquoted heredoc with `$` or a backtick, a here-string with
    /// an expansion): what a shell reading it runs cannot be known.
    dynamic: bool,
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
                // The body runs whenever the function is called, as often as it is called
                // (`f(){ f & f; }; f` is a fork bomb): never vouched for, but analysed as if it
                // ran so floors still fire.
                let name = node
                    .child_by_field_name("name")
                    .map(|n| text(src, n).to_string())
                    .unwrap_or_default();
                let start = self.out.len();
                let mut sub = state.clone();
                self.children_statements(node, src, &mut sub, &frame.nested("function"));
                let body = text(src, node);
                let recursive = !name.is_empty()
                    && self.out[start..].iter().any(|s| s.name() == name)
                    && body.contains(['|', '&']);
                let mut seg = self.new_segment(node, src, state, frame);
                seg.argv = vec![name.clone()];
                if recursive {
                    seg.hazard = Some(format!("fork bomb: `{name}` starts copies of itself"));
                }
                seg.opaque = Some(format!(
                    "defines a function `{name}`, whose body runs whenever it is called"
                ));
                self.out.push(seg);
            }
            "for_statement" | "select_statement" => {
                let mut cur = node.walk();
                let mut var = None;
                for (i, child) in node.children(&mut cur).enumerate() {
                    match node.field_name_for_child(i as u32) {
                        Some("variable") => {
                            let name = text(src, child).to_string();
                            state.vars.insert(name.clone(), None);
                            state.tainted.remove(&name);
                            var = Some(name);
                        }
                        Some("value") => {
                            // `for x in $(cat f)`: the loop variable may hold code.
                            let v = self.eval_word(child, src, state, frame);
                            if v.dynamic || v.text.contains(['$', '`', '[']) {
                                if let Some(name) = &var {
                                    state.tainted.insert(name.clone());
                                }
                            }
                        }
                        Some("body") => self.statement(child, src, state, frame, &[]),
                        _ => {}
                    }
                }
            }
            "comment"
            | "heredoc_end"
            | "heredoc_start"
            | "file_descriptor"
            | "extglob_pattern"
            | "regex"
            | "test_operator"
            | "variable_name"
            | "special_variable_name" => {}
            "ERROR" => {
                self.parse_error = true;
                self.children_statements(node, src, state, frame);
            }
            "program" | "list" | "if_statement" | "elif_clause" | "else_clause"
            | "while_statement" | "do_group" | "case_statement" | "case_item"
            | "negated_command" => self.children_statements(node, src, state, frame),
            "compound_statement" => {
                if node.child(0).is_some_and(|c| text(src, c) == "((") {
                    // `(( expr ))`: arithmetic evaluates the variables it names.
                    self.arithmetic(node, src, state, frame);
                } else {
                    self.children_statements(node, src, state, frame);
                }
            }
            "c_style_for_statement" => {
                let mut cur = node.walk();
                for (i, child) in node.children(&mut cur).enumerate() {
                    match node.field_name_for_child(i as u32) {
                        Some("body") => self.statement(child, src, state, frame, &[]),
                        _ if child.is_named() => self.arithmetic(child, src, state, frame),
                        _ => {}
                    }
                }
            }
            "declaration_command" | "unset_command" => {
                self.declaration(node, src, state, frame, redirs)
            }
            "test_command" => {
                // `[[ ... ]]`: read-only, but expansions inside may run commands, and the
                // operands of `-eq`, `-lt`, ... and `-v` are evaluated as arithmetic.
                self.substitutions_in(node, src, state, frame);
                self.test_arithmetic(node, src, state, frame);
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
            // Fail closed: a construct the walker does not know is never vouched for. What
            // can be seen inside it is still analysed, so floors fire.
            kind => {
                self.substitutions_in(node, src, state, frame);
                let why = format!("the analyser does not understand `{kind}` here");
                self.opaque_segment(text(src, node), state, frame, &why);
            }
        }
    }

    /// Walks an arithmetic context (`(( ))`, `$(( ))`, a subscript, a `[[ -eq ]]` operand):
    /// substitutions run, and a variable whose value may hold code makes the command opaque,
    /// since arithmetic evaluates `a[$(cmd)]` stored in it.
    fn arithmetic(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) {
        match node.kind() {
            "command_substitution" | "process_substitution" | "expansion" => {
                self.eval_word(node, src, state, frame);
                if let Some(n) = first_variable(node, src) {
                    self.arith_variable(&n, node, src, state, frame);
                }
            }
            "simple_expansion" | "variable_name" | "word" => {
                let t = text(src, node).trim_start_matches('$');
                if is_identifier(t) {
                    self.arith_variable(t, node, src, state, frame);
                }
            }
            "string" | "raw_string" | "ansi_c_string" => {
                // A quoted operand is evaluated as an expression too.
                let v = self.eval_word(node, src, state, frame);
                if v.dynamic || v.text.contains(['$', '`', '[']) {
                    let why = format!(
                        "arithmetic on `{}`, which may hold code",
                        truncate(text(src, node), 60)
                    );
                    self.opaque_segment(text(src, node), state, frame, &why);
                }
            }
            _ => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                for child in kids {
                    self.arithmetic(child, src, state, frame);
                }
            }
        }
    }

    fn arith_variable(
        &mut self,
        name: &str,
        node: Node,
        src: &[u8],
        state: &mut State,
        frame: &Frame,
    ) {
        if state.tainted(name) {
            let why = format!("arithmetic on `{name}`, whose value may hold code");
            self.opaque_segment(text(src, node), state, frame, &why);
        }
    }

    /// `[[ a -eq b ]]`, `[[ -v a[i] ]]`: their operands are arithmetic.
    fn test_arithmetic(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) {
        let mut cur = node.walk();
        let kids: Vec<Node> = node.named_children(&mut cur).collect();
        for child in kids {
            match child.kind() {
                "binary_expression" | "unary_expression" => {
                    let op = child
                        .child_by_field_name("operator")
                        .map(|o| text(src, o))
                        .unwrap_or("");
                    if matches!(op, "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" | "-v") {
                        let mut c2 = child.walk();
                        let operands: Vec<Node> = child
                            .named_children(&mut c2)
                            .filter(|n| n.kind() != "test_operator")
                            .collect();
                        for o in operands {
                            self.arithmetic(o, src, state, frame);
                        }
                    } else {
                        self.test_arithmetic(child, src, state, frame);
                    }
                }
                _ => self.test_arithmetic(child, src, state, frame),
            }
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
    ) -> Option<StdinText> {
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
                            stdin_text: Some(StdinText {
                                dynamic: v.dynamic,
                                text: v.text,
                            }),
                        });
                    }
                }
            }
            "heredoc_redirect" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                // An unquoted delimiter means the body is expanded when it runs.
                let quoted = kids
                    .iter()
                    .find(|k| k.kind() == "heredoc_start")
                    .is_some_and(|k| text(src, *k).contains(['\'', '"', '\\']));
                let body = kids.iter().find(|k| k.kind() == "heredoc_body").map(|b| {
                    let t = text(src, *b).to_string();
                    StdinText {
                        dynamic: !quoted && t.contains(['$', '`']),
                        text: t,
                    }
                });
                for child in kids {
                    match child.kind() {
                        "heredoc_body" => {
                            // An unquoted heredoc expands `$(...)` in its body.
                            if !quoted {
                                self.substitutions_in(child, src, state, frame);
                            }
                            out.push(Redir {
                                target: Val::default(),
                                access: Access::Read,
                                stdin_text: body.clone(),
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
                            // `cat <<EOF | sh`, `<<EOF && cmd`: the rest of the line. A shell
                            // reading the pipe runs the body: opaque, and the body analysed.
                            let mut sub = state.clone();
                            let start = self.out.len();
                            self.statement(child, src, &mut sub, frame, &[]);
                            let mut shell_reads = false;
                            for s in &mut self.out[start..] {
                                if s.opaque.is_none() && reads_script_from_stdin(&s.argv) {
                                    shell_reads = true;
                                    s.opaque = Some(format!(
                                        "`{}` runs commands read from a pipe",
                                        s.name()
                                    ));
                                }
                            }
                            if let Some(b) = body.as_ref().filter(|_| shell_reads) {
                                let mut sub = state.clone();
                                self.script(&b.text, &mut sub, &frame.nested("heredoc | shell"));
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
        let name_node = node.child_by_field_name("name")?;
        let name = if name_node.kind() == "subscript" {
            // `a[$(cmd)]=x`: the subscript is arithmetic and runs its substitutions.
            self.arithmetic(name_node, src, state, frame);
            first_variable(name_node, src).unwrap_or_default()
        } else {
            text(src, name_node).to_string()
        };
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
        self.check_variable(&name, text(src, node), state, frame);
        if persist {
            let known = (!val.dynamic).then(|| val.text.clone());
            state.vars.insert(name.clone(), known);
            if val.dynamic || val.text.contains(['$', '`', '[']) {
                state.tainted.insert(name.clone());
            } else {
                state.tainted.remove(&name);
            }
        }
        Some((name, val))
    }

    /// Assigning a variable that makes programs run code (`PAGER`, `LD_PRELOAD`, `GIT_DIR`,
    /// `BASH_ENV`, `PATH`, ...: the command table's `[env]`) makes the command opaque.
    fn check_variable(&mut self, name: &str, shown: &str, state: &State, frame: &Frame) {
        if table::table().env_runs_code(name) {
            let why = format!("sets `{name}`, which makes programs run code it names");
            self.opaque_segment(shown, state, frame, &why);
        }
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
        let flag = |c: char| {
            kids.iter().any(|k| {
                let t = text(src, *k);
                t.starts_with('-') && !t.starts_with("--") && t.contains(c)
            })
        };
        if flag('n') {
            // A nameref makes later assignments land in a variable named at run time.
            state.input_vars = true;
        }
        let integer = flag('i');
        for child in kids {
            if integer && child.kind() == "variable_assignment" {
                // `declare -i x=EXPR` evaluates EXPR as arithmetic.
                if let Some(v) = child.child_by_field_name("value") {
                    self.arithmetic(v, src, state, frame);
                }
            }
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
        let mut last_word_end: Option<usize> = None;
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
                    last_word_end = Some(child.end_byte());
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
                    let w = self.eval_word(child, src, state, frame);
                    // The parser splits `"a"\;" b"` into two nodes; bash reads one word when
                    // nothing separates them.
                    match words.last_mut() {
                        Some(prev) if last_word_end == Some(child.start_byte()) => {
                            prev.text.push_str(&w.text);
                            prev.dynamic |= w.dynamic;
                            prev.glob |= w.glob;
                            prev.procsub |= w.procsub;
                        }
                        _ => words.push(w),
                    }
                    last_word_end = Some(child.end_byte());
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
        stdin_text: Option<StdinText>,
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
                    // `env VAR=x cmd`, `sudo VAR=x cmd`: assignments for the command.
                    for w in words.iter().take(n).skip(1) {
                        if let Some((var, _)) = w.text.split_once('=') {
                            if commands::is_assignment(&w.text) {
                                self.check_variable(var, &seg.text, state, frame);
                            }
                        }
                    }
                    // The wrapper's own options are judged by the command table too: files
                    // they write (`time -o FILE`) and code they run.
                    let own: Vec<String> = std::iter::once(name.clone())
                        .chain(texts[1..n.min(texts.len())].iter().map(|t| t.to_string()))
                        .collect();
                    let own_texts: Vec<&str> = own.iter().map(String::as_str).collect();
                    let (wpaths, _) = commands::option_paths(&own_texts, seg.cwd.as_deref());
                    seg.paths.extend(wpaths);
                    if let Some((why, _)) = commands::runs_code(&own) {
                        seg.opaque.get_or_insert(why);
                    }
                    // `env -C DIR`, `sudo -D DIR`: the command runs in another directory.
                    if let Some(dir) = commands::wrapper_chdir(&name, &own_texts[1..]) {
                        let d = Val {
                            text: dir,
                            ..Val::default()
                        };
                        seg.cwd = join_cwd(seg.cwd.as_deref(), &d);
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

        // Builtins that set variables from input: what they set may hold code.
        if matches!(name.as_str(), "read" | "mapfile" | "readarray" | "getopts")
            || (name == "printf" && seg.argv.iter().any(|a| a == "-v"))
        {
            state.input_vars = true;
        }
        if name == "let" {
            // `let EXPR`: arithmetic over the variables it names.
            for w in &words[1..] {
                for ident in w
                    .text
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|t| is_identifier(t))
                {
                    if state.tainted(ident) {
                        let why = format!("arithmetic on `{ident}`, whose value may hold code");
                        self.opaque_segment(&seg.text, state, frame, &why);
                    }
                }
            }
        }

        // Options that make the program run code the user did not name (the command table):
        // the segment is opaque, and a shell command the option carries is analysed too.
        if let Some((why, script)) = commands::runs_code(&seg.argv) {
            seg.opaque.get_or_insert(why);
            if let Some(script) = script.filter(|s| !s.trim().is_empty()) {
                let mut sub = state.clone();
                sub.cwd = seg.cwd.clone();
                self.script(&script, &mut sub, &frame.nested(&format!("{name} option")));
            }
        }

        // Containers whose argument is more shell. What the container itself writes or reads
        // (its redirects, `xargs -a FILE`) stays a segment of its own: `eval echo x > f`
        // writes `f` whatever `eval` runs.
        let texts: Vec<&str> = seg.argv.iter().map(String::as_str).collect();
        let container = commands::container(&texts);
        if !matches!(container, commands::Container::None) {
            let (own, _) = commands::option_paths(&texts, seg.cwd.as_deref());
            let mut carrier = seg.clone();
            carrier.paths.extend(own);
            carrier.redirect_only = true;
            let returns = !matches!(container, commands::Container::Stdin { .. })
                || stdin_text.as_ref().is_some_and(|b| !b.text.is_empty());
            if returns && !carrier.paths.is_empty() {
                carrier.opaque = None;
                self.out.push(carrier);
            }
        }
        match container {
            commands::Container::None => {}
            commands::Container::Script { how, script } => {
                let mut sub = state.clone();
                sub.cwd = seg.cwd.clone();
                let script = script.to_string();
                // A script built at run time can be anything: opaque, though what can be
                // seen of it is analysed.
                if words[1..]
                    .iter()
                    .any(|w| w.dynamic && script.contains(w.text.as_str()))
                {
                    let why = format!("the script `{how}` runs is built when it runs");
                    self.opaque_segment(&seg.text, state, frame, &why);
                }
                let start = self.out.len();
                self.script(&script, &mut sub, &frame.nested(&how));
                self.inherit_wrappers(start, &seg.wrappers);
                return;
            }
            commands::Container::Stdin { how } => {
                if let Some(body) = stdin_text.as_ref().filter(|b| !b.text.is_empty()) {
                    let mut sub = state.clone();
                    sub.cwd = seg.cwd.clone();
                    if body.dynamic {
                        let why = format!("the script `{how}` reads is expanded when it runs");
                        self.opaque_segment(&seg.text, state, frame, &why);
                    }
                    let start = self.out.len();
                    self.script(&body.text, &mut sub, &frame.nested(&how));
                    self.inherit_wrappers(start, &seg.wrappers);
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
        // Every other word of any program may name a file it reads (`od -c ~/.ssh/id_rsa`,
        // `tool --key=FILE`): judged for what it would reveal.
        for w in &words[1..] {
            if w.dynamic || w.procsub || w.text.is_empty() || w.text.len() > 4096 {
                continue;
            }
            let raw = match w.text.split_once('=') {
                Some((k, v)) if k.starts_with('-') => v,
                _ if w.text.starts_with('-') => continue,
                _ => w.text.as_str(),
            };
            if raw.is_empty() || raw.contains("://") || raw.contains('\n') {
                continue;
            }
            if paths.iter().any(|p| p.raw == raw) {
                continue;
            }
            let v = Val {
                text: raw.to_string(),
                glob: w.glob,
                ..Val::default()
            };
            let mut p = path_ref(&v, Access::Read, false, seg.cwd.as_deref());
            p.implicit = true;
            paths.push(p);
        }
        seg.paths.extend(paths);
        if let Some(o) = opq {
            seg.opaque.get_or_insert(o);
        }
        self.out.push(seg);
    }

    /// What runs inside a container runs under the container's wrappers too (`sudo bash -c
    /// 'X'` runs X as root; `env bash -c 'X'` starts env): the segments from `start` on get
    /// them, outermost first.
    fn inherit_wrappers(&mut self, start: usize, wrappers: &[String]) {
        if wrappers.is_empty() {
            return;
        }
        for s in &mut self.out[start..] {
            let mut all = wrappers.to_vec();
            all.append(&mut s.wrappers);
            s.wrappers = all;
        }
    }

    /// `${...}` operators: the known ones are string operations; `@P` (prompt expansion runs
    /// the command substitutions stored in the variable), indirection through a variable
    /// that may hold code, a subscript or substring offset (arithmetic) on one, and any
    /// operator the analyser does not know make the command opaque.
    fn expansion_operators(&mut self, node: Node, src: &[u8], state: &mut State, frame: &Frame) {
        const KNOWN: &[&str] = &[
            "-", ":-", "=", ":=", "+", ":+", "?", ":?", "#", "##", "%", "%%", "/", "//", "/#",
            "/%", "^", "^^", ",", ",,", ":", "!", "[", "]", "@", "*",
        ];
        const TRANSFORMS: &[&str] = &["Q", "E", "A", "a", "U", "u", "L", "K", "k"];
        let name = first_variable(node, src).unwrap_or_default();
        let mut cur = node.walk();
        let kids: Vec<Node> = node.children(&mut cur).collect();
        let mut after_at = false;
        let mut why = None;
        let mut arithmetic_parts = Vec::new();
        let mut substring = false;
        for child in &kids {
            let t = text(src, *child);
            if !child.is_named() {
                if matches!(t, "${" | "}") {
                    continue;
                }
                if after_at {
                    if !TRANSFORMS.contains(&t) {
                        why = Some(format!("`${{{name}@{t}}}` runs what the variable holds"));
                    }
                    after_at = false;
                    continue;
                }
                if t == "@" {
                    after_at = true;
                    continue;
                }
                if t == ":" {
                    substring = true;
                }
                if t == "!" && state.tainted(&name) {
                    why = Some(format!("indirection through `{name}`, which may hold code"));
                }
                if !KNOWN.contains(&t) {
                    why = Some(format!(
                        "the analyser does not understand `{t}` in `${{...}}`"
                    ));
                }
            } else if child.kind() == "subscript" || (substring && child.kind() != "variable_name")
            {
                // A subscript and a substring's offset and length are arithmetic.
                arithmetic_parts.push(*child);
            } else if after_at {
                // `${x@P}` parses the letter as a word in some versions.
                if !TRANSFORMS.contains(&t) {
                    why = Some(format!("`${{{name}@{t}}}` runs what the variable holds"));
                }
                after_at = false;
            }
        }
        if after_at {
            why = Some(format!("`${{{name}@...}}` is not understood"));
        }
        for part in arithmetic_parts {
            self.arithmetic(part, src, state, frame);
        }
        if let Some(why) = why {
            self.opaque_segment(text(src, node), state, frame, &why);
        }
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
                if has_bare_newline(t) {
                    // tree-sitter-bash reads `ok<newline>\ls` as one word where bash ends the
                    // command at the newline: the tree cannot be trusted here.
                    self.parse_error = true;
                    self.opaque_segment(
                        t,
                        state,
                        frame,
                        "a line break inside a word (the parser cannot tell where the command ends)",
                    );
                }
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
                // Decoded exactly as bash does: the text between the parser's pieces (a real
                // newline splits `string_content`) is string content too.
                let mut cur = node.walk();
                let kids: Vec<Node> = node.children(&mut cur).collect();
                let mut pos = node.start_byte();
                // Literal text (pieces and the gaps between them) is decoded in one run, so an
                // escape split across pieces decodes as bash decodes it.
                let mut lit = String::new();
                for child in kids {
                    if child.start_byte() > pos {
                        lit.push_str(
                            src.get(pos..child.start_byte())
                                .and_then(|b| std::str::from_utf8(b).ok())
                                .unwrap_or(""),
                        );
                    }
                    pos = pos.max(child.end_byte());
                    match child.kind() {
                        "\"" | "$\"" => {}
                        "string_content" => lit.push_str(text(src, child)),
                        k if child.is_named() && is_word_kind(k) => {
                            v.text
                                .push_str(&unescape_dquoted(&std::mem::take(&mut lit)));
                            // Expansions inside quotes: no globbing, no tilde.
                            let mut inner = Val::default();
                            self.eval_into(child, src, state, frame, &mut inner, false);
                            v.text.push_str(&inner.text);
                            v.dynamic |= inner.dynamic;
                        }
                        _ if child.is_named() => {
                            v.text
                                .push_str(&unescape_dquoted(&std::mem::take(&mut lit)));
                            self.substitutions_in(child, src, state, frame);
                            v.dynamic = true;
                            v.text.push_str(text(src, child));
                        }
                        _ => lit.push_str(text(src, child)),
                    }
                }
                v.text.push_str(&unescape_dquoted(&lit));
            }
            "concatenation" => {
                let mut cur = node.walk();
                let kids: Vec<Node> = node.children(&mut cur).collect();
                let mut pos = node.start_byte();
                for (i, child) in kids.into_iter().enumerate() {
                    if child.start_byte() > pos {
                        // Text the parser left between adjacent parts is part of the word.
                        let gap = src
                            .get(pos..child.start_byte())
                            .and_then(|b| std::str::from_utf8(b).ok())
                            .unwrap_or("");
                        v.text.push_str(&unescape_unquoted(gap));
                    }
                    pos = pos.max(child.end_byte());
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
                if node.kind() == "expansion" {
                    self.expansion_operators(node, src, state, frame);
                }
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
                let mut cur = node.walk();
                let kids: Vec<Node> = node.named_children(&mut cur).collect();
                for child in kids {
                    self.arithmetic(child, src, state, frame);
                }
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

/// The variable an expansion names (`${x:-y}` → `x`, `${a[i]}` → `a`).
fn first_variable(node: Node, src: &[u8]) -> Option<String> {
    let mut cur = node.walk();
    let found = node
        .named_children(&mut cur)
        .find(|c| c.kind() == "variable_name")
        .map(|c| text(src, c).to_string());
    found
}

fn is_identifier(t: &str) -> bool {
    !t.is_empty()
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !t.starts_with(|c: char| c.is_ascii_digit())
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

/// An unquoted word with a newline that no backslash escapes: bash would end the command
/// there.
fn has_bare_newline(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, c)| *c == b'\n' && (i == 0 || b[i - 1] != b'\\'))
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
        implicit: false,
    }
}
