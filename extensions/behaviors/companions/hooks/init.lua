-- hooks: command hooks in Claude Code's settings format, so an existing setup keeps working.
-- Read from `hooks` of ~/.config/fen/settings.json (and ~/.claude/settings.json when
-- `hooks.import_claude` is true there), and — only once the folder is trusted, since hooks run
-- code — the project's .fen/settings.json, .fen/settings.local.json, .claude/settings.json and
-- .claude/settings.local.json:
--   {"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command",
--     "command": "...", "timeout": 60}]}]}}
-- Each hook gets Claude Code's JSON on its stdin (tool names mapped: bash → Bash, read →
-- Read ...; at most 8 MiB).
-- Exit 2 blocks (stderr goes to the model, or to the person for UserPromptSubmit); JSON on
-- stdout is honoured (decision, reason, continue, stopReason, systemMessage, and
-- hookSpecificOutput.permissionDecision / updatedInput / additionalContext, which for
-- PreToolUse is added to the call's result). Hooks only
-- tighten: their "allow" never beats the permission policy, which judges after them (and
-- judges the rewritten input). They run like bash does (the OS sandbox of tool commands,
-- secrets scrubbed), all hooks of one event at once, each with its timeout (default 60 s); a
-- hook that fails or hangs is reported and the turn goes on. PermissionRequest runs before an
-- approval is asked (a hook may answer it), PreCompact before a compaction (it may refuse
-- it), Notification beside an approval or a question and after `hooks.idle_after` seconds
-- (default 60) waiting for a prompt.
local native = require("fen.native")

local EVENTS = {
  "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
  "PostToolUseFailure", "PermissionRequest", "Notification", "Stop", "SubagentStop", "PreCompact",
}
local KNOWN = {}
for _, e in ipairs(EVENTS) do KNOWN[e] = true end

-- fen's tool names as Claude Code spells them (MCP tools are `mcp__server__tool` in both).
local CC_NAMES = { bash = "Bash", read = "Read", write = "Write", edit = "Edit", grep = "Grep",
  find = "Glob", ls = "LS", webfetch = "WebFetch", websearch = "WebSearch", todo = "TodoWrite",
  subagent = "Task" }

local DEFAULT_TIMEOUT = 60
-- Seconds at the prompt after a turn before Notification `idle_prompt` (Claude Code's 60 s).
local DEFAULT_IDLE = 60
local ERR_MARK = "<<fen-hook-stderr>>"

local project_root = require("fen.lib.project").root

-- Claude Code's settings files are a few small files read once per load (fen's own come from
-- `api.settings`, read once per run).
local function read_json(path)
  if not native.fs.stat(path) then return nil end
  local text, err = native.fs.read_text(path)
  if not text then return nil, err end
  local ok, v = pcall(native.json.decode, text)
  if not ok then return nil, string.format("%s: not valid JSON: %s", path, tostring(v)) end
  return v
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

--- Does a Claude Code matcher (`Edit|Write`, `mcp__.*`, `*`, empty) match any of `names`?
local function matches(matcher, names)
  if matcher == nil or matcher == "" or matcher == "*" then return true end
  for alt in tostring(matcher):gmatch("[^|]+") do
    alt = alt:match("^%s*(.-)%s*$")
    -- Regex and Lua patterns agree on `.`, `*` and `.*`; other magic characters are literal.
    local pat = "^" .. alt:gsub("[%%%-%+%?%[%]%(%)%^%$]", "%%%0") .. "$"
    for _, n in ipairs(names) do
      if n and n:match(pat) then return true end
    end
  end
  return false
end

return function(api)
  local state = api.state()
  -- Read the settings files again on /reload.
  state.config = nil
  -- PreToolUse `additionalContext` by call id, until the call's result is in.
  state.pre_context = state.pre_context or {}

  --- Every configured hook: `{event, matcher, command, timeout, source}`; `problems` lists
  --- files skipped and why.
  local function load()
    local opts = api.kernel.run_options() or {}
    local cwd = native.fs.cwd()
    local root = project_root(cwd)
    local home = os.getenv("HOME") or ""
    local out, problems = {}, {}
    --- One settings file: `s, err` when already loaded (fen's, from `api.settings`), else read.
    local function take(path, scope, loaded, s, err)
      if not loaded then s, err = read_json(path) end
      if err then problems[#problems + 1] = err end
      if type(s) ~= "table" or type(s.hooks) ~= "table" then return s end
      if scope == "project" and not opts.trusted then
        problems[#problems + 1] = path .. ": hooks not run: this folder is not trusted"
        return s
      end
      for event, groups in pairs(s.hooks) do
        if KNOWN[event] and type(groups) == "table" then
          for _, g in ipairs(groups) do
            for _, h in ipairs(type(g) == "table" and type(g.hooks) == "table" and g.hooks or {}) do
              if type(h) == "table" and (h.type == nil or h.type == "command") and type(h.command) == "string" then
                out[#out + 1] = { event = event, matcher = g.matcher, command = h.command,
                  timeout = tonumber(h.timeout) or DEFAULT_TIMEOUT, source = path }
              else
                problems[#problems + 1] = string.format("%s: a %s hook of type %s is not supported (only command hooks)",
                  path, event, tostring(type(h) == "table" and h.type))
              end
            end
          end
        elseif type(event) == "string" and not KNOWN[event] and event ~= "import_claude" and event ~= "idle_after" then
          problems[#problems + 1] = string.format("%s: unknown hook event %s", path, event)
        end
      end
      return s
    end
    local fen_files = {}
    for _, f in ipairs(api.settings.files()) do fen_files[f.scope] = f end
    local function take_fen(f, scope)
      if f then return take(f.path, scope, true, f.value, f.error) end
    end
    local user = take_fen(fen_files.user, "user")
    local idle = DEFAULT_IDLE
    if type(user) == "table" and type(user.hooks) == "table" then
      if user.hooks.import_claude == true then take(home .. "/.claude/settings.json", "user") end
      local v = user.hooks.idle_after
      if type(v) == "number" and v > 0 then
        idle = v
      elseif v ~= nil then
        problems[#problems + 1] = "settings.json: hooks.idle_after must be a number of seconds above 0 (default 60)"
      end
    end
    take_fen(fen_files.project, "project")
    take_fen(fen_files["local"], "project")
    for _, f in ipairs({ "/.claude/settings.json", "/.claude/settings.local.json" }) do
      take(root .. f, "project")
    end
    for _, p in ipairs(problems) do api.log("warn", "hooks: " .. p) end
    return { hooks = out, problems = problems, root = root, idle = idle }
  end

  local function config()
    if not state.config then state.config = load() end
    return state.config
  end

  -- The mode in force: the last one the policy judged with or was switched to, else the flag.
  api.on("permission-decision", function(ev) if type(ev.mode) == "string" then state.mode = ev.mode end end)
  api.on("permission-mode", function(ev) state.mode = ev.mode end)
  local function permission_mode()
    local o = api.kernel.run_options() or {}
    local m = state.mode or o.permission_mode or "default"
    -- Claude Code's names for the closest modes.
    return ({ auto = "acceptEdits", yolo = "bypassPermissions", plan = "plan" })[m] or m
  end

  local function notify(text)
    if not pcall(api.ui.notify, text) then api.log("warn", text) end
  end

  --- A hook that could not run, failed or timed out: told to the person (and in the event
  --- stream and the log), never to the model, and the turn goes on.
  local function report(text)
    api.log("warn", "hooks: " .. text)
    api.emit({ type = "info", text = text })
  end

  --- Runs the hooks of `event` whose matcher fits `names` with `input` (merged into the common
  --- fields) on stdin, all at once. Returns one row per hook: `{hook, code, stdout, stderr,
  --- json, failed}`.
  local function fire(event, names, input)
    local cfg = config()
    local picked = {}
    for _, h in ipairs(cfg.hooks) do
      if h.event == event and matches(h.matcher, names) then picked[#picked + 1] = h end
    end
    if #picked == 0 then return {} end
    local info = api.session.info() or {}
    local payload = { session_id = info.id or "", transcript_path = info.path or "", cwd = native.fs.cwd(),
      permission_mode = permission_mode(), hook_event_name = event }
    for k, v in pairs(input or {}) do payload[k] = v end
    -- The whole JSON on the hook's stdin (the supervisor refuses more than 8 MiB, and the
    -- hook is then reported as not run).
    local text = native.json.encode(payload)
    local runs = {}
    for i, h in ipairs(picked) do
      -- stderr lines marked so they can be told from stdout in the one stream the supervisor
      -- collects.
      local cmd = string.format(
        "{ ( %s\n) 2>&1 1>&3 3>&- | sed -u %s; exit \"${PIPESTATUS[0]}\"; } 3>&1",
        h.command, shell_quote("s/^/" .. ERR_MARK .. "/"))
      runs[i] = { command = cmd, cwd = native.fs.cwd(), timeout_ms = h.timeout * 1000, stdin = text,
        env = { CLAUDE_PROJECT_DIR = cfg.root, FEN_PROJECT_DIR = cfg.root } }
    end
    local results = native.process.run_all(runs)
    local rows = {}
    for i, h in ipairs(picked) do
      local r = results[i] or {}
      local out, err = {}, {}
      for line in ((r.text or "") .. "\n"):gmatch("(.-)\n") do
        local e = line:match("^" .. ERR_MARK:gsub("%p", "%%%0") .. "(.*)$")
        if e then err[#err + 1] = e else out[#out + 1] = line end
      end
      -- The supervisor's own status line ([exit N]) is not the hook's output.
      while #out > 0 and (out[#out] == "" or out[#out]:match("^%[exit %d+%]$") or out[#out]:match("^%[signal")) do
        table.remove(out)
      end
      local row = { hook = h, code = r.exit_code, stdout = table.concat(out, "\n"), stderr = table.concat(err, "\n") }
      local label = string.format("%s hook %q (%s)", event, h.command, h.source)
      if r.error then
        row.failed = true
        report(label .. " could not run: " .. tostring(r.error))
      elseif r.timed_out then
        row.failed = true
        report(string.format("%s timed out after %ds and was stopped", label, h.timeout))
      elseif r.exit_code ~= 0 and r.exit_code ~= 2 then
        row.failed = true
        report(string.format("%s failed (exit %s): %s", label, tostring(r.exit_code or r.signal), row.stderr))
      end
      if not row.failed and row.code == 0 and row.stdout:match("^%s*{") then
        local ok, j = pcall(native.json.decode, row.stdout)
        if ok and type(j) == "table" then row.json = j end
      end
      if row.json and type(row.json.systemMessage) == "string" then notify(row.json.systemMessage) end
      rows[#rows + 1] = row
    end
    return rows
  end

  --- What the rows of one firing decide together: the first block wins; contexts add up.
  local function verdict(rows)
    local v = { context = {} }
    for _, r in ipairs(rows) do
      local j = r.json or {}
      local hso = type(j.hookSpecificOutput) == "table" and j.hookSpecificOutput or {}
      if r.code == 2 and not v.block then
        v.block = r.stderr ~= "" and r.stderr or ("blocked by the hook " .. r.hook.command)
      end
      if j.continue == false and not v.stop then
        v.stop = type(j.stopReason) == "string" and j.stopReason or ("stopped by the hook " .. r.hook.command)
      end
      local pd = hso.permissionDecision
      if (pd == "deny" or j.decision == "block" or j.decision == "deny") and not v.block then
        v.block = hso.permissionDecisionReason or j.reason or ("blocked by the hook " .. r.hook.command)
      elseif pd == "ask" and not v.ask then
        v.ask = hso.permissionDecisionReason or ("the hook " .. r.hook.command .. " asks for approval")
      end
      if type(hso.updatedInput) == "table" then v.updated = hso.updatedInput end
      if type(hso.additionalContext) == "string" and hso.additionalContext ~= "" then
        v.context[#v.context + 1] = hso.additionalContext
      end
      if r.code == 0 and not r.json and r.stdout ~= "" then v.plain = (v.plain and (v.plain .. "\n") or "") .. r.stdout end
    end
    return v
  end

  local function tool_input(args)
    local input = {}
    for k, v in pairs(args or {}) do input[k] = v end
    if input.path and not input.file_path then input.file_path = input.path end
    return input
  end

  local function cc_name(name) return CC_NAMES[name] or name end

  --- Seconds idle at the prompt before Notification `idle_prompt`, when a hook listens for it.
  local function idle_after()
    for _, h in ipairs(config().hooks) do
      if h.event == "Notification" and matches(h.matcher, { "idle_prompt" }) then return config().idle end
    end
    return nil
  end

  -- PreToolUse runs before the permission policy (order 0), so a rewritten input is judged.
  -- Registered only when some hook is configured: no cost per call otherwise.
  if #config().hooks > 0 then api.register("hook", {
    name = "claude-hooks",
    order = -10,
    before_tool = function(name, args, ctx)
      local rows = fire("PreToolUse", { cc_name(name), name },
        { tool_name = cc_name(name), tool_input = tool_input(args), tool_use_id = ctx.call_id })
      if #rows == 0 then return nil end
      local v = verdict(rows)
      -- `additionalContext` reaches the model with the call's result (after_tool below).
      if #v.context > 0 then state.pre_context[ctx.call_id] = v.context end
      if v.stop then api.turn.cancel() return { block = true, reason = v.stop } end
      if v.block then return { block = true, verbatim = true, reason = "blocked by a PreToolUse hook: " .. v.block } end
      if v.ask then
        local ok, answer = pcall(ctx.ask, { kind = "permission", tool = name, question = v.ask, title = "hook: " .. name,
          text = v.ask, options = { { label = "y  yes", value = "y" }, { label = "n  no", value = "n" } } })
        if not ok or type(answer) ~= "string" or answer:sub(1, 1) ~= "y" then
          return { block = true, verbatim = true, reason = "blocked by a PreToolUse hook: " .. v.ask .. " (not approved)" }
        end
      end
      if v.updated then
        local new = {}
        for k, x in pairs(v.updated) do new[k] = x end
        if new.file_path and (args or {}).path ~= nil then new.path, new.file_path = new.file_path, nil end
        new.file_path = nil
        return { args = new }
      end
      return nil
    end,
    -- The kernel's after_tool contract: `result` = {is_error, details, text}; a string
    -- returned is appended to the result.
    after_tool = function(name, args, result, ctx)
      local event = result.is_error and "PostToolUseFailure" or "PostToolUse"
      local input = { tool_name = cc_name(name), tool_input = tool_input(args), tool_use_id = ctx.tool_call_id }
      if result.is_error then input.error = result.text
      else input.tool_response = { content = result.text, details = result.details } end
      local rows = fire(event, { cc_name(name), name }, input)
      local parts = {}
      for _, c in ipairs(state.pre_context[ctx.tool_call_id] or {}) do parts[#parts + 1] = "[PreToolUse hook] " .. c end
      state.pre_context[ctx.tool_call_id] = nil
      local v = verdict(rows)
      if v.block then parts[#parts + 1] = "[" .. event .. " hook] " .. v.block end
      for _, c in ipairs(v.context) do parts[#parts + 1] = "[" .. event .. " hook] " .. c end
      if v.stop then api.turn.cancel() parts[#parts + 1] = "[" .. event .. " hook stopped the turn] " .. v.stop end
      if #parts > 0 then return table.concat(parts, "\n") end
    end,
    before_turn = function(text)
      local extra = {}
      if not state.started then
        state.started = true
        -- A continued session (`-c`) already holds messages.
        local okm, msgs = pcall(api.turn.messages)
        local source = (okm and type(msgs) == "table" and #msgs > 0) and "resume" or "startup"
        local v = verdict(fire("SessionStart", { source }, { source = source }))
        for _, c in ipairs(v.context) do extra[#extra + 1] = c end
        if v.plain then extra[#extra + 1] = v.plain end
      end
      local v = verdict(fire("UserPromptSubmit", {}, { prompt = text }))
      if v.block then return { block = true, reason = "prompt blocked by a UserPromptSubmit hook: " .. v.block } end
      if v.stop then return { block = true, reason = "prompt blocked by a UserPromptSubmit hook: " .. v.stop } end
      for _, c in ipairs(v.context) do extra[#extra + 1] = c end
      if v.plain then extra[#extra + 1] = v.plain end
      if #extra > 0 then return { text = text .. "\n\n<hook-context>\n" .. table.concat(extra, "\n") .. "\n</hook-context>" } end
    end,
    -- Notification: an approval or a question waits for the person (stopped once answered),
    -- or the session waited `idle_after` seconds for a prompt (stopped when a turn starts).
    on_wait = function(ctx)
      local req = ctx.request
      local message = type(req) == "table" and (req.question or req.title) or req
      local kind = ({ ask = "permission_prompt", idle = "idle_prompt" })[ctx.kind] or "elicitation_dialog"
      fire("Notification", { kind }, { message = tostring(message or "fen is waiting for your input"),
        notification_type = kind })
    end,
    idle_after = idle_after(),
    -- PermissionRequest: fen is about to ask the person to approve a call; a hook may answer
    -- (Claude Code's `hookSpecificOutput.decision` = {behavior = "allow" | "deny", message,
    -- interrupt}; exit 2 denies with stderr). The policy judged first: floors and deny rules
    -- never reach this point. Not in headless runs (no one would be asked), as in Claude Code.
    before_ask = function(ctx)
      local req = ctx.request
      if type(req) ~= "table" or req.kind ~= "permission" then return nil end
      local o = api.kernel.run_options() or {}
      if o.headless then return nil end
      local rows = fire("PermissionRequest", { cc_name(ctx.tool), ctx.tool },
        { tool_name = cc_name(ctx.tool), tool_input = tool_input(ctx.args) })
      local behavior, message, interrupt
      for _, r in ipairs(rows) do
        local hso = type(r.json) == "table" and type(r.json.hookSpecificOutput) == "table" and r.json.hookSpecificOutput or {}
        local d = type(hso.decision) == "table" and hso.decision or {}
        if r.code == 2 then
          d = { behavior = "deny", message = r.stderr }
        end
        -- Any deny wins over an allow.
        if d.behavior == "deny" and behavior ~= "deny" then
          behavior, message, interrupt = "deny", d.message, d.interrupt == true
        elseif d.behavior == "allow" and behavior == nil then
          behavior = "allow"
        end
      end
      if not behavior then return nil end
      -- The answer as the asker's options spell it (y / n / c, as the permission policy asks).
      local values = {}
      for _, opt in ipairs(type(req.options) == "table" and req.options or {}) do
        local v = type(opt) == "table" and opt.value or opt
        if type(v) == "string" then values[v] = true end
      end
      if behavior == "allow" then return values.y and "y" or nil end
      if interrupt and values.c then return "c" end
      if not values.n then return nil end
      message = type(message) == "string" and message:match("^%s*(.-)%s*$") or ""
      return "n: " .. (message ~= "" and message or "denied by a PermissionRequest hook")
    end,
    -- PreCompact: before a compaction (`trigger` manual | auto); exit 2 or `decision: block`
    -- refuses it.
    before_compact = function(ctx)
      local v = verdict(fire("PreCompact", { ctx.trigger }, { trigger = ctx.trigger,
        custom_instructions = ctx.custom_instructions or "" }))
      local why = v.block or v.stop
      if why then return { block = true, reason = "PreCompact hook: " .. why } end
    end,
    -- SessionEnd: the run ends (each hook within its timeout; the exit waits for them).
    on_shutdown = function(ctx)
      local o = api.kernel.run_options() or {}
      local reason = (ctx.reason == "normal" and not o.headless) and "prompt_input_exit" or "other"
      fire("SessionEnd", { reason }, { reason = reason })
    end,
    before_stop = function(ctx)
      local o = api.kernel.run_options() or {}
      -- A subagent child (its asks go to the parent) fires SubagentStop instead of Stop.
      local event = o.on_ask == "parent" and "SubagentStop" or "Stop"
      local v = verdict(fire(event, {}, { stop_hook_active = ctx.stop_hook_active == true }))
      if v.stop then return nil end
      if v.block then return { continue_with = "[" .. event .. " hook] " .. v.block } end
    end,
  }) end

  api.on("reset-conversation", function() state.started = false end)
  -- Context of calls that never ran (refused after the hook) is not kept past the turn.
  api.on("agent-turn-complete", function() state.pre_context = {} end)

  api.register("command", {
    name = "hooks",
    description = "List the command hooks (Claude Code format) from the settings files, with their source file.",
    handler = function()
      state.config = nil
      local cfg = config()
      local lines = {}
      if #cfg.hooks == 0 then lines[1] = "no hooks configured" end
      for _, h in ipairs(cfg.hooks) do
        lines[#lines + 1] = string.format("%-18s %-14s %s  (timeout %ds, %s)", h.event,
          (h.matcher and h.matcher ~= "") and h.matcher or "*", h.command, h.timeout, h.source)
      end
      for _, p in ipairs(cfg.problems) do lines[#lines + 1] = "note: " .. p end
      return table.concat(lines, "\n")
    end,
  })
end
