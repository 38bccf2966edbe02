//! extensions/lib/annotations.lua (LuaCATS, for editors) and docs/extensions.md list every
//! field of the real `api` and `fen.native` tables: read the tables from a running kernel and
//! look each field up.

use crate::common;
use common::Sandbox;
use std::collections::{BTreeSet, HashMap};

/// `path:type` of every field of `api` and `fen.native`, two levels deep.
fn real_fields() -> Vec<(String, String)> {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/intro.lua",
        r#"return function(api)
  api.register("command", { name = "intro", description = "dump", handler = function()
    local out = {}
    local function dump(prefix, t, depth)
      for k, v in pairs(t) do
        out[#out + 1] = prefix .. k .. ":" .. type(v)
        if type(v) == "table" and depth < 1 and k ~= "platform" and k ~= "paths" then
          dump(prefix .. k .. ".", v, depth + 1)
        end
      end
    end
    dump("api.", api, 0)
    dump("native.", require("fen.native"), 0)
    return table.concat(out, "\n")
  end })
end"#,
    );
    let k = fen::host::Kernel::boot(s.boot_options()).unwrap();
    let text = common::run_command(&k, "/intro").unwrap().unwrap();
    text.lines()
        .map(|l| {
            let (p, t) = l.rsplit_once(':').unwrap();
            (p.to_string(), t.to_string())
        })
        .collect()
}

/// Class name -> the field and function names the annotations give it.
fn annotated() -> HashMap<String, BTreeSet<String>> {
    let text = include_str!("../extensions/lib/annotations.lua");
    let tables: HashMap<&str, &str> = [
        ("api", "fen.Api"),
        ("turn", "fen.ApiTurn"),
        ("session", "fen.ApiSession"),
        ("ui", "fen.ApiUi"),
        ("kernel", "fen.ApiKernel"),
        ("settings", "fen.ApiSettings"),
        ("native", "fen.Native"),
    ]
    .into_iter()
    .collect();
    let mut out: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut class = String::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("---@class ") {
            class = c.split_whitespace().next().unwrap_or("").to_string();
        } else if let Some(f) = line.strip_prefix("---@field ") {
            let name = f.split_whitespace().next().unwrap_or("");
            out.entry(class.clone())
                .or_default()
                .insert(name.to_string());
        } else if let Some(rest) = line.strip_prefix("function ") {
            if let Some((table, name)) = rest.split('(').next().and_then(|s| s.split_once('.')) {
                if let Some(c) = tables.get(table) {
                    out.entry(c.to_string())
                        .or_default()
                        .insert(name.to_string());
                }
            }
        }
    }
    out
}

fn class_of(prefix: &str) -> String {
    match prefix {
        "api" => "fen.Api".into(),
        "api.turn" => "fen.ApiTurn".into(),
        "api.session" => "fen.ApiSession".into(),
        "api.ui" => "fen.ApiUi".into(),
        "api.settings" => "fen.ApiSettings".into(),
        "native" => "fen.Native".into(),
        other => {
            // native.fs -> fen.NativeFs
            let m = other.trim_start_matches("native.");
            let mut c = m.chars();
            let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or_default();
            format!("fen.Native{first}{}", c.as_str())
        }
    }
}

#[test]
fn the_annotations_list_every_field_of_api_and_native() {
    let classes = annotated();
    let mut missing = Vec::new();
    for (path, _) in real_fields() {
        let (prefix, name) = path.rsplit_once('.').unwrap();
        let class = class_of(prefix);
        if !classes
            .get(&class)
            .is_some_and(|names| names.contains(name))
        {
            missing.push(format!("{path} (class {class})"));
        }
    }
    assert!(
        missing.is_empty(),
        "add these to extensions/lib/annotations.lua:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_extension_guide_names_every_api_function() {
    let docs = include_str!("../docs/extensions.md");
    let missing: Vec<String> = real_fields()
        .into_iter()
        .filter(|(p, t)| {
            t == "function" && !docs.contains(&format!("`{p}")) && !docs.contains(&format!("{p}("))
        })
        .map(|(p, _)| p)
        .collect();
    assert!(
        missing.is_empty(),
        "document in docs/extensions.md:\n{}",
        missing.join("\n")
    );
}

/// extensions/lib/annotations.gen.lua (the bindings' option classes and the register specs) is
/// what `fen docs` writes now: run `cargo run -- docs` after changing either.
#[test]
fn the_generated_annotations_are_fresh() {
    let want = fen::host::annotations::render(fen::kernel::contracts::contracts());
    let have = include_str!("../extensions/lib/annotations.gen.lua");
    assert!(
        have == want,
        "extensions/lib/annotations.gen.lua is stale: run `cargo run -- docs`"
    );
}

/// Every class the hand-written annotations name is defined in one of the two files.
#[test]
fn the_annotations_name_only_defined_classes() {
    let hand = include_str!("../extensions/lib/annotations.lua");
    let generated = include_str!("../extensions/lib/annotations.gen.lua");
    let defined: BTreeSet<&str> = hand
        .lines()
        .chain(generated.lines())
        .filter_map(|l| {
            l.strip_prefix("---@class ")
                .or_else(|| l.strip_prefix("---@alias "))
        })
        .filter_map(|c| c.split_whitespace().next())
        .collect();
    let mut missing = BTreeSet::new();
    for word in hand.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '_')) {
        let word = word.trim_end_matches('.');
        if (word.starts_with("fen.opts.") || word.starts_with("fen.spec."))
            && !defined.contains(word)
        {
            missing.insert(word);
        }
    }
    assert!(missing.is_empty(), "undefined classes: {missing:?}");
}
