//! The command table: fen's per-program shell knowledge as data (`commands.toml`, embedded),
//! read once and applied by one generic mechanism to every segment. It says which programs
//! only read, which subcommands do, and which options write a file, run code the user did not
//! name, or carry a shell command; and which environment variables make a program run code.
//! `readonly.rs` keeps the few judgements that need code (sed and awk scripts, git's
//! subcommands), named by a row's `checker`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

const SOURCE: &str = include_str!("commands.toml");

/// One program's row (see the key list at the top of `commands.toml`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub subcommands: Vec<String>,
    pub checker: Option<String>,
    #[serde(default)]
    pub not_read_only: Vec<String>,
    #[serde(default)]
    pub writes: Vec<String>,
    #[serde(default)]
    pub exec: Vec<String>,
    #[serde(default)]
    pub global_exec: Vec<String>,
    #[serde(default)]
    pub script: Vec<String>,
    #[serde(default)]
    pub inline_code: Vec<String>,
    #[serde(default)]
    pub exec_operands: Vec<String>,
    /// What the operands (words that are not options or option values) are: one role for
    /// all, or a layout by position (`["read...", "write"]`); parsed into `layout`.
    #[serde(default)]
    operands: Option<OperandSpec>,
    /// The parsed `operands`.
    #[serde(skip)]
    pub layout: Vec<Slot>,
    /// Options carrying the pattern or script: with one, there is no `pattern` operand.
    #[serde(default)]
    pub pattern_options: Vec<String>,
    /// Options whose value is the destination (`cp -t DIR`): the layout's single-role slot
    /// takes the value and its repeated slot takes every operand.
    #[serde(default)]
    pub target_options: Vec<String>,
    /// Options that change roles: `"-i" = ["read>write"]` (`*` for any role, `skip` drops).
    #[serde(default)]
    role_options: HashMap<String, Vec<String>>,
    /// The parsed `role_options`: (option, [(from, to)]), `from` None for any role.
    #[serde(skip)]
    pub role_changes: Vec<(String, Vec<RoleChange>)>,
    /// The role of a lone operand (`ln TARGET` links `./basename`).
    pub lone_operand: Option<Role>,
    /// Operands with `:` are remote (`host:path`), not local paths.
    #[serde(default)]
    pub remote_operands: bool,
    /// The first operand may look like an option made of these characters (`chmod -x FILE`).
    pub mode_operand: Option<String>,
    /// `KEY=VALUE` operands naming files (`dd of=FILE`).
    #[serde(default)]
    pub assignments: HashMap<String, Role>,
    /// Options that take two separate values (`jq --arg NAME VALUE`).
    #[serde(default)]
    pub two_value_options: Vec<String>,
    /// Options whose value names a file after `@` (`curl -d @FILE`).
    #[serde(default)]
    pub at_file_options: Vec<String>,
    /// Operands end at the first option or `(`/`!` (find's start points).
    #[serde(default)]
    pub roots_only: bool,
    /// Options whose value has a role (`unzip -d DIR` writes into DIR).
    #[serde(default)]
    pub value_roles: HashMap<String, Role>,
    /// Paths it touches unless an option of `value_roles` with the same role names another:
    /// `"write_into ."` (unzip extracts into the working directory).
    #[serde(default)]
    implied: Vec<String>,
    /// Every option that takes a separate value (`valued_options`).
    #[serde(skip)]
    valued: Vec<String>,
    /// The parsed `implied`.
    #[serde(skip)]
    pub implied_paths: Vec<(Role, String)>,
    /// `default_operands` apply only with one of these options (`grep -r`).
    #[serde(default)]
    pub default_operands_with: Vec<String>,
    /// A first word without `-` is a cluster of options (`tar czf`).
    #[serde(default)]
    pub old_style_options: bool,
    /// Judged by code (commands.rs): `tar` (modes by letter), `git` (by subcommand).
    pub paths: Option<String>,
    /// Wrapper: `VAR=value` words before the command are assignments for it.
    #[serde(default)]
    pub wrapper_assignments: bool,
    /// Wrapper: words skipped like options (`env -`).
    #[serde(default)]
    pub skip_words: Vec<String>,
    /// Wrapper: options whose value is a command string, followed by its arguments (`env -S`).
    #[serde(default)]
    pub split_string: Vec<String>,
    /// Wrapper: the command is one shell string, then its arguments (`watch 'cmd'`).
    #[serde(default)]
    pub command_string: bool,
    /// Wrapper: options whose value is the command's directory (`env -C DIR`).
    #[serde(default)]
    pub chdir_options: Vec<String>,
    /// Wrapper: options that make it not a wrapper (`command -v`, `sudo -e`).
    #[serde(default)]
    pub not_wrapper_with: Vec<String>,
    /// Wrapper: options that open an interactive shell when no command follows (`sudo -s`).
    #[serde(default)]
    pub shell_without_command: Vec<String>,
    /// Wrapper: options that make it a command of its own when no command follows (`sudo -l`).
    #[serde(default)]
    pub self_without_command: Vec<String>,
    /// Wrapper: words after which the command cannot be seen (`coproc NAME { ...; }`).
    #[serde(default)]
    pub opaque_operands: Vec<String>,
    /// Options that take a separate value (so the value is not an operand).
    #[serde(default)]
    pub value_options: Vec<String>,
    /// Operands assumed when none is given (`ls` lists `.`).
    #[serde(default)]
    pub default_operands: Vec<String>,
    /// Options whose value is a file it reads.
    #[serde(default)]
    pub reads: Vec<String>,
    /// A wrapper: peeled, skipping its options and `wrapper_operands` more words.
    #[serde(default)]
    pub wrapper: bool,
    #[serde(default)]
    pub wrapper_operands: usize,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub examples: Vec<String>,
}

/// What an operand, or an option's value, is to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Read,
    Write,
    Delete,
    /// Not a path (a mode, a host, a member name).
    Skip,
    /// A leading pattern or script, absent when a `pattern_options` option gives it.
    Pattern,
    /// Writes files whose names start with it (`split IN PREFIX`).
    WritePrefix,
    /// Writes anywhere inside this directory (`unzip -d DIR`).
    WriteInto,
    /// Deletes this and everything inside (`find DIR -delete`).
    DeleteTree,
    /// Writes `./basename` of it (`ln -s TARGET`).
    WriteName,
}

impl Role {
    fn parse(s: &str) -> Result<Role, String> {
        serde::Deserialize::deserialize(
            serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s),
        )
        .map_err(|_| format!("unknown role `{s}`"))
    }
}

/// A role change an option makes: from a role (`None`: any) to another.
pub type RoleChange = (Option<Role>, Role);

/// One position of an operand layout.
#[derive(Debug, Clone)]
pub struct Slot {
    pub role: Role,
    /// Takes every operand the single slots leave (`read...`).
    pub many: bool,
    /// Used when the operand is missing (`write_prefix=x`).
    pub default: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OperandSpec {
    One(String),
    Layout(Vec<String>),
}

/// The code that judges the operands of rows with `paths`.
pub const PATH_JUDGES: &[&str] = &["tar", "git"];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Env {
    #[serde(default)]
    code: Vec<String>,
    #[serde(default)]
    code_prefixes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    env: Env,
    /// Named lists of options, used in a row as `"@name"`.
    #[serde(default)]
    option_sets: HashMap<String, Vec<String>>,
    program: HashMap<String, Program>,
}

/// The loaded table: rows by name (aliases included) and the code-running variables.
pub struct Table {
    /// Row index by name and alias (looked up for every segment: a fast hash).
    rows: rustc_hash::FxHashMap<String, usize>,
    programs: Vec<(String, Program)>,
    env: Env,
}

/// The table, parsed on first use (well under a millisecond).
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| match parse(SOURCE) {
        Ok(t) => t,
        // The file is embedded and checked by a unit test; an empty table fails closed
        // (nothing is read-only).
        Err(_) => Table {
            rows: Default::default(),
            programs: Vec::new(),
            env: Env::default(),
        },
    })
}

/// Parses the table text; names and aliases must be unique.
pub fn parse(text: &str) -> Result<Table, String> {
    let mut file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    for (name, p) in file.program.iter_mut() {
        for list in [&mut p.value_options, &mut p.writes, &mut p.reads] {
            let mut expanded = Vec::with_capacity(list.len());
            for o in list.drain(..) {
                match o.strip_prefix('@') {
                    Some(set) => match file.option_sets.get(set) {
                        Some(v) => expanded.extend(v.iter().cloned()),
                        None => return Err(format!("row `{name}`: no option set `{set}`")),
                    },
                    None => expanded.push(o),
                }
            }
            *list = expanded;
        }
        let err = |e: String| format!("row `{name}`: {e}");
        p.layout = match p.operands.take() {
            None => Vec::new(),
            Some(OperandSpec::One(role)) => vec![Slot {
                role: Role::parse(&role).map_err(err)?,
                many: true,
                default: None,
            }],
            Some(OperandSpec::Layout(slots)) => {
                let mut layout = Vec::new();
                for s in &slots {
                    let (s, default) = match s.split_once('=') {
                        Some((r, d)) => (r, Some(d.to_string())),
                        None => (s.as_str(), None),
                    };
                    let (r, many) = match s.strip_suffix("...") {
                        Some(r) => (r, true),
                        None => (s, false),
                    };
                    layout.push(Slot {
                        role: Role::parse(r).map_err(err)?,
                        many,
                        default,
                    });
                }
                if layout.iter().filter(|s| s.many).count() > 1 {
                    return Err(err("at most one `...` slot".into()));
                }
                layout
            }
        };
        let mut changes = Vec::new();
        for (opt, list) in p.role_options.drain() {
            let mut pairs = Vec::new();
            for c in &list {
                let (from, to) = c
                    .split_once('>')
                    .ok_or_else(|| err(format!("role change `{c}` is not FROM>TO")))?;
                let from = if from == "*" {
                    None
                } else {
                    Some(Role::parse(from).map_err(err)?)
                };
                pairs.push((from, Role::parse(to).map_err(err)?));
            }
            changes.push((opt, pairs));
        }
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        p.role_changes = changes;
        for i in &p.implied {
            let (role, path) = i
                .split_once(' ')
                .ok_or_else(|| err(format!("implied `{i}` is not ROLE PATH")))?;
            p.implied_paths
                .push((Role::parse(role).map_err(err)?, path.to_string()));
        }
        p.valued = p.gather_valued();
        if let Some(judge) = p.paths.as_deref() {
            if !PATH_JUDGES.contains(&judge) {
                return Err(err(format!("no path judge `{judge}`")));
            }
        }
    }
    let programs: Vec<(String, Program)> = file.program.into_iter().collect();
    let mut rows = rustc_hash::FxHashMap::default();
    for (i, (name, p)) in programs.iter().enumerate() {
        for n in std::iter::once(name).chain(&p.aliases) {
            if rows.insert(n.clone(), i).is_some() {
                return Err(format!("`{n}` is named by two rows"));
            }
        }
    }
    Ok(Table {
        rows,
        programs,
        env: file.env,
    })
}

/// An option that matched in an argv, with its value when it takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit<'a> {
    pub option: &'a str,
    pub value: Option<String>,
}

impl Table {
    /// The row for a (normalised) program name.
    pub fn program(&self, name: &str) -> Option<&Program> {
        let key = if name.starts_with("python3.") {
            "python"
        } else {
            name
        };
        self.rows.get(key).map(|&i| &self.programs[i].1)
    }

    /// Every row by its name, for tests and docs.
    pub fn programs(&self) -> impl Iterator<Item = (&str, &Program)> {
        self.programs.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Does assigning this variable make a program run code?
    pub fn env_runs_code(&self, name: &str) -> bool {
        self.env.code.iter().any(|c| c == name)
            || self.env.code_prefixes.iter().any(|p| name.starts_with(p))
    }
}

impl Program {
    /// The first option of `patterns` present in `args` (the words after the program name,
    /// up to `--`), with the value it takes: `-o V`, `-oV`, a short cluster ending in `o`
    /// followed by `V`, `--out V`, `--out=V`. A pattern ending in `*` matches any word with
    /// that start (no value).
    pub fn find<'p>(patterns: &'p [String], args: &[&str]) -> Option<Hit<'p>> {
        for (i, a) in args.iter().enumerate() {
            if *a == "--" {
                break;
            }
            for p in patterns {
                if let Some(hit) = match_option(p, a, args.get(i + 1).copied()) {
                    return Some(hit);
                }
            }
        }
        None
    }

    /// Every option of `patterns` present in `args`, in order, with its value.
    pub fn find_all<'p>(patterns: &'p [String], args: &[&str]) -> Vec<Hit<'p>> {
        let mut hits = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if *a == "--" {
                break;
            }
            if let Some(hit) = patterns
                .iter()
                .find_map(|p| match_option(p, a, args.get(i + 1).copied()))
            {
                hits.push(hit);
            }
        }
        hits
    }

    /// Does the row name any path through its operands or option values (beyond
    /// `writes`/`reads`)? Most read-only printers (`echo`, `true`) do not.
    pub fn touches_paths(&self) -> bool {
        !(self.layout.is_empty()
            && self.assignments.is_empty()
            && self.at_file_options.is_empty()
            && self.value_roles.is_empty()
            && self.implied_paths.is_empty())
    }

    /// Options that take a separate value, so the word after them is not an operand
    /// (gathered once, when the table is parsed).
    pub fn valued_options(&self) -> &[String] {
        &self.valued
    }

    fn gather_valued(&self) -> Vec<String> {
        [
            &self.value_options,
            &self.writes,
            &self.reads,
            &self.target_options,
            &self.at_file_options,
            &self.chdir_options,
        ]
        .into_iter()
        .flatten()
        .chain(self.value_roles.keys())
        .cloned()
        .collect()
    }

    /// Is one of `patterns` among the option words of `args` (before `--`)? A short
    /// pattern matches any cluster holding its letter; `"-i inplace"` needs that next word.
    pub fn has(patterns: &[String], args: &[&str]) -> bool {
        patterns.iter().any(|p| match p.split_once(' ') {
            Some((opt, value)) => args.windows(2).any(|w| w[0] == opt && w[1] == value),
            None => Program::find(std::slice::from_ref(p), args).is_some(),
        })
    }

    /// The subcommand position (first word after the program), if the row lists subcommands.
    pub fn read_only_subcommand(&self, args: &[&str]) -> bool {
        args.first()
            .is_some_and(|s| self.subcommands.iter().any(|c| c == s))
    }

    /// An operand (not an option) matching one of `exec_operands`.
    pub fn exec_operand(&self, args: &[&str]) -> Option<String> {
        args.iter()
            .filter(|a| !a.starts_with('-'))
            .find(|a| {
                self.exec_operands
                    .iter()
                    .any(|p| wildcard(p.as_bytes(), a.as_bytes()))
            })
            .map(|a| a.to_string())
    }

    /// Options that stop a wildcard allow rule from covering the call: they write, change
    /// state or run code.
    pub fn risky<'p>(&'p self, args: &[&str]) -> Option<Hit<'p>> {
        [
            &self.not_read_only,
            &self.writes,
            &self.exec,
            &self.script,
            &self.inline_code,
        ]
        .into_iter()
        .find_map(|list| Program::find(list, args))
    }
}

fn match_option<'p>(pattern: &'p str, arg: &str, next: Option<&str>) -> Option<Hit<'p>> {
    if let Some(prefix) = pattern.strip_suffix('*') {
        return arg.starts_with(prefix).then_some(Hit {
            option: pattern,
            value: None,
        });
    }
    if arg == pattern {
        return Some(Hit {
            option: pattern,
            value: next.map(str::to_string),
        });
    }
    if let Some(v) = arg
        .strip_prefix(pattern)
        .and_then(|rest| rest.strip_prefix('='))
    {
        return Some(Hit {
            option: pattern,
            value: Some(v.to_string()),
        });
    }
    // A short option `-o`: attached value (`-oV`) or the last of a cluster (`-uo V`).
    let b = pattern.as_bytes();
    if b.len() == 2 && b[0] == b'-' && b[1] != b'-' {
        let letter = b[1] as char;
        if let Some(rest) = arg.strip_prefix(pattern) {
            return Some(Hit {
                option: pattern,
                value: Some(rest.to_string()),
            });
        }
        let cluster = arg.strip_prefix('-').filter(|c| {
            !c.starts_with('-') && c.len() > 1 && c.chars().all(|x| x.is_ascii_alphanumeric())
        });
        if let Some(c) = cluster {
            if let Some(pos) = c.find(letter) {
                let rest = &c[pos + 1..];
                return Some(Hit {
                    option: pattern,
                    value: if rest.is_empty() {
                        next.map(str::to_string)
                    } else {
                        Some(rest.to_string())
                    },
                });
            }
        }
    }
    None
}

/// `*` matches any run of bytes.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|k| wildcard(rest, &s[k..])),
        Some((c, rest)) => s.first() == Some(c) && wildcard(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_parses_with_unique_names() {
        let t = parse(SOURCE).expect("commands.toml parses");
        assert!(t.program("ls").is_some_and(|p| p.read_only));
        assert!(t.program("egrep").is_some(), "aliases resolve");
        assert!(t.program("python3.12").is_some());
        assert!(t.program("frobnicate").is_none());
        assert!(parse("[env]\n[program.a]\naliases=[\"b\"]\n[program.b]\n").is_err());
    }

    #[test]
    fn options_match_in_all_their_spellings() {
        let pats = vec!["-o".to_string(), "--output".to_string()];
        let f = |args: &[&str]| Program::find(&pats, args).map(|h| h.value);
        assert_eq!(f(&["-o", "x"]), Some(Some("x".into())));
        assert_eq!(f(&["-ox"]), Some(Some("x".into())));
        assert_eq!(f(&["-uo", "x"]), Some(Some("x".into())));
        assert_eq!(f(&["--output=x"]), Some(Some("x".into())));
        assert_eq!(f(&["--output", "x"]), Some(Some("x".into())));
        assert_eq!(f(&["--", "-o", "x"]), None);
        assert_eq!(f(&["--outputs"]), None);
        let plus = vec!["+*".to_string()];
        assert!(Program::find(&plus, &["+!id"]).is_some());
    }

    #[test]
    fn every_row_has_a_test_row() {
        for (name, p) in table().programs() {
            assert!(!p.examples.is_empty(), "row `{name}` has no examples");
        }
    }
}
