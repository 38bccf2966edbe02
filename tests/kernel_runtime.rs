//! The kernel through its library API, on real files: reload semantics, api.state, the event
//! bus (validation, handler isolation), prompt assembly and command dispatch.

use crate::common;
use common::{tool_extension, Sandbox};
use fen::host::Kernel;
use fen::kernel::Status;

fn tool_description(k: &Kernel, tool: &str) -> Option<String> {
    k.list_json("tool")
        .into_iter()
        .find(|t| t["name"] == tool && t["shadowed_by"].is_null())
        .and_then(|t| t["description"].as_str().map(str::to_string))
}

fn status(k: &Kernel, name: &str) -> (Status, Option<String>) {
    let r = k
        .extensions()
        .into_iter()
        .find(|r| r.name == name)
        .expect("extension listed");
    (r.status, r.message)
}

#[test]
fn reload_replaces_contributions_and_keeps_state() {
    let s = Sandbox::new();
    let counter = r#"return function(api)
  local st = api.state()
  st.loads = (st.loads or 0) + 1
  api.register("tool", { name = "counter", description = "VERSION loads=" .. st.loads,
    parameters = {}, execute = function() end })
end"#;
    let path = s.write(
        "config/fen/extensions/counter.lua",
        &counter.replace("VERSION", "v1"),
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    assert_eq!(
        tool_description(&k, "counter").as_deref(),
        Some("v1 loads=1")
    );

    std::fs::write(&path, counter.replace("VERSION", "v2")).unwrap();
    let report = k.reload();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(
        tool_description(&k, "counter").as_deref(),
        Some("v2 loads=2")
    );
    // Exactly one tool of that name: the old contribution was removed, not duplicated.
    assert_eq!(
        k.list_json("tool")
            .iter()
            .filter(|t| t["name"] == "counter")
            .count(),
        1
    );
}

#[test]
fn an_extension_that_breaks_on_reload_keeps_its_previous_contributions() {
    let s = Sandbox::new();
    let path = s.write(
        "config/fen/extensions/fragile.lua",
        &tool_extension("fragile_tool", "working"),
    );
    s.write(
        "config/fen/extensions/steady.lua",
        &tool_extension("steady_tool", "steady v1"),
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    assert_eq!(
        tool_description(&k, "fragile_tool").as_deref(),
        Some("working")
    );

    std::fs::write(&path, "return function(api) error('now broken') end").unwrap();
    s.write(
        "config/fen/extensions/steady.lua",
        &tool_extension("steady_tool", "steady v2"),
    );
    let report = k.reload();
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].1.contains("now broken"));
    assert_eq!(
        tool_description(&k, "fragile_tool").as_deref(),
        Some("working"),
        "old contribution kept"
    );
    assert_eq!(
        tool_description(&k, "steady_tool").as_deref(),
        Some("steady v2"),
        "others reload"
    );
    let (st, msg) = status(&k, "fragile");
    assert_eq!(st, Status::Error);
    assert!(msg.unwrap().contains("kept its previous contributions"));

    // Fixed again: the new version replaces the kept one.
    std::fs::write(&path, tool_extension("fragile_tool", "fixed")).unwrap();
    assert!(k.reload().errors.is_empty());
    assert_eq!(
        tool_description(&k, "fragile_tool").as_deref(),
        Some("fixed")
    );
    assert_eq!(status(&k, "fragile").0, Status::Loaded);
}

#[test]
fn a_removed_extension_loses_its_contributions_on_reload() {
    let s = Sandbox::new();
    let path = s.write(
        "config/fen/extensions/gone.lua",
        &tool_extension("gone_tool", "here"),
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    assert!(tool_description(&k, "gone_tool").is_some());
    std::fs::remove_file(path).unwrap();
    let report = k.reload();
    assert_eq!(report.removed, vec!["gone".to_string()]);
    assert!(tool_description(&k, "gone_tool").is_none());
}

#[test]
fn the_reload_command_runs_through_the_essentials_extension() {
    let s = Sandbox::new();
    let path = s.write(
        "config/fen/extensions/late.lua",
        &tool_extension("late_tool", "before"),
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    std::fs::write(&path, tool_extension("late_tool", "after")).unwrap();
    let text = common::run_command(&k, "/reload").unwrap().unwrap();
    assert!(text.starts_with("reloaded "), "{text}");
    assert_eq!(tool_description(&k, "late_tool").as_deref(), Some("after"));

    let help = common::run_command(&k, "/help").unwrap().unwrap();
    assert!(help.contains("/help") && help.contains("/reload"), "{help}");
    let err = common::run_command(&k, "/relaod").unwrap_err();
    assert!(
        err.contains("unknown command: /relaod") && err.contains("did you mean /reload"),
        "{err}"
    );
}

#[test]
fn handler_errors_become_extension_error_and_delivery_goes_on() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/a_thrower.lua",
        r#"return function(api)
  api.on("info", function(ev) error("handler exploded") end)
  -- A broken extension-error handler must not loop.
  api.on("extension-error", function(ev) error("and again") end)
end"#,
    );
    s.write(
        "config/fen/extensions/b_listener.lua",
        r#"return function(api)
  local st = api.state()
  st.seen = {}
  st.errors = {}
  api.on("info", function(ev) table.insert(st.seen, ev.info) end)
  api.on("extension-error", function(ev) table.insert(st.errors, ev) end)
  api.on("*", function(ev) st.all = (st.all or 0) + 1 end)
  api.register("command", { name = "probe", handler = function()
    local e = st.errors[1] or {}
    return string.format("seen=%s errors=%d owner=%s event=%s error=%s tb=%s all=%d",
      table.concat(st.seen, ","), #st.errors, tostring(e.owner), tostring(e.event),
      tostring(e.error), tostring(e.traceback ~= nil), st.all or 0)
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    emit_json(&k, &serde_json::json!({"type": "info", "info": "hello"})).unwrap();
    let probe = common::run_command(&k, "/probe").unwrap().unwrap();
    assert!(probe.contains("seen=hello"), "{probe}");
    assert!(probe.contains("errors=1"), "{probe}");
    assert!(
        probe.contains("owner=a_thrower") && probe.contains("event=info"),
        "{probe}"
    );
    assert!(
        probe.contains("handler exploded") && probe.contains("tb=true"),
        "{probe}"
    );
}

#[test]
fn events_with_a_contract_are_validated() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/emitter.lua",
        r#"return function(api)
  api.register("command", { name = "emit_bad", handler = function()
    local ok, err = pcall(api.emit, { type = "tool-result" })
    return tostring(err)
  end })
  api.register("command", { name = "emit_custom", handler = function()
    local ok = pcall(api.emit, { type = "my-own-event", anything = 1 })
    return tostring(ok)
  end })
  api.register("command", { name = "emit_wrong_type", handler = function()
    local ok, err = pcall(api.emit, { type = "queued", line = 42 })
    return tostring(err)
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let bad = common::run_command(&k, "/emit_bad").unwrap().unwrap();
    assert!(
        bad.contains("extension 'emitter'")
            && bad.contains("'tool-result'")
            && bad.contains("field 'result'"),
        "{bad}"
    );
    assert_eq!(
        common::run_command(&k, "/emit_custom").unwrap().unwrap(),
        "true"
    );
    let wrong = common::run_command(&k, "/emit_wrong_type")
        .unwrap()
        .unwrap();
    assert!(
        wrong.contains("field 'line' expected string, got a number"),
        "{wrong}"
    );
    // From Rust too.
    let err = emit_json(&k, &serde_json::json!({"type": "llm-end"})).unwrap_err();
    assert!(err.to_string().contains("field 'message'"), "{err}");
}

#[test]
fn prompt_fragments_assemble_in_order_and_a_failing_one_is_skipped() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/prompts.lua",
        r#"return function(api)
  api.prompt("third", { id = "c", order = 1030 })
  api.prompt(function() return "first (dynamic)" end, { id = "a", order = 1010 })
  api.prompt(function() error("broken fragment") end, { id = "x", order = 1015 })
  api.prompt("second", { id = "b", order = 1020 })
  api.prompt("second, replaced", { id = "b", order = 1020 })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    // After the first-party fragments (orders 0-30), in order, the broken one left out.
    let prompt = k.assemble_prompt();
    assert!(
        prompt.ends_with("\n\nfirst (dynamic)\n\nsecond, replaced\n\nthird"),
        "{prompt}"
    );
    assert!(prompt.starts_with("You are fen"), "{prompt}");
}

#[test]
fn api_list_returns_read_only_snapshots() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/lister.lua",
        r#"return function(api)
  api.register("command", { name = "try_write", description = "orig", handler = function()
    local cmds = api.list("command")
    local mine
    for _, c in ipairs(cmds) do if c.name == "try_write" then mine = c end end
    local ok, err = pcall(function() mine.description = "changed" end)
    return tostring(ok) .. "|" .. tostring(err) .. "|" .. api.list("command")[1].owner
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out = common::run_command(&k, "/try_write").unwrap().unwrap();
    assert!(
        out.starts_with("false|") && out.contains("read-only"),
        "{out}"
    );
    let desc = k
        .list_json("command")
        .into_iter()
        .find(|c| c["name"] == "try_write")
        .unwrap();
    assert_eq!(desc["description"], "orig");
}

#[test]
fn api_log_writes_json_lines_to_the_state_dir() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/logger.lua",
        r#"return function(api) api.log("warn", "careful now") end"#,
    );
    let _k = Kernel::boot(s.boot_options()).unwrap();
    let log = std::fs::read_to_string(s.state().join("fen/logs.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(line["level"], "warn");
    assert_eq!(line["owner"], "logger");
    assert_eq!(line["msg"], "careful now");
}

/// The api functions that do not depend on the extension are made once, but every extension
/// gets tables of its own: changing a field of one's `api.turn` changes nobody else's, and
/// `api.kernel` is still there for first-party extensions only.
#[test]
fn each_extension_gets_api_tables_of_its_own() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/aaa_vandal.lua",
        r#"return function(api)
  api.turn.submit = "vandalized"
  api.session.list = nil
  api.kernel = "not mine"
end"#,
    );
    s.write(
        "config/fen/extensions/zzz_probe.lua",
        r#"return function(api)
  local kinds = {}
  for _, k in ipairs({ "submit", "cancel", "busy", "complete", "replace_messages",
      "context_window", "messages" }) do
    kinds[#kinds + 1] = "turn." .. k .. "=" .. type(api.turn[k])
  end
  for _, k in ipairs({ "info", "list", "new", "resume", "append_state", "latest_state",
      "append_compaction" }) do
    kinds[#kinds + 1] = "session." .. k .. "=" .. type(api.session[k])
  end
  kinds[#kinds + 1] = "kernel=" .. type(api.kernel)
  kinds[#kinds + 1] = "list=" .. type(api.list) .. " enqueue=" .. type(api.enqueue)
  api.register("command", { name = "probe", description = "d", handler = function()
    return table.concat(kinds, " ")
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out = common::run_command(&k, "/probe").unwrap().unwrap();
    for want in [
        "turn.submit=function",
        "turn.messages=function",
        "session.list=function",
        "session.append_state=function",
        "session.append_compaction=function",
        "kernel=nil",
        "list=function enqueue=function",
    ] {
        assert!(out.contains(want), "{want} not in {out}");
    }
    // A first-party extension's api.kernel works (the reload command goes through it), also
    // after a user extension replaced its own.
    let reloaded = common::run_command(&k, "/reload")
        .unwrap()
        .unwrap_or_default();
    assert!(reloaded.contains("reloaded"), "{reloaded}");
    assert_eq!(common::run_command(&k, "/probe").unwrap().unwrap(), out);
}

/// `api.load` finds sibling files (its `require` is made on first use) and caches modules.
#[test]
fn api_load_loads_sibling_files_on_demand() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/loader/helper.lua",
        "LOADS = (LOADS or 0) + 1\nreturn { n = LOADS }",
    );
    s.write(
        "config/fen/extensions/loader/init.lua",
        r#"return function(api)
  api.register("command", { name = "load_twice", description = "d", handler = function()
    local a = api.load("helper")
    local b = api.load("helper")
    local ok, err = pcall(api.load, "missing")
    return tostring(a.n) .. "|" .. tostring(a == b) .. "|" .. tostring(ok) .. "|" .. tostring(err)
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out = common::run_command(&k, "/load_twice").unwrap().unwrap();
    assert!(out.starts_with("1|true|false|"), "{out}");
    assert!(out.contains("no sibling file missing.lua"), "{out}");
}

/// After boot the collector waits until the heap has grown by about its own size (a short
/// `fen tool` run never collects), and then runs again: garbage made during boot is finalized
/// only then.
#[test]
fn the_first_collection_after_boot_waits_for_the_heap_to_grow() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/boot_garbage.lua",
        r#"return function(api)
  setmetatable({}, { __gc = function() _G.BOOT_GARBAGE_FINALIZED = true end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let allocate = r#"
      local kb = ...
      local keep = {}
      for i = 1, math.floor(kb / 8) do keep[i] = string.rep(string.char(i % 256), 8 * 1024 - 64) end
      return _G.BOOT_GARBAGE_FINALIZED == true
    "#;
    let heap_kb = (k.lua.used_memory() / 1024) as i64;
    let finalized: bool = k.lua.load(allocate).call(heap_kb / 2).unwrap();
    assert!(
        !finalized,
        "a collection ran before the heap grew by half its size"
    );
    let finalized: bool = k.lua.load(allocate).call(heap_kb * 3).unwrap();
    assert!(finalized, "no collection ran after the heap grew threefold");
}

/// The built-in providers register at boot without loading their wire protocol modules; the
/// first call of a spec function loads the module and answers as it does.
#[test]
fn provider_protocol_modules_load_on_first_use() {
    let s = Sandbox::new();
    let k = Kernel::boot(s.boot_options()).unwrap();
    let loaded = |m: &str| -> bool {
        k.lua
            .load(format!("return package.loaded[{m:?}] ~= nil"))
            .eval()
            .unwrap()
    };
    for m in [
        "fen.lib.provider",
        "fen.lib.anthropic_messages",
        "fen.lib.openai_completions",
        "fen.lib.openai_responses",
    ] {
        assert!(!loaded(m), "{m} loaded at boot");
    }
    let spec = |name: &str| {
        k.inner
            .registry
            .borrow()
            .get("provider", name)
            .unwrap()
            .spec
            .clone()
    };
    let anthropic = spec("anthropic");
    assert_eq!(
        anthropic.get::<String>("api").unwrap(),
        "anthropic-messages"
    );
    let stop: String = anthropic
        .get::<mlua::Function>("map_stop_reason")
        .unwrap()
        .call("tool_use")
        .unwrap();
    assert_eq!(stop, "tool-use");
    assert!(loaded("fen.lib.anthropic_messages") && loaded("fen.lib.provider"));
    assert!(!loaded("fen.lib.openai_responses"));
    let openai = spec("openai");
    let tools: mlua::Table = openai
        .get::<mlua::Function>("convert_tools")
        .unwrap()
        .call(k.lua.load(r#"return {{ name = "t", description = "d", parameters = { type = "object" } }}"#).eval::<mlua::Table>().unwrap())
        .unwrap();
    let first: mlua::Table = tools.get(1).unwrap();
    assert_eq!(first.get::<String>("type").unwrap(), "function");
}

/// Emits an event given as JSON from Rust (validated like `api.emit`).
fn emit_json(k: &Kernel, event: &serde_json::Value) -> mlua::Result<()> {
    match fen::kernel::convert::json_to_lua(&k.lua, event)? {
        mlua::Value::Table(t) => k.emit(t),
        _ => Err(mlua::Error::runtime("an event must be a table")),
    }
}

/// settings.json is read once per run: `api.settings` answers from what boot read, a change on
/// disk shows after `/reload`, which emits `settings-changed` with the keys that changed.
#[test]
fn settings_are_read_once_and_a_reload_reports_what_changed() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "yolo"}, "tui": {"theme": "dark"}}"#,
    );
    s.write(
        "config/fen/extensions/probe.lua",
        r#"return function(api)
  local st = api.state()
  api.on("settings-changed", function(ev) st.changed = table.concat(ev.keys, ",") end)
  api.register("command", { name = "probe", description = "settings", handler = function()
    local files = api.settings.files()
    return string.format("theme=%s changed=%s files=%d first=%s", tostring(api.settings.get("tui.theme")),
      tostring(st.changed), #files, files[1].scope)
  end })
end"#,
    );
    let k = Kernel::boot(s.boot_options()).unwrap();
    let probe = || common::run_command(&k, "/probe").unwrap().unwrap();
    assert_eq!(probe(), "theme=dark changed=nil files=3 first=user");
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "yolo"}, "tui": {"theme": "light"}}"#,
    );
    assert_eq!(probe(), "theme=dark changed=nil files=3 first=user");
    k.reload();
    assert_eq!(probe(), "theme=light changed=tui files=3 first=user");
}
