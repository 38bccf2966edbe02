-- permissions: the permission policy, the first `before_tool` hook (order 0). Every tool call
-- is judged by the native analyser (`fen.native.policy`: shell syntax, wrappers, paths,
-- secrets, floors, rules) under the mode, then allowed, denied, or asked:
--   - interactive presenters answer `ctx.ask` (y once, s session, a always, n no, c cancel);
--   - headless runs never wait: `--on-ask deny` (default) or `allow`; a subagent child runs
--     with `--on-ask parent`: the ask goes to the parent fen as a `subagent-ask` JSON line on
--     stdout and the answer comes back as a `subagent-answer` line on stdin.
-- Rules come from settings.json: the user's (~/.config/fen/settings.json), the project's
-- (.fen/settings.json; it may only tighten unless the folder is trusted) and the personal
-- project file (.fen/settings.local.json, where "always" answers go). Every decision is a line
-- of $XDG_STATE_HOME/fen/permissions.jsonl and a `permission-decision` event. Shell commands
-- of tools run in the OS sandbox the mode calls for (see docs/permissions.md).
local native = require("fen.native")

-- By strictness (an untrusted project may only pick a stricter one); plan refuses all but reads.
local MODES = { plan = 0, safe = 1, default = 2, auto = 3, yolo = 4 }

local function read_json(path)
  local text = native.fs.read_text(path)
  if not text then return nil end
  return native.json.decode(text)
end

--- Writes JSON atomically (a temporary file renamed over the old one, parents created). Sync:
--- the "always" answers arrive in event handlers, which cannot wait.
local function write_json(path, value)
  assert(native.fs.write_small(path, native.json.encode(value)))
end

return function(api)
  local state = api.state()
  -- Kept across /reload: session rules and what this turn denied.
  state.session_rules = state.session_rules or {}
  state.denied = state.denied or {}
  state.mode_override = state.mode_override

  local function approved_path() return native.paths.state_dir .. "/approved.json" end

  --- Rules "always" answers wrote for this project (kept outside the folder, so a cloned
  --- repository cannot forge them).
  local function approved_rules(root)
    local all = read_json(approved_path()) or {}
    return all[root] or {}
  end

  --- `sandbox.unsandboxed` rules "always" answers to an escalation wrote for this project
  --- (same file, keyed apart from the permission rules).
  local function approved_unsandboxed(root)
    local all = read_json(approved_path()) or {}
    return all["sandbox.unsandboxed:" .. root] or {}
  end

  --- Everything the settings files say, merged with the trust rules; `problems` lists what
  --- was refused and why.
  local function load_settings()
    local raw = api.kernel.run_options()
    local function str(v) return type(v) == "string" and v or nil end
    local opts = { permission_mode = str(raw.permission_mode), on_ask = str(raw.on_ask),
      headless = raw.headless == true, trusted = raw.trusted == true }
    -- The project folder (the repository root of fen's working directory), found once at start.
    local root = require("fen.lib.project").root(native.fs.cwd())
    local trusted = opts.trusted
    local merged = { rules = {}, dirs = {}, sandbox = {}, unsandboxed = {}, problems = {}, files = {}, root = root }
    local user_mode, project_mode
    local function take(path, scope)
      local s, err = native.policy.settings_rules(path)
      if not s then
        merged.problems[#merged.problems + 1] = err
        return
      end
      merged.files[#merged.files + 1] = path
      local approved = {}
      if scope == "local" then for _, r in ipairs(approved_rules(root)) do approved[r] = true end end
      for _, kind in ipairs({ "deny", "ask", "allow" }) do
        for _, r in ipairs(s[kind] or {}) do
          local loosens = kind == "allow"
          if scope == "user" or not loosens or trusted or approved[r.text] then
            merged.rules[#merged.rules + 1] = { text = r.text, kind = kind, file = path, line = r.line }
          else
            merged.problems[#merged.problems + 1] = string.format(
              "%s:%d: allow rule %s ignored: this folder is not trusted", path, r.line, r.text)
          end
        end
      end
      -- Rules whose commands run outside the OS sandbox loosen too: a project's count once the
      -- folder is trusted, or when an "always" answer recorded them outside the folder.
      local unsandboxed = type(s.sandbox) == "table" and s.sandbox.unsandboxed or nil
      if type(unsandboxed) == "table" then
        local approved_u = {}
        if scope == "local" then for _, r in ipairs(approved_unsandboxed(root)) do approved_u[r] = true end end
        for _, r in ipairs(unsandboxed) do
          if type(r) == "string" and (scope == "user" or trusted or approved_u[r]) then
            merged.unsandboxed[#merged.unsandboxed + 1] = r
          elseif type(r) == "string" then
            merged.problems[#merged.problems + 1] = string.format(
              "%s: sandbox.unsandboxed rule %s ignored: this folder is not trusted", path, r)
          end
        end
      end
      if scope == "user" or trusted then
        for _, d in ipairs(s.additional_dirs or {}) do merged.dirs[#merged.dirs + 1] = d end
        if type(s.sandbox) == "table" then
          for k, v in pairs(s.sandbox) do merged.sandbox[k] = v end
        end
      end
      if type(s.mode) == "string" then
        if scope == "user" then user_mode = s.mode else project_mode = s.mode end
      end
    end
    take(native.paths.config_dir .. "/settings.json", "user")
    take(root .. "/.fen/settings.json", "project")
    take(root .. "/.fen/settings.local.json", "local")
    -- A switch made in the session (/permissions, /plan, an approved plan) beats the flag.
    local mode = state.mode_override or opts.permission_mode or user_mode or "default"
    if project_mode and MODES[project_mode] and not opts.permission_mode and not state.mode_override then
      -- An untrusted project may only make the mode stricter.
      if trusted or MODES[project_mode] < (MODES[mode] or 2) then mode = project_mode end
    end
    if not MODES[mode] then
      merged.problems[#merged.problems + 1] = string.format("unknown permission mode %q; using default", mode)
      mode = "default"
    end
    merged.mode = mode
    merged.on_ask = opts.on_ask or "deny"
    merged.headless = opts.headless
    return merged
  end

  --- The policy of this session, built at the first call (and after a mode change).
  local function policy()
    if state.policy then return state.policy, state.settings end
    local s = load_settings()
    -- No bubblewrap trial here: it waits for the first command that runs sandboxed.
    local sb = native.policy.sandbox({ lazy = true })
    -- The OS sandbox: on in every mode but yolo unless settings turn it off.
    local sandbox_on = s.mode ~= "yolo" and s.sandbox.enabled ~= false and sb.tier ~= "none"
    if s.sandbox.required and sb.tier == "none" and s.mode ~= "yolo" then sandbox_on = false end
    local unsandboxed = {}
    for _, r in ipairs(s.unsandboxed) do unsandboxed[#unsandboxed + 1] = r end
    for _, r in ipairs(state.unsandboxed_session or {}) do unsandboxed[#unsandboxed + 1] = r end
    local allow_texts = {}
    for _, r in ipairs(s.rules) do
      if r.kind == "allow" then allow_texts[#allow_texts + 1] = r.text end
    end
    for _, r in ipairs(state.session_rules) do allow_texts[#allow_texts + 1] = r end
    local bad = native.policy.use_sandbox({
      enabled = s.mode ~= "yolo" and s.sandbox.enabled ~= false,
      required = s.sandbox.required == true,
      network = s.sandbox.network == true,
      writable_roots = s.sandbox.writable_roots or {},
      workspace = s.root,
      unsandboxed = unsandboxed,
      allow_rules = allow_texts,
      -- Auto mode runs commands sandboxed without asking: have the sandbox ready.
      prestart = s.mode == "auto",
    })
    for _, msg in ipairs(bad or {}) do s.problems[#s.problems + 1] = msg end
    local rules = {}
    for _, r in ipairs(s.rules) do rules[#rules + 1] = r end
    local tools = {}
    for _, t in ipairs(api.list("tool")) do tools[#tools + 1] = t.name end
    local p, errs = native.policy.new({
      cwd = native.fs.cwd(), additional_dirs = s.dirs, mode = s.mode, rules = rules,
      tools = tools, sandbox = sandbox_on,
    })
    if not p then
      -- A rule that can never match is an error naming its file and rule: fail closed by
      -- denying everything until it is fixed, and say why.
      error("permission rules: " .. table.concat(errs, "; "), 0)
    end
    for _, r in ipairs(state.session_rules) do p:add_rule(r, "allow") end
    -- A Markdown command's `allowed-tools`, for the turn it started.
    for _, r in ipairs(state.turn_rules or {}) do
      if not pcall(p.add_rule, p, r, "allow") then s.problems[#s.problems + 1] = "allowed-tools rule " .. r .. " ignored: it does not parse" end
    end
    s.sandbox_info = sb
    s.sandbox_on = sandbox_on
    state.policy, state.settings = p, s
    for _, msg in ipairs(s.problems) do api.log("warn", msg) end
    return p, s
  end

  local function record(call_id, tool, d, decision, source, extra)
    local ev = {
      type = "permission-decision", tool_call_id = call_id, tool = tool, decision = decision,
      source = source, subject = d and d.subject or "", reason = d and d.reason or "",
      segments = d and d.segments or {}, scope = extra and extra.scope or nil,
      mode = state.settings and state.settings.mode or "default",
      -- The analyser found a shell command that changes no file (checkpoints skip it).
      read_only = d and d.read_only or nil,
    }
    -- `scope`: what an approval covered (the user's answer) or would cover (the decision's
    -- suggested rules); `rule`: the rule that decided, with its file and line.
    local scope = ev.scope
    if scope == nil and d and d.scope and #d.scope > 0 then scope = d.scope end
    native.policy.audit({
      session = (api.session.info() or {}).id, call_id = call_id, tool = tool,
      segments = ev.segments, decision = decision, source = source, subject = ev.subject,
      reason = ev.reason, mode = ev.mode, scope = scope, rule = d and d.rule or nil,
    })
    api.emit(ev)
  end

  local function denial(d, source, detail)
    return string.format("permission denied: %s — %s: %s", d.subject ~= "" and d.subject or "the call", source, detail)
  end

  local function persist_always(rules)
    local s = state.settings
    local path = s.root .. "/.fen/settings.local.json"
    local current = read_json(path) or {}
    current.permissions = current.permissions or {}
    current.permissions.allow = current.permissions.allow or {}
    local all = read_json(approved_path()) or {}
    all[s.root] = all[s.root] or {}
    for _, r in ipairs(rules) do
      table.insert(current.permissions.allow, r)
      table.insert(all[s.root], r)
    end
    write_json(path, current)
    write_json(approved_path(), all)
  end

  --- "Always run outside the sandbox" for these rules: `sandbox.unsandboxed` of
  --- .fen/settings.local.json, and recorded in approved.json so it counts before the folder is
  --- trusted (as "always" approvals do).
  local function persist_unsandboxed(rules)
    local s = state.settings
    local path = s.root .. "/.fen/settings.local.json"
    local current = read_json(path) or {}
    current.sandbox = current.sandbox or {}
    current.sandbox.unsandboxed = current.sandbox.unsandboxed or {}
    local all = read_json(approved_path()) or {}
    local key = "sandbox.unsandboxed:" .. s.root
    all[key] = all[key] or {}
    for _, r in ipairs(rules) do
      table.insert(current.sandbox.unsandboxed, r)
      table.insert(all[key], r)
    end
    write_json(path, current)
    write_json(approved_path(), all)
  end

  -- The bash tool's escalation prompt answered "always for this command's rule": keep the
  -- rules for this session (also across a policy rebuild) and persist them.
  api.on("sandbox-always", function(ev)
    if type(ev.rules) ~= "table" then return end
    state.unsandboxed_session = state.unsandboxed_session or {}
    for _, r in ipairs(ev.rules) do table.insert(state.unsandboxed_session, r) end
    if not state.settings then pcall(policy) end
    if state.settings then
      local ok, err = pcall(persist_unsandboxed, ev.rules)
      if not ok then api.log("warn", "cannot save sandbox.unsandboxed: " .. tostring(err)) end
    end
  end)

  --- One person answers at a time; a later ask of the same turn re-decides after the answer
  --- before it (a "session" rule may now cover it).
  local asking = false

  local function before_tool(name, args, ctx)
    local ok, p = pcall(policy)
    if not ok then
      return { block = true, verbatim = true, reason = "permission denied: " .. tostring(p) .. " (fix the rule, then /reload)" }
    end
    local key = name .. " " .. native.json.encode(args or {})
    if state.denied[key] then
      return { block = true, verbatim = true, reason = "permission denied: already denied in this turn: " .. state.denied[key] }
    end
    while true do
      local d = p:decide(name, ctx.risk or "shell", args or {})
      if d.verdict == "allow" then
        record(ctx.call_id, name, d, "allow", d.source)
        return nil
      end
      if d.verdict == "deny" then
        local reason = denial(d, d.source, d.reason)
        state.denied[key] = reason
        record(ctx.call_id, name, d, "deny", d.source)
        return { block = true, verbatim = true, reason = reason }
      end
      -- Ask.
      local s = state.settings
      if s.headless and s.on_ask ~= "parent" then
        if s.on_ask == "allow" then
          record(ctx.call_id, name, d, "allow", "headless")
          return nil
        end
        local reason = denial(d, "headless", "no one to approve it (" .. d.reason .. "); run with --on-ask allow, or add an allow rule"
          .. (#d.scope > 0 and (" such as " .. d.scope[1]) or ""))
        state.denied[key] = reason
        record(ctx.call_id, name, d, "deny", "headless")
        return { block = true, verbatim = true, reason = reason }
      end
      if asking then
        native.sleep(50)
      else
        asking = true
        local question = string.format("Approve %s %q?", name, d.subject ~= "" and d.subject or native.json.encode(args or {}))
        -- The full request: a presenter that knows permissions (the line REPL) shows the items
        -- itself; one that shows a list (the TUI) gets the question with the items in it and
        -- the answers as options chosen by their letter.
        local lines = { question }
        for _, it in ipairs(d.items) do
          lines[#lines + 1] = string.format("  %s %s — %s", it.verdict == "allow" and "ok" or "??", it.subject, it.reason)
        end
        local scope = #d.scope > 0 and table.concat(d.scope, ", ") or nil
        local options = {
          { label = "y  yes, once", value = "y" },
          { label = "s  yes, for this session" .. (scope and (": " .. scope) or ""), value = "s" },
          { label = "a  always (.fen/settings.local.json)" .. (scope and (": " .. scope) or ""), value = "a" },
          { label = "n  no", value = "n" },
          { label = "c  no, and cancel the turn", value = "c" },
        }
        local ask = (s.headless and s.on_ask == "parent") and require("fen.lib.parent_ask").ask or ctx.ask
        local ok2, answer, by = pcall(ask, { kind = "permission", tool = name, question = question,
          title = "permission: " .. name, text = table.concat(lines, "\n"), options = options,
          items = d.items, scope = d.scope, reason = d.reason, call_id = ctx.call_id, args = args })
        asking = false
        -- Anything but a string (a failed or odd answer) is a no.
        if not ok2 or type(answer) ~= "string" then answer = "n" end
        -- A `before_ask` hook (a settings PermissionRequest hook) may have answered instead.
        local who = (ok2 and by == "hook") and "hook" or "user"
        local key1 = answer:sub(1, 1)
        if key1 == "y" then
          record(ctx.call_id, name, d, "allow", who, { scope = "once" })
          return nil
        elseif key1 == "s" or key1 == "a" then
          for _, r in ipairs(d.scope) do
            p:add_rule(r, "allow")
            table.insert(state.session_rules, r)
          end
          if key1 == "a" and #d.scope > 0 then pcall(persist_always, d.scope) end
          record(ctx.call_id, name, d, "allow", who, { scope = d.scope })
          return nil
        elseif key1 == "c" then
          api.turn.cancel()
          record(ctx.call_id, name, d, "deny", who)
          return { block = true, verbatim = true, reason = denial(d, who, who == "hook" and "a PermissionRequest hook stopped the turn" or "the user cancelled the turn") }
        else
          local why = answer:match("^n:%s*(.+)$")
          local reason = denial(d, who, why or "the user said no")
          state.denied[key] = reason
          record(ctx.call_id, name, d, "deny", who)
          return { block = true, verbatim = true, reason = reason }
        end
      end
    end
  end

  api.register("hook", { name = "permissions", order = 0, before_tool = before_tool,
    -- Build the policy when a prompt arrives, so the OS sandbox is chosen before a settings
    -- hook runs a command; it is built again at the first call, once every tool (MCP's too)
    -- has registered.
    before_turn = function()
      if state.policy or state.sandbox_ready then return nil end
      -- Only when settings hooks are configured (the hooks companion registers then): the
      -- first turn of other sessions starts without the wait.
      local wanted = false
      for _, h in ipairs(api.list("hook")) do
        if h.name == "claude-hooks" then wanted = true end
      end
      if wanted and pcall(policy) then state.policy, state.sandbox_ready = nil, true end
      return nil
    end })

  -- Bad rules are reported when the session starts, naming the file and the rule (and every
  -- call is refused until they are fixed: the policy fails closed).
  api.on("agent-started", function()
    state.policy = nil
    local s = load_settings()
    local tools = {}
    for _, t in ipairs(api.list("tool")) do tools[#tools + 1] = t.name end
    local p, errs = native.policy.new({ cwd = native.fs.cwd(), additional_dirs = s.dirs, mode = s.mode,
      rules = s.rules, tools = tools, sandbox = false })
    if not p then
      api.emit({ type = "error", error = "permission rules: " .. table.concat(errs, "; ") })
    end
    -- The mode settings chose is news to the rest (plan mode, the settings hooks' payloads).
    api.emit({ type = "permission-mode", mode = s.mode, initial = true })
  end)

  -- What was denied is remembered for one turn only.
  api.on("agent-turn-complete", function()
    state.denied = {}
    if state.turn_rules then state.turn_rules, state.policy = nil, nil end
  end)

  -- `permission-mode`: another extension switches the mode (plan mode's companion: /plan,
  -- Shift+Tab, an approved plan), as `/permissions MODE` does.
  api.on("permission-mode", function(ev)
    if ev.initial or type(ev.mode) ~= "string" or not MODES[ev.mode] then return end
    state.mode_override = ev.mode
    state.policy = nil
    -- What the old mode refused may run now (a write refused while planning).
    state.denied = {}
  end)

  -- `turn-rules`: allow rules for the next turn only (a Markdown command's `allowed-tools`,
  -- pre-approved as Claude Code does); floors and deny rules still win.
  api.on("turn-rules", function(ev)
    if type(ev.rules) ~= "table" then return end
    state.turn_rules = ev.rules
    state.policy = nil
  end)

  api.register("command", {
    name = "permissions",
    description = "Show the permission mode, the rules and where they come from, and the sandbox; `/permissions MODE` switches mode (safe, default, auto, yolo, plan).",
    handler = function(args)
      local want = args:match("^%s*(%a+)%s*$")
      if want then
        if not MODES[want] then return "unknown mode " .. want .. ": use safe, default, auto, yolo or plan" end
        api.emit({ type = "permission-mode", mode = want })
      end
      local ok, p_or_err, s = pcall(policy)
      if not ok then return "error: " .. tostring(p_or_err) end
      local lines = { "mode: " .. s.mode }
      local sb = native.policy.sandbox()
      lines[#lines + 1] = sb.status .. (s.sandbox_on and "" or " (not used in this mode)")
      lines[#lines + 1] = "  " .. sb.description:gsub("\n", "\n  ")
      lines[#lines + 1] = "rules:"
      if #s.rules == 0 and #state.session_rules == 0 then lines[#lines + 1] = "  (none)" end
      for _, r in ipairs(s.rules) do
        lines[#lines + 1] = string.format("  %-5s %s  (%s:%d)", r.kind, r.text, r.file, r.line)
      end
      for _, r in ipairs(state.session_rules) do
        lines[#lines + 1] = string.format("  allow %s  (this session)", r)
      end
      local outside = {}
      for _, r in ipairs(s.unsandboxed) do outside[#outside + 1] = r end
      for _, r in ipairs(state.unsandboxed_session or {}) do outside[#outside + 1] = r end
      if #outside > 0 then
        lines[#lines + 1] = "run outside the sandbox (sandbox.unsandboxed): " .. table.concat(outside, ", ")
      end
      for _, msg in ipairs(s.problems) do lines[#lines + 1] = "note: " .. msg end
      return table.concat(lines, "\n")
    end,
  })
end
