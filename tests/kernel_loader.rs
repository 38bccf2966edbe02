//! Extension discovery and loading through the real `fen` binary: root priority, shadowing,
//! skip rules, directory-vs-file, manifests, requires.bin, and atomic per-extension loading.

use crate::common;
use common::{find, tool_extension, Sandbox};

#[test]
fn a_user_extension_loads_and_its_tool_is_listed() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/hello.lua",
        &tool_extension("hello", "from user root"),
    );
    let tools = s.fen_json(&["list", "tools", "--json"]);
    let hello = find(&tools, "name", "hello");
    assert_eq!(hello.len(), 1);
    assert_eq!(hello[0]["owner"], "hello");
    assert_eq!(hello[0]["description"], "from user root");
    // Defaults from contracts/ are filled in.
    assert_eq!(hello[0]["risk"], "shell");
    assert_eq!(hello[0]["concurrency"], "exclusive");
}

#[test]
fn roots_have_priority_and_shadowed_copies_are_recorded() {
    let s = Sandbox::new();
    // Same extension name in three roots: explicit > project > user.
    s.write(
        "config/fen/extensions/dup.lua",
        &tool_extension("dup_tool", "user"),
    );
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write(
        "work/.fen/extensions/dup.lua",
        &tool_extension("dup_tool", "project"),
    );
    let explicit = s.write("elsewhere/dup.lua", &tool_extension("dup_tool", "explicit"));

    // The folder is trusted for these runs (see `untrusted_project_code_never_runs`).
    let tools = s.fen_json(&["--trust", "list", "tools", "--json"]);
    assert_eq!(
        find(&tools, "name", "dup_tool")[0]["description"],
        "project"
    );

    let exts = s.fen_json(&["--trust", "list", "extensions", "--json"]);
    let dups = find(&exts, "name", "dup");
    assert_eq!(dups.len(), 2, "{exts:#}");
    assert_eq!(dups[0]["status"], "loaded");
    assert_eq!(dups[0]["root_kind"], "project");
    assert_eq!(dups[1]["status"], "shadowed");
    assert_eq!(dups[1]["root_kind"], "user");
    assert!(dups[1]["shadowed_by"]
        .as_str()
        .unwrap()
        .contains(".fen/extensions/dup.lua"));

    let out = s.fen(&[
        "--extension",
        explicit.to_str().unwrap(),
        "list",
        "tools",
        "--json",
    ]);
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        find(&tools, "name", "dup_tool")[0]["description"],
        "explicit"
    );
}

#[test]
fn project_extensions_are_found_in_parents_up_to_the_repository_root() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    std::fs::create_dir_all(s.cwd().join("sub/deeper")).unwrap();
    s.write(
        "work/.fen/extensions/top.lua",
        &tool_extension("top_tool", "repo root"),
    );
    s.write(
        "work/sub/.fen/extensions/near.lua",
        &tool_extension("near_tool", "nearer"),
    );
    // Above the repository root: must not be searched.
    s.write(
        ".fen/extensions/outside.lua",
        &tool_extension("outside_tool", "outside"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["--trust", "list", "tools", "--json"])
        .current_dir(s.cwd().join("sub/deeper"))
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .env_remove("FEN_EXTENSIONS_PATH")
        .env_remove("FEN_EXTENSION_ROOT")
        .output()
        .unwrap();
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(find(&tools, "name", "top_tool").len(), 1);
    assert_eq!(find(&tools, "name", "near_tool").len(), 1);
    assert!(find(&tools, "name", "outside_tool").is_empty());
}

#[test]
fn contribution_name_collisions_keep_the_loser_visible_with_shadowed_by() {
    let s = Sandbox::new();
    // Two differently named extensions both register tool "shared": FEN_EXTENSIONS_PATH is
    // searched before the config directory, so its contribution wins.
    let extra = s.root().join("extra");
    s.write(
        "extra/first.lua",
        &tool_extension("shared", "from FEN_EXTENSIONS_PATH"),
    );
    s.write(
        "config/fen/extensions/second.lua",
        &tool_extension("shared", "from config"),
    );
    let out = s.fen_env(
        &["list", "tools", "--json"],
        &[("FEN_EXTENSIONS_PATH", extra.to_str().unwrap())],
    );
    assert!(out.status.success());
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shared = find(&tools, "name", "shared");
    assert_eq!(shared.len(), 2);
    assert_eq!(shared[0]["owner"], "first");
    assert_eq!(shared[0]["shadowed_by"], serde_json::Value::Null);
    assert_eq!(shared[1]["owner"], "second");
    assert_eq!(shared[1]["shadowed_by"], "first");
}

#[test]
fn hidden_and_underscore_entries_are_skipped() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/.hidden.lua",
        &tool_extension("hidden_tool", "x"),
    );
    s.write(
        "config/fen/extensions/_private.lua",
        &tool_extension("private_tool", "x"),
    );
    s.write(
        "config/fen/extensions/_lib/init.lua",
        &tool_extension("lib_tool", "x"),
    );
    s.write(
        "config/fen/extensions/visible.lua",
        &tool_extension("visible_tool", "x"),
    );
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let names: Vec<&str> = exts
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"visible"));
    for hidden in [".hidden", "hidden", "_private", "private", "_lib"] {
        assert!(
            !names.contains(&hidden),
            "{hidden} should be skipped: {names:?}"
        );
    }
}

#[test]
fn a_directory_beats_a_file_of_the_same_name() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/both.lua",
        &tool_extension("both_tool", "file"),
    );
    s.write(
        "config/fen/extensions/both/init.lua",
        &tool_extension("both_tool", "dir"),
    );
    let tools = s.fen_json(&["list", "tools", "--json"]);
    assert_eq!(find(&tools, "name", "both_tool")[0]["description"], "dir");
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let both = find(&exts, "name", "both");
    assert_eq!(both.len(), 2);
    assert_eq!(both[0]["status"], "loaded");
    assert!(both[0]["path"].as_str().unwrap().ends_with("both"));
    assert_eq!(both[1]["status"], "shadowed");
}

#[test]
fn manifests_name_describe_disable_and_require_binaries() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/dirname/manifest.lua",
        r#"return { name = "renamed", description = "has a manifest", entry = "main.lua" }"#,
    );
    s.write(
        "config/fen/extensions/dirname/main.lua",
        &tool_extension("renamed_tool", "x"),
    );
    s.write(
        "config/fen/extensions/off/manifest.lua",
        r#"return { enabled_by_default = false }"#,
    );
    s.write(
        "config/fen/extensions/off/init.lua",
        &tool_extension("off_tool", "x"),
    );
    s.write(
        "config/fen/extensions/needs/manifest.lua",
        r#"return { requires = { bin = { "sh", "fen-no-such-binary-xyz" } } }"#,
    );
    s.write(
        "config/fen/extensions/needs/init.lua",
        &tool_extension("needs_tool", "x"),
    );

    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let renamed = find(&exts, "name", "renamed");
    assert_eq!(renamed[0]["status"], "loaded");
    assert_eq!(renamed[0]["description"], "has a manifest");
    assert_eq!(find(&exts, "name", "off")[0]["status"], "disabled");
    let needs = find(&exts, "name", "needs")[0];
    assert_eq!(needs["status"], "missing-deps");
    let msg = needs["message"].as_str().unwrap();
    assert!(
        msg.contains("fen-no-such-binary-xyz") && !msg.contains("sh,"),
        "{msg}"
    );

    let tools = s.fen_json(&["list", "tools", "--json"]);
    assert_eq!(find(&tools, "name", "renamed_tool").len(), 1);
    assert!(find(&tools, "name", "off_tool").is_empty());
    assert!(find(&tools, "name", "needs_tool").is_empty());

    // An explicit --extension always loads, even when disabled by default.
    let off = s.root().join("config/fen/extensions/off");
    let out = s.fen(&[
        "--extension",
        off.to_str().unwrap(),
        "list",
        "tools",
        "--json",
    ]);
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(find(&tools, "name", "off_tool").len(), 1);
}

#[test]
fn broken_extensions_fail_alone_and_leave_nothing_behind() {
    let s = Sandbox::new();
    // Syntax error.
    s.write(
        "config/fen/extensions/syntax.lua",
        "return function(api) api.register( end",
    );
    // Runtime error at load, after a successful registration (must be rolled back).
    s.write(
        "config/fen/extensions/boom.lua",
        r#"return function(api)
  api.register("command", { name = "boom_cmd", handler = function() end })
  api.on("user", function() end)
  error("kaboom at load")
end"#,
    );
    // Bad spec: execute missing, after a good tool (rolled back too).
    s.write(
        "config/fen/extensions/badspec.lua",
        r#"return function(api)
  api.register("tool", { name = "partial_tool", description = "d", parameters = {}, execute = function() end })
  api.register("tool", { name = "bad_tool", description = "d", parameters = {} })
end"#,
    );
    s.write(
        "config/fen/extensions/good.lua",
        &tool_extension("good_tool", "fine"),
    );

    let out = s.fen(&["list", "extensions", "--json"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("extension 'boom' failed to load"),
        "{stderr}"
    );
    let exts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |n: &str| {
        find(&exts, "name", n)[0]["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let message = |n: &str| {
        find(&exts, "name", n)[0]["message"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(status("syntax"), "error");
    assert!(
        message("syntax").contains("syntax.lua:1"),
        "{}",
        message("syntax")
    );
    assert_eq!(status("boom"), "error");
    assert!(message("boom").contains("kaboom at load"));
    assert_eq!(status("badspec"), "error");
    let bad = message("badspec");
    for needle in [
        "extension 'badspec'",
        "badspec.lua",
        "tool",
        "'execute'",
        "function",
    ] {
        assert!(bad.contains(needle), "{needle:?} missing in {bad}");
    }
    assert_eq!(status("good"), "loaded");

    let tools = s.fen_json(&["list", "tools", "--json"]);
    assert_eq!(find(&tools, "name", "good_tool").len(), 1);
    assert!(find(&tools, "name", "partial_tool").is_empty());
    assert!(find(&tools, "name", "bad_tool").is_empty());
    let commands = s.fen_json(&["list", "commands", "--json"]);
    assert!(find(&commands, "name", "boom_cmd").is_empty());
    assert_eq!(find(&commands, "name", "help").len(), 1);
}

#[test]
fn bad_specs_name_the_kind_field_and_expectation() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/enum.lua",
        r#"return function(api)
  api.register("tool", { name = "t", description = "d", parameters = {}, execute = function() end, risk = "nuke" })
end"#,
    );
    s.write(
        "config/fen/extensions/kind.lua",
        r#"return function(api) api.register("tol", { name = "x" }) end"#,
    );
    s.write(
        "config/fen/extensions/wrongtype.lua",
        r#"return function(api) api.register("command", { name = 42, handler = function() end }) end"#,
    );
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let message = |n: &str| {
        find(&exts, "name", n)[0]["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        message("enum")
            .contains("field 'risk' expected one of \"read\", \"write\", \"shell\", got \"nuke\""),
        "{}",
        message("enum")
    );
    assert!(
        message("kind").contains("unknown register kind 'tol'")
            && message("kind").contains("did you mean 'tool'")
    );
    assert!(
        message("wrongtype").contains("field 'name' expected string, got a number"),
        "{}",
        message("wrongtype")
    );
}

#[test]
fn require_and_api_load_find_sibling_files() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/multi/helpers/text.lua",
        r#"return { shout = function(s) return s:upper() end }"#,
    );
    s.write(
        "config/fen/extensions/multi/data.lua",
        r#"return { word = "sibling" }"#,
    );
    s.write(
        "config/fen/extensions/multi/init.lua",
        r#"local text = require("helpers.text")
return function(api)
  local data = api.load("data")
  local nested = api.load("helpers.text")
  local ok, missing = pcall(api.load, "helpers.nope")
  assert(not ok and tostring(missing):find("helpers/nope.lua", 1, true), tostring(missing))
  api.register("tool", { name = "multi_tool", description = nested.shout(data.word),
    parameters = {}, execute = function() end })
end"#,
    );
    let tools = s.fen_json(&["list", "tools", "--json"]);
    assert_eq!(
        find(&tools, "name", "multi_tool")[0]["description"],
        "SIBLING"
    );
}

#[test]
fn first_party_overlay_replaces_the_embedded_extensions() {
    let s = Sandbox::new();
    // A source checkout with the first-party category layout.
    s.write(
        "checkout/extensions/behaviors/kernel/essentials/init.lua",
        r#"return function(api)
  api.register("command", { name = "help", description = "overlay help", handler = function() return "x" end })
end"#,
    );
    let root = s.root().join("checkout/extensions");
    let out = s.fen_env(
        &["list", "commands", "--json"],
        &[("FEN_EXTENSION_ROOT", root.to_str().unwrap())],
    );
    let commands: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        find(&commands, "name", "help")[0]["description"],
        "overlay help"
    );
    assert!(
        find(&commands, "name", "reload").is_empty(),
        "the embedded essentials must be shadowed"
    );
    let exts = s.fen_json(&[
        "--extension-root",
        root.to_str().unwrap(),
        "list",
        "extensions",
        "--json",
    ]);
    let ess = find(&exts, "name", "essentials");
    assert_eq!(ess[0]["root_kind"], "overlay");
    assert_eq!(ess[0]["first_party"], true);
    assert_eq!(ess[1]["status"], "shadowed");
}

#[test]
fn untrusted_project_code_never_runs() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    let marker = s.root().join("ran");
    let m = marker.to_string_lossy().to_string();
    // The entry would leave a mark if it ran; the manifest (which runs with no globals) would
    // rename the extension.
    s.write(
        "work/.fen/extensions/evil/manifest.lua",
        "return { name = 'essentials' }",
    );
    s.write(
        "work/.fen/extensions/evil/init.lua",
        &format!("io.open({m:?} .. '.entry', 'w'):close() return function(api) end"),
    );
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let evil = find(&exts, "name", "evil");
    assert_eq!(evil.len(), 1, "{exts:#}");
    assert_eq!(evil[0]["status"], "untrusted");
    assert!(evil[0]["message"].as_str().unwrap().contains("--trust"));
    // Listed under its directory's name: its manifest was not read.
    assert!(!marker.with_extension("entry").exists(), "the entry ran");
    // It shadows nothing: the first-party extension it would have named still loads.
    assert_eq!(find(&exts, "name", "essentials")[0]["status"], "loaded");
    // Headless runs never ask; --trust loads it for the run.
    let out = s.fen(&["--trust", "list", "extensions", "--json"]);
    assert!(out.status.success());
    assert!(marker.with_extension("entry").exists());
    // trusted.json (what an interactive "yes" writes) trusts the folder for later runs.
    std::fs::remove_file(marker.with_extension("entry")).unwrap();
    fen::kernel::trust::trust(&s.state().join("fen"), &s.cwd()).unwrap();
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    assert_ne!(find(&exts, "name", "essentials")[0]["status"], "untrusted");
    assert!(marker.with_extension("entry").exists());
}

/// Issue 11.11: a spec missing several required fields named only the first.
#[test]
fn a_register_spec_missing_several_fields_names_only_the_first() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/bare.lua",
        r#"return function(api) api.register("tool", { name = "bare" }) end"#,
    );
    let exts = s.fen_json(&["list", "extensions", "--json"]);
    let message = find(&exts, "name", "bare")[0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("missing: description, parameters, execute"),
        "{message}"
    );
}

/// `fen list tools` boots without the embedded presenters (`Kernel::boot_for_tool_listing`):
/// right only while none of them registers a tool, and its listing is the full boot's.
#[test]
fn embedded_presenters_register_no_tools_so_tool_listings_skip_them() {
    let s = Sandbox::new();
    let k = fen::host::Kernel::boot(s.boot_options()).unwrap();
    let presenters: Vec<String> = k
        .extensions()
        .iter()
        .filter(|r| fen::host::embedded_presenter(r))
        .map(|r| r.name.clone())
        .collect();
    for p in ["tui", "acp", "rpc", "print", "json", "stdio"] {
        assert!(presenters.iter().any(|n| n == p), "{p} in {presenters:?}");
    }
    let full = k.list_json("tool");
    for t in &full {
        let owner = t["owner"].as_str().unwrap_or_default();
        assert!(
            !presenters.iter().any(|p| p == owner),
            "the presenter {owner} registers a tool: `fen list tools` would miss it"
        );
    }
    let pairs = |rows: &[serde_json::Value]| {
        let mut v: Vec<(String, String, String)> = rows
            .iter()
            .map(|t| {
                let f = |k: &str| t[k].as_str().unwrap_or_default().to_string();
                (f("name"), f("owner"), f("description"))
            })
            .collect();
        v.sort();
        v
    };
    let listed = s.fen_json(&["--trust", "list", "tools", "--json"]);
    let listed = listed.as_array().expect("a JSON list");
    assert!(full.len() > 5, "{full:?}");
    assert_eq!(pairs(listed), pairs(&full));
}
