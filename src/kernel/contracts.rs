//! Contracts as data: every event, canonical type, register kind, interface and protocol
//! message (`fen --mode rpc`, `fen acp`), read from the
//! TOML files in `contracts/` (embedded at build time). The kernel validates `api.register`
//! specs and emitted events against them, and `fen docs` renders them to `docs/contracts.md`.
//!
//! This module knows nothing of Lua: validation takes a [`Shape`], the observable kind of a value.

use serde::Deserialize;
use std::sync::OnceLock;

/// One field of a record contract.
#[derive(Debug, Clone, Deserialize)]
pub struct Field {
    pub name: String,
    /// Type expression: `string`, `number`, `boolean`, `function`, `table`, `any`, a canonical type
    /// name (`AssistantMessage`), an array (`[Message]`), or alternatives joined by `|`.
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub required: bool,
    pub summary: String,
    /// Allowed string values, when the field is an enum.
    #[serde(default)]
    pub values: Vec<String>,
    /// The one allowed value, for discriminators (`type`, `role`).
    #[serde(default)]
    pub value: Option<String>,
    /// Call signature shown in the docs for function fields.
    #[serde(default)]
    pub signature: Option<String>,
    /// Value the kernel fills in when a registered spec leaves the field out.
    #[serde(default)]
    pub default: Option<String>,
}

/// One member of a union, enum or interface contract.
#[derive(Debug, Clone, Deserialize)]
pub struct Member {
    pub name: String,
    pub kind: String,
    pub summary: String,
}

/// One contract entry: a record (fields) or a union/enum/interface (members).
#[derive(Debug, Clone, Deserialize)]
pub struct Contract {
    pub name: String,
    pub summary: String,
    #[serde(default)]
    pub fields: Vec<Field>,
    #[serde(default)]
    pub members: Vec<Member>,
    /// For register kinds: the field that names a contribution; one active contribution per name.
    #[serde(default)]
    pub unique_by: Option<String>,
}

/// A contracts file: one section of the reference.
#[derive(Debug, Clone, Deserialize)]
pub struct Section {
    pub section: String,
    pub summary: String,
    #[serde(
        alias = "event",
        alias = "type",
        alias = "kind",
        alias = "interface",
        alias = "message"
    )]
    pub entries: Vec<Contract>,
}

/// All five sections, each parsed on first use (boot needs only the register kinds).
#[derive(Debug, Default)]
pub struct Contracts {
    parsed: [OnceLock<Section>; 5],
}

/// The contract sources, embedded so the binary needs no data files at run time. build.rs
/// converts `contracts/*.toml` (the source of truth) to JSON, which parses several times faster
/// at start-up.
pub const SOURCES: [(&str, &str); 5] = [
    (
        "events.toml",
        include_str!(concat!(env!("OUT_DIR"), "/contracts-events.json")),
    ),
    (
        "types.toml",
        include_str!(concat!(env!("OUT_DIR"), "/contracts-types.json")),
    ),
    (
        "register-kinds.toml",
        include_str!(concat!(env!("OUT_DIR"), "/contracts-register-kinds.json")),
    ),
    (
        "interfaces.toml",
        include_str!(concat!(env!("OUT_DIR"), "/contracts-interfaces.json")),
    ),
    (
        "protocols.toml",
        include_str!(concat!(env!("OUT_DIR"), "/contracts-protocols.json")),
    ),
];

fn parse_section(file: &str, text: &str) -> Section {
    match serde_json::from_str(text) {
        Ok(section) => section,
        // build.rs produced this from contracts/; a mismatch is a build defect.
        Err(err) => panic!("contracts/{file} is malformed: {err}"),
    }
}

/// The contracts (each section parsed once, on first use).
pub fn contracts() -> &'static Contracts {
    static CONTRACTS: Contracts = Contracts {
        parsed: [const { OnceLock::new() }; 5],
    };
    &CONTRACTS
}

impl Contracts {
    fn section(&self, i: usize) -> &Section {
        self.parsed[i].get_or_init(|| parse_section(SOURCES[i].0, SOURCES[i].1))
    }
    pub fn events(&self) -> &Section {
        self.section(0)
    }
    pub fn types(&self) -> &Section {
        self.section(1)
    }
    pub fn register_kinds(&self) -> &Section {
        self.section(2)
    }
    pub fn interfaces(&self) -> &Section {
        self.section(3)
    }
    pub fn protocols(&self) -> &Section {
        self.section(4)
    }
    pub fn sections(&self) -> [&Section; 5] {
        [
            self.events(),
            self.types(),
            self.register_kinds(),
            self.interfaces(),
            self.protocols(),
        ]
    }
    /// A record or union a value can be checked against: a protocol message or a canonical
    /// type (protocols first: checking an RPC request need not parse the types).
    pub fn shape(&self, name: &str) -> Option<&Contract> {
        [self.protocols(), self.types()]
            .into_iter()
            .flat_map(|s| s.entries.iter())
            .find(|c| c.name == name)
    }
    pub fn event(&self, name: &str) -> Option<&Contract> {
        self.events().entries.iter().find(|c| c.name == name)
    }
    pub fn register_kind(&self, name: &str) -> Option<&Contract> {
        self.register_kinds()
            .entries
            .iter()
            .find(|c| c.name == name)
    }
    pub fn kind_names(&self) -> Vec<&str> {
        self.register_kinds()
            .entries
            .iter()
            .map(|c| c.name.as_str())
            .collect()
    }
    /// Looks a name up in every section; `section/name` picks one section.
    pub fn find(&self, query: &str) -> Vec<(&Section, &Contract)> {
        let (section_filter, name) = match query.split_once('/') {
            Some((s, n)) => (Some(s), n),
            None => (None, query),
        };
        self.sections()
            .into_iter()
            .filter(|s| section_filter.is_none_or(|f| s.section == f))
            .flat_map(|s| {
                s.entries
                    .iter()
                    .filter(|c| c.name == name)
                    .map(move |c| (s, c))
            })
            .collect()
    }
    /// Every contract name, for did-you-mean suggestions.
    pub fn all_names(&self) -> Vec<&str> {
        self.sections()
            .into_iter()
            .flat_map(|s| s.entries.iter().map(|c| c.name.as_str()))
            .collect()
    }
}

/// The observable shape of a value, as the validator needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape<'a> {
    Nil,
    Boolean,
    Number,
    String(&'a str),
    Table,
    Function,
    Other,
}

impl Shape<'_> {
    pub fn describe(&self) -> String {
        match self {
            Shape::Nil => "nil".into(),
            Shape::Boolean => "a boolean".into(),
            Shape::Number => "a number".into(),
            Shape::String(s) => format!("the string {s:?}"),
            Shape::Table => "a table".into(),
            Shape::Function => "a function".into(),
            Shape::Other => "an unsupported value".into(),
        }
    }
}

impl Field {
    /// What the field accepts, in words, for error messages and docs.
    pub fn expected(&self) -> String {
        if let Some(v) = &self.value {
            return format!("{v:?}");
        }
        if !self.values.is_empty() {
            let quoted: Vec<String> = self.values.iter().map(|v| format!("{v:?}")).collect();
            return format!("one of {}", quoted.join(", "));
        }
        self.ty.clone()
    }

    /// The type column of the generated docs.
    pub fn doc_type(&self) -> String {
        if let Some(sig) = &self.signature {
            return sig.clone();
        }
        if let Some(v) = &self.value {
            return format!("\"{v}\"");
        }
        if !self.values.is_empty() {
            return self
                .values
                .iter()
                .map(|v| format!("\"{v}\""))
                .collect::<Vec<_>>()
                .join(" \\| ");
        }
        self.ty.replace('|', " \\| ")
    }

    /// Checks one value against the field. `Err` carries what was expected and what was found.
    pub fn check(&self, shape: Shape<'_>) -> Result<(), String> {
        if shape == Shape::Nil {
            return if self.required {
                Err(format!("is required ({}), got nil", self.expected()))
            } else {
                Ok(())
            };
        }
        let type_ok = self
            .ty
            .split('|')
            .any(|alt| alternative_accepts(alt.trim(), shape));
        if !type_ok {
            return Err(format!("expected {}, got {}", self.ty, shape.describe()));
        }
        if let Shape::String(s) = shape {
            if let Some(v) = &self.value {
                if s != v {
                    return Err(format!("expected {v:?}, got {s:?}"));
                }
            }
            if !self.values.is_empty() && !self.values.iter().any(|v| v == s) {
                return Err(format!("expected {}, got {s:?}", self.expected()));
            }
        }
        Ok(())
    }
}

fn alternative_accepts(alt: &str, shape: Shape<'_>) -> bool {
    match alt {
        "any" => true,
        "nil" => shape == Shape::Nil,
        "string" => matches!(shape, Shape::String(_)),
        "number" => shape == Shape::Number,
        "boolean" => shape == Shape::Boolean,
        "function" => shape == Shape::Function,
        "table" | "JSONSchema" => shape == Shape::Table,
        // StopReason is an enum of strings; other capitalised names and arrays are tables.
        "StopReason" => matches!(shape, Shape::String(_)),
        _ if alt.starts_with('[') => shape == Shape::Table,
        _ if alt.starts_with(|c: char| c.is_ascii_uppercase()) => shape == Shape::Table,
        _ => false,
    }
}

/// Renders the whole reference as Markdown: the content of `docs/contracts.md`.
pub fn render_markdown(contracts: &Contracts) -> String {
    let mut out = String::new();
    out.push_str("# fen contracts\n\n");
    out.push_str(
        "<!-- Generated by `fen docs` from contracts/*.toml. Do not edit by hand; \
         `fen docs --check` fails when this page is stale. -->\n\n",
    );
    out.push_str(
        "Field names are snake_case across Lua, JSON and Rust; discriminator values \
         (event types, roles, stop reasons, register kinds) keep their hyphenated form.\n\n",
    );
    for section in contracts.sections() {
        out.push_str(&format!(
            "## {}\n\n{}\n\n",
            section.section, section.summary
        ));
        for c in &section.entries {
            out.push_str(&render_entry(c));
        }
    }
    out
}

/// One contract as Markdown: heading, summary, and its fields or members table.
pub fn render_entry(c: &Contract) -> String {
    let mut out = format!("### {}\n\n{}\n\n", c.name, escape_cell(&c.summary));
    if !c.fields.is_empty() {
        out.push_str("| Field | Type | Required | Summary |\n| --- | --- | --- | --- |\n");
        for f in &c.fields {
            let default = f
                .default
                .as_ref()
                .map(|d| format!(" Default: `{d}`."))
                .unwrap_or_default();
            let summary = escape_cell(&f.summary);
            let summary = if summary.contains("Default") {
                summary
            } else {
                format!("{summary}{default}")
            };
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} |\n",
                f.name,
                f.doc_type(),
                if f.required { "yes" } else { "" },
                summary
            ));
        }
        out.push('\n');
    }
    if !c.members.is_empty() {
        out.push_str("| Member | Kind | Summary |\n| --- | --- | --- |\n");
        for m in &c.members {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                m.name,
                m.kind,
                escape_cell(&m.summary)
            ));
        }
        out.push('\n');
    }
    out
}

fn escape_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_parses_and_has_entries() {
        let c = contracts();
        for s in c.sections() {
            assert!(!s.entries.is_empty(), "section {} is empty", s.section);
        }
        assert!(c.event("agent-started").is_some());
        assert!(c.register_kind("tool").is_some());
    }

    #[test]
    fn every_event_has_a_matching_discriminator() {
        for e in &contracts().events().entries {
            let ty = e
                .fields
                .iter()
                .find(|f| f.name == "type")
                .expect("type field");
            assert_eq!(ty.value.as_deref(), Some(e.name.as_str()));
            assert!(ty.required);
        }
    }

    #[test]
    fn field_names_are_snake_case() {
        for s in contracts().sections() {
            // ACP messages keep the protocol's own camelCase names.
            for c in s.entries.iter().filter(|c| !c.name.starts_with("Acp")) {
                for f in &c.fields {
                    assert!(
                        f.name
                            .chars()
                            .all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                        "{}.{} is not snake_case",
                        c.name,
                        f.name
                    );
                }
            }
        }
    }

    #[test]
    fn checks_types_enums_and_required() {
        let tool = contracts().register_kind("tool").unwrap();
        let field = |n: &str| tool.fields.iter().find(|f| f.name == n).unwrap();
        assert!(field("name").check(Shape::Nil).is_err());
        assert!(field("name")
            .check(Shape::Number)
            .unwrap_err()
            .contains("expected string"));
        assert!(field("execute").check(Shape::Function).is_ok());
        assert!(field("risk").check(Shape::String("read")).is_ok());
        assert!(field("risk")
            .check(Shape::String("nuke"))
            .unwrap_err()
            .contains("\"read\""));
        assert!(field("label").check(Shape::Nil).is_ok());
    }

    #[test]
    fn tool_kind_has_risk_and_concurrency() {
        let tool = contracts().register_kind("tool").unwrap();
        assert!(tool.fields.iter().any(|f| f.name == "risk"));
        assert!(tool.fields.iter().any(|f| f.name == "concurrency"));
    }
}
