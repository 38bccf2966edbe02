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
    /// The role of every operand (word that is not an option or an option's value): `read`,
    /// `write` or `delete`.
    pub operands: Option<String>,
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
    rows: HashMap<String, String>,
    programs: HashMap<String, Program>,
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
            rows: HashMap::new(),
            programs: HashMap::new(),
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
        if let Some(role) = p.operands.as_deref() {
            if !matches!(role, "read" | "write" | "delete") {
                return Err(format!(
                    "row `{name}`: operands is read, write or delete, not `{role}`"
                ));
            }
        }
    }
    let mut rows = HashMap::new();
    for (name, p) in &file.program {
        for n in std::iter::once(name).chain(&p.aliases) {
            if rows.insert(n.clone(), name.clone()).is_some() {
                return Err(format!("`{n}` is named by two rows"));
            }
        }
    }
    Ok(Table {
        rows,
        programs: file.program,
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
        self.rows.get(key).and_then(|r| self.programs.get(r))
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
