-- acp: `fen acp`, fen as an Agent Client Protocol (v1) agent for editors. JSON-RPC 2.0, one
-- message a line on stdin/stdout. The same kernel calls as `--mode rpc` (turns, cancel, slash
-- commands, sessions, model, thinking, permission mode); the kernel's events become
-- `session/update` notifications; approvals and `api.ui.select` become
-- `session/request_permission`; when the client offers `fs.readTextFile`/`fs.writeTextFile`,
-- read, edit and write go through the editor's buffers (fen.lib.fsroute). docs/acp.md.
local native = require("fen.native")
local term = native.term
local rows = require("fen.lib.rows")
local todos = require("fen.lib.todos")
local fsroute = require("fen.lib.fsroute")

local PROTOCOL_VERSION = 1

local MODES = {
  { id = "safe", name = "Safe", description = "Asks before anything that writes or runs commands." },
  { id = "default", name = "Default", description = "Reads and workspace edits run; other commands ask." },
  { id = "auto", name = "Auto", description = "Runs what the sandbox contains; asks for the rest." },
  { id = "yolo", name = "Yolo", description = "Runs everything without asking (deny rules and floors still hold)." },
  { id = "plan", name = "Plan", description = "Reads only; the model ends with a plan for you to approve (exit_plan)." },
}
local THINKING = { "off", "minimal", "low", "medium", "high" }

local KIND = {
  read = "read", ls = "read", grep = "search", find = "search", glob = "search", mcp_search = "search",
  edit = "edit", write = "edit", bash = "execute", job_start = "execute", job_output = "execute",
  job_kill = "execute", webfetch = "fetch", web_fetch = "fetch", todo_write = "think",
  lsp = "search", exit_plan = "switch_mode",
}

return function(api)
  -- In api.state(): handlers re-registered by /reload must see the run that is going on.
  local S = api.state()
  local run_in_terminal -- bash in the editor's terminal (below)
  local elicit -- questions as forms (below)

  local function array(list)
    local a = native.json.decode("[]")
    for i, v in ipairs(list or {}) do a[i] = v end
    return a
  end

  local function send(msg)
    msg.jsonrpc = "2.0"
    io.stdout:write(native.json.encode(msg), "\n")
    io.stdout:flush()
  end

  local function respond(id, result) send({ id = id, result = result == nil and native.json.null or result }) end
  local function respond_error(id, code, message)
    send({ id = id == nil and native.json.null or id, error = { code = code, message = message } })
  end

  --- A request to the client; waits (this coroutine only) for its answer: result, or nil, error.
  local function request(method, params)
    if S.closed then return nil, "the client closed the connection" end
    S.next_id = (S.next_id or 0) + 1
    local id = "fen-" .. S.next_id
    local pending = { waiter = term.waiter() }
    S.calls[id] = pending
    send({ id = id, method = method, params = params })
    local ok, err = pcall(term.wait, pending.waiter)
    S.calls[id] = nil
    if not ok then error(err, 0) end
    if pending.error then return nil, pending.error end
    return pending.result
  end

  local function update(u)
    if not S.session_id then return end
    send({ method = "session/update", params = { sessionId = S.session_id, update = u } })
  end

  ---------------------------------------------------------------------------------------------
  -- Sessions, modes and config options.

  local function permission_mode()
    local text = api.kernel.run_command("/permissions") or ""
    return text:match("^mode: (%a+)") or "default"
  end

  local function modes()
    local available = {}
    for i, m in ipairs(MODES) do available[i] = { id = m.id, name = m.name, description = m.description } end
    return { currentModeId = permission_mode(), availableModes = array(available) }
  end

  local function config_options()
    local current = api.turn.model()
    local models = {}
    local seen = {}
    for _, p in ipairs(api.list("provider")) do
      if not p.shadowed_by then
        for _, m in ipairs(p.models or {}) do
          local id = p.name .. "/" .. m.id
          if not seen[id] then
            seen[id] = true
            models[#models + 1] = { value = id, name = m.name or id }
          end
        end
      end
    end
    local now = current.provider .. "/" .. current.model
    if not seen[now] then table.insert(models, 1, { value = now, name = now }) end
    local levels = { { value = "default", name = "model default" } }
    for _, l in ipairs(THINKING) do levels[#levels + 1] = { value = l, name = l } end
    return array({
      { id = "model", name = "Model", category = "model", type = "select", currentValue = now, options = array(models) },
      { id = "thinking", name = "Thinking", category = "thought_level", type = "select",
        currentValue = current.thinking or "default", options = array(levels) },
    })
  end

  local function commands_update()
    local list = {}
    for _, c in ipairs(api.list("command")) do
      if not c.shadowed_by and c.name then
        list[#list + 1] = { name = c.name, description = c.description or "", input = { hint = "arguments" } }
      end
    end
    table.sort(list, function(a, b) return a.name < b.name end)
    update({ sessionUpdate = "available_commands_update", availableCommands = array(list) })
  end

  ---------------------------------------------------------------------------------------------
  -- Kernel events as session updates (only while a prompt or a load runs).

  local function text_of(content)
    if type(content) == "string" then return content end
    local parts = {}
    for _, b in ipairs(content or {}) do
      if b.type == "text" then parts[#parts + 1] = b.text end
    end
    return table.concat(parts, "\n")
  end

  local function locations(args)
    local out = {}
    local function add(p, line)
      if type(p) == "string" and p ~= "" then out[#out + 1] = { path = fsroute.absolute(p), line = line } end
    end
    if type(args) ~= "table" then return array(out) end
    add(args.path, math.tointeger(args.offset))
    for _, f in ipairs(type(args.files) == "table" and args.files or {}) do add(type(f) == "table" and f.path or nil) end
    for _, f in ipairs(type(args.paths) == "table" and args.paths or {}) do
      if type(f) == "string" then add(f) elseif type(f) == "table" then add(f.path, math.tointeger(f.offset)) end
    end
    return array(out)
  end

  local function tool_call_update(call)
    return {
      sessionUpdate = "tool_call", toolCallId = call.id, title = rows.call_summary(call),
      kind = KIND[call.name] or (tostring(call.name):match("^mcp__") and "other") or "other",
      status = "pending", rawInput = call.arguments, locations = locations(call.arguments),
    }
  end

  --- A unified diff as ACP diff blocks: one per hunk, its old and new lines.
  local function diffs_of(path, diff, created)
    local out = {}
    if type(diff) ~= "string" or diff == "" then return out end
    local old, new, open = {}, {}, false
    local function flush()
      if open then
        local d = { type = "diff", path = fsroute.absolute(path), newText = table.concat(new, "\n") }
        if not created then d.oldText = table.concat(old, "\n") end
        out[#out + 1] = d
      end
      old, new, open = {}, {}, false
    end
    for line in (diff .. "\n"):gmatch("([^\n]*)\n") do
      if line:match("^@@") then
        flush()
        open = true
      elseif open then
        local c, rest = line:sub(1, 1), line:sub(2)
        rest = rest:gsub("\r$", "")
        if c == " " then
          old[#old + 1] = rest
          new[#new + 1] = rest
        elseif c == "-" then
          old[#old + 1] = rest
        elseif c == "+" then
          new[#new + 1] = rest
        end
      end
    end
    flush()
    return out
  end

  local function result_content(result, args)
    local content = {}
    local d = type(result.details) == "table" and result.details or {}
    if result.tool_name == "write" and not result.is_error and type(args) == "table" then
      if d.editor and d.old_text == nil then
        content[#content + 1] = { type = "diff", path = fsroute.absolute(args.path), newText = args.content }
      end
      for _, x in ipairs(diffs_of(d.path or args.path, d.diff, d.created)) do content[#content + 1] = x end
    elseif result.tool_name == "edit" and not result.is_error then
      for _, f in ipairs(type(d.files) == "table" and d.files or {}) do
        for _, x in ipairs(diffs_of(f.path, f.diff, false)) do content[#content + 1] = x end
      end
    end
    local text = text_of(result.content)
    if text ~= "" then
      if #text > 64 * 1024 then text = text:sub(1, 64 * 1024) .. "\n[fen: cut at 64 KB]" end
      content[#content + 1] = { type = "content", content = { type = "text", text = text } }
    end
    return array(content)
  end

  local function plan_update()
    local snap = todos.get()
    if snap.version == S.plan_version then return end
    S.plan_version = snap.version
    local entries = {}
    for i, it in ipairs(snap.items) do
      entries[i] = { content = it.text, priority = "medium", status = it.status }
    end
    update({ sessionUpdate = "plan", entries = array(entries) })
  end

  -- Every switch of the mode (session/set_mode, /permissions, /plan, an approved plan).
  api.on("permission-mode", function(ev)
    if S.session_id and type(ev.mode) == "string" then
      update({ sessionUpdate = "current_mode_update", currentModeId = ev.mode })
    end
  end)

  S.calls_args = S.calls_args or {}
  api.on("assistant-text-delta", function(ev)
    if S.live then update({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = ev.delta } }) end
  end)
  api.on("assistant-thinking-delta", function(ev)
    if S.live then update({ sessionUpdate = "agent_thought_chunk", content = { type = "text", text = ev.delta } }) end
  end)
  api.on("tool-call", function(ev)
    if not S.live then return end
    S.calls_args[ev.tool_call.id] = ev.tool_call.arguments
    update(tool_call_update(ev.tool_call))
  end)
  api.on("tool-result", function(ev)
    if not S.live then return end
    local r = ev.result
    local args = S.calls_args[r.tool_call_id]
    S.calls_args[r.tool_call_id] = nil
    update({
      sessionUpdate = "tool_call_update", toolCallId = r.tool_call_id,
      status = r.is_error and "failed" or "completed", content = result_content(r, args),
    })
    if r.tool_name == "todo_write" then plan_update() end
  end)
  api.on("llm-end", function(ev)
    if not S.live then return end
    local u = ev.message and ev.message.usage
    if type(u) ~= "table" then return end
    local used = (tonumber(u.input) or 0) + (tonumber(u.cache_read) or 0) + (tonumber(u.cache_write) or 0) + (tonumber(u.output) or 0)
    local ok, size = pcall(api.turn.context_window)
    local upd = { sessionUpdate = "usage_update", used = used, size = ok and size or 0 }
    if type(u.cost) == "table" and tonumber(u.cost.total) then
      upd.cost = { amount = tonumber(u.cost.total), currency = "USD" }
    end
    update(upd)
  end)

  -- Approval requests from the permission policy run once a call is allowed: mark it running.
  api.register("hook", {
    name = "acp-running", order = 95,
    before_tool = function(_, _, ctx)
      if S.live then update({ sessionUpdate = "tool_call_update", toolCallId = ctx.call_id, status = "in_progress" }) end
      return nil
    end,
  })

  -- "Reject always": a deny rule for the ask's pattern, for the rest of the session (before the
  -- permission policy asks again).
  S.deny_rules = S.deny_rules or {}
  api.register("hook", {
    name = "acp-reject-always", order = -1,
    before_tool = function(name, args, ctx)
      if #S.deny_rules == 0 then return nil end
      if not S.deny_policy then
        local rules = {}
        for _, r in ipairs(S.deny_rules) do rules[#rules + 1] = { text = r, kind = "deny" } end
        local tools = {}
        for _, t in ipairs(api.list("tool")) do tools[#tools + 1] = t.name end
        S.deny_policy = native.policy.new({ cwd = native.fs.cwd(), mode = "yolo", rules = rules, tools = tools })
      end
      if not S.deny_policy then return nil end
      local d = S.deny_policy:decide(name, ctx.risk or "shell", args or {})
      if d.verdict == "deny" and d.source ~= "floor" then
        return { block = true, verbatim = true, reason = "permission denied: the user rejected " .. (d.subject ~= "" and d.subject or name) .. " for this session" }
      end
      return nil
    end,
  })

  ---------------------------------------------------------------------------------------------
  -- Questions: approvals and api.ui.select through session/request_permission.

  local function choose(tool_call, options)
    local r, err = request("session/request_permission", { sessionId = S.session_id or "", toolCall = tool_call, options = array(options) })
    if not r then return nil, err end
    local o = r.outcome
    if type(o) == "table" and o.outcome == "selected" then return o.optionId end
    return nil, "cancelled"
  end

  local function approval(req)
    local scope = type(req.scope) == "table" and #req.scope > 0 and table.concat(req.scope, ", ") or nil
    local args = S.calls_args[req.call_id]
    local call = {
      toolCallId = req.call_id or ("fen-ask-" .. tostring(S.next_id or 0)),
      title = req.question or req.title or "Approve?",
      kind = KIND[req.tool] or "other", status = "pending", rawInput = args, locations = locations(args),
    }
    local id = choose(call, {
      { optionId = "allow_once", name = "Allow once", kind = "allow_once" },
      { optionId = "allow_always", name = "Always allow" .. (scope and (": " .. scope) or ""), kind = "allow_always" },
      { optionId = "reject_once", name = "Reject", kind = "reject_once" },
      { optionId = "reject_always", name = "Always reject" .. (scope and (": " .. scope) or "") .. " (this session)", kind = "reject_always" },
    })
    if id == "allow_once" then return "y" end
    if id == "allow_always" then return "a" end
    if id == "reject_always" then
      local added = false
      for _, r in ipairs(type(req.scope) == "table" and req.scope or {}) do
        S.deny_rules[#S.deny_rules + 1] = r
        added = true
      end
      if added then S.deny_policy = nil end
      return "n: the user rejected it for this session"
    end
    if id == nil then return "c" end
    return "n"
  end

  local function generic_ask(request)
    if type(request) ~= "table" then request = { question = tostring(request), options = { "yes", "no" } } end
    if request.kind == "permission" then return approval(request) end
    if request.input then
      if not S.elicit then return nil, "no user" end
      local title = tostring(request.title or request.question or "")
      local content = elicit(title, { answer = { type = "string", title = title } }, "answer")
      return content and content.answer or nil
    end
    local opts = {}
    local values = {}
    for i, o in ipairs(request.options or request.items or { "yes", "no" }) do
      local label = type(o) == "table" and tostring(o.label or o.value or i) or tostring(o)
      values[i] = type(o) == "table" and (o.value or label) or o
      opts[i] = { optionId = tostring(i), name = label, kind = i == 1 and "allow_once" or "reject_once" }
    end
    S.ui_n = (S.ui_n or 0) + 1
    local id = choose({ toolCallId = "fen-ui-" .. S.ui_n, title = tostring(request.text or request.question or request.title or ""), kind = "other", status = "pending" }, opts)
    local n = tonumber(id or "")
    return n and values[n] or nil
  end

  --- An `elicitation/create` form (clients that offer `elicitation.form`): the accepted
  --- content, or nil when the person declined or cancelled it.
  function elicit(message, properties, required)
    local r = request("elicitation/create", {
      sessionId = S.session_id or "", mode = "form", message = message,
      requestedSchema = { type = "object", properties = properties, required = array({ required }) },
    })
    if type(r) == "table" and r.action == "accept" and type(r.content) == "table" then return r.content end
    return nil
  end

  ---------------------------------------------------------------------------------------------
  -- Client requests.

  local H = {}

  local function message_of(err)
    return type(err) == "table" and tostring(err.message) or tostring(err)
  end

  --- bash in the editor's terminal (fsroute.terminal), in yolo mode only: in the other modes
  --- fen runs commands in its OS sandbox, which an editor terminal would not be.
  S.terminals = S.terminals or {}
  run_in_terminal = function(o)
    if S.closed or permission_mode() ~= "yolo" then return nil end
    local sid = S.session_id or ""
    local r, err = request("terminal/create", { sessionId = sid, command = "bash", args = array({ "-c", o.command }),
      cwd = o.cwd and fsroute.absolute(o.cwd) or native.fs.cwd(), outputByteLimit = 1024 * 1024 })
    if not r then return nil, "the editor's terminal: " .. message_of(err) end
    local tid = r.terminalId
    S.terminals[tid] = true
    if o.call_id then
      update({ sessionUpdate = "tool_call_update", toolCallId = o.call_id, status = "in_progress",
        content = array({ { type = "terminal", terminalId = tid } }) })
    end
    local timed_out = false
    term.spawn(function()
      native.sleep(o.timeout_ms)
      if S.terminals[tid] then
        timed_out = true
        pcall(request, "terminal/kill", { sessionId = sid, terminalId = tid })
      end
    end)
    local w, werr = request("terminal/wait_for_exit", { sessionId = sid, terminalId = tid })
    local out = request("terminal/output", { sessionId = sid, terminalId = tid }) or {}
    S.terminals[tid] = nil
    pcall(request, "terminal/release", { sessionId = sid, terminalId = tid })
    if not w then return nil, "the editor's terminal: " .. message_of(werr) end
    return { output = out.output or "", truncated = out.truncated == true, exit_code = w.exitCode, signal = w.signal,
      timed_out = timed_out, terminal_id = tid }
  end

  function H.initialize(p)
    local caps = type(p.clientCapabilities) == "table" and p.clientCapabilities or {}
    S.client_caps = caps
    local fs = type(caps.fs) == "table" and caps.fs or {}
    if fs.readTextFile == true and fs.writeTextFile == true then
      fsroute.editor = {
        read = function(path)
          local r, err = request("fs/read_text_file", { sessionId = S.session_id or "", path = path })
          if not r then return nil, type(err) == "table" and err.message or tostring(err) end
          return r.content
        end,
        write = function(path, text)
          local r, err = request("fs/write_text_file", { sessionId = S.session_id or "", path = path, content = text })
          if err ~= nil and r == nil then return nil, type(err) == "table" and err.message or tostring(err) end
          return true
        end,
      }
    end
    if caps.terminal == true then fsroute.terminal = run_in_terminal end
    -- Questions (`api.ui.select`, `api.ui.prompt`, the question tool) as forms.
    S.elicit = type(caps.elicitation) == "table" and type(caps.elicitation.form) == "table"
    return {
      protocolVersion = PROTOCOL_VERSION,
      agentCapabilities = {
        loadSession = true,
        promptCapabilities = { image = true, audio = false, embeddedContext = true },
        mcpCapabilities = { http = true, sse = false },
        sessionCapabilities = { list = {} },
      },
      authMethods = array({}),
      agentInfo = { name = "fen", title = "fen", version = native.version },
    }
  end

  function H.authenticate()
    -- Keys come from the environment or models.json; nothing to do here (yet).
    return {}
  end

  --- Attaches the client's MCP servers through fen's MCP client and waits for them to start.
  local function attach_mcp(servers)
    if type(servers) ~= "table" or #servers == 0 then return end
    local list = {}
    for _, s in ipairs(servers) do
      if type(s) == "table" then
        local env, headers = {}, {}
        for _, e in ipairs(type(s.env) == "table" and s.env or {}) do env[e.name] = e.value end
        for _, h in ipairs(type(s.headers) == "table" and s.headers or {}) do headers[h.name] = h.value end
        if s.type == "sse" then error({ code = -32602, message = "MCP server " .. tostring(s.name) .. ": sse is not supported; use http or stdio" }) end
        list[#list + 1] = { name = s.name, command = s.command, args = s.args, env = env, url = s.url, headers = headers }
      end
    end
    local names, err = native.mcp.add(list)
    if not names then error({ code = -32602, message = err }) end
    native.mcp.start()
    native.mcp.wait(names)
  end

  local function session_result()
    return { modes = modes(), configOptions = config_options() }
  end

  local function after_session()
    commands_update()
    S.plan_version = todos.get().version
  end

  H["session/new"] = function(p)
    if type(p.cwd) ~= "string" then error({ code = -32602, message = "session/new needs cwd" }) end
    if S.prompting then error({ code = -32000, message = "a prompt is running; cancel it first" }) end
    attach_mcp(p.mcpServers)
    -- The session opened at start is used while it is empty.
    if not S.fresh or #(api.turn.messages() or {}) > 0 then
      local ok, err = api.session.new()
      if not ok then error({ code = -32000, message = err or "cannot start a session" }) end
    end
    S.fresh = false
    -- The session file (and with it the id the client will load) exists from now on.
    pcall(api.session.append_state, "acp", { cwd = p.cwd })
    local info = api.session.info()
    S.session_id = info and info.id or ("fen-" .. native.session.new_id())
    local r = session_result()
    r.sessionId = S.session_id
    return r, after_session
  end

  --- Sends the stored conversation as updates (session/load).
  local function replay(messages)
    local args = {}
    for _, m in ipairs(messages or {}) do
      if m.role == "user" then
        local text = text_of(m.content)
        if text ~= "" then update({ sessionUpdate = "user_message_chunk", content = { type = "text", text = text } }) end
      elseif m.role == "assistant" then
        for _, b in ipairs(type(m.content) == "table" and m.content or {}) do
          if b.type == "text" and b.text ~= "" then
            update({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = b.text } })
          elseif b.type == "thinking" and (b.thinking or b.text or "") ~= "" then
            update({ sessionUpdate = "agent_thought_chunk", content = { type = "text", text = b.thinking or b.text } })
          elseif b.type == "tool-call" then
            args[b.id] = b.arguments
            update(tool_call_update(b))
          end
        end
      elseif m.role == "tool-result" then
        update({ sessionUpdate = "tool_call_update", toolCallId = m.tool_call_id,
          status = m.is_error and "failed" or "completed", content = result_content(m, args[m.tool_call_id]) })
      end
    end
  end

  H["session/load"] = function(p)
    if type(p.sessionId) ~= "string" then error({ code = -32602, message = "session/load needs sessionId" }) end
    if S.prompting then error({ code = -32000, message = "a prompt is running; cancel it first" }) end
    attach_mcp(p.mcpServers)
    local ok, err = api.session.resume(p.sessionId)
    if not ok then error({ code = -32002, message = err or ("no session " .. p.sessionId) }) end
    S.fresh = false
    local info = api.session.info()
    S.session_id = info and info.id or p.sessionId
    replay(api.turn.messages())
    return session_result(), after_session
  end

  local function iso(t)
    t = tonumber(t)
    if not t then return nil end
    if t > 1e11 then t = t / 1000 end
    return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(t))
  end

  H["session/list"] = function(p)
    local out = {}
    local cwd = type(p.cwd) == "string" and p.cwd or native.fs.cwd()
    for _, s in ipairs(api.session.list() or {}) do
      local modified = s.modified
      out[#out + 1] = { sessionId = s.id, cwd = cwd, title = s.title, updatedAt = type(modified) == "string" and modified or iso(modified) }
    end
    return { sessions = array(out) }
  end

  H["session/set_mode"] = function(p)
    local known = false
    for _, m in ipairs(MODES) do known = known or m.id == p.modeId end
    if not known then error({ code = -32602, message = "unknown mode " .. tostring(p.modeId) .. ": use safe, default, auto, yolo or plan" }) end
    local text, err = api.kernel.run_command("/permissions " .. p.modeId)
    if err or not (text or ""):match("^mode: " .. p.modeId) then error({ code = -32000, message = err or text or "the mode did not change" }) end
    -- (current_mode_update follows from the permission-mode event.)
    return {}
  end

  H["session/set_config_option"] = function(p)
    local value = p.value
    if p.configId == "model" then
      if type(value) ~= "string" then error({ code = -32602, message = "model: value must be provider/id" }) end
      local provider, model = value:match("^([^/]+)/(.+)$")
      if not provider then provider, model = api.turn.model().provider, value end
      local ok, err = pcall(api.turn.set_model, provider, model)
      if not ok then error({ code = -32000, message = tostring(err) }) end
    elseif p.configId == "thinking" then
      if value == "default" then error({ code = -32602, message = "thinking: choose a level (off, minimal, low, medium, high)" }) end
      local ok, err = pcall(api.turn.set_thinking, value)
      if not ok then error({ code = -32602, message = tostring(err) }) end
    else
      error({ code = -32602, message = "unknown config option " .. tostring(p.configId) .. ": model or thinking" })
    end
    return { configOptions = config_options() }
  end

  --- The prompt's content blocks as one user line (resources inline, links as mentions) and
  --- its images, checked and scaled (native.image.prepare).
  local function prompt_text(blocks)
    local parts, images = {}, {}
    for i, b in ipairs(type(blocks) == "table" and blocks or {}) do
      if b.type == "text" then
        parts[#parts + 1] = b.text
      elseif b.type == "resource_link" then
        parts[#parts + 1] = string.format("@%s", tostring(b.uri):gsub("^file://", ""))
      elseif b.type == "resource" and type(b.resource) == "table" and b.resource.text then
        parts[#parts + 1] = string.format("<file path=%q>\n%s\n</file>", tostring(b.resource.uri):gsub("^file://", ""), b.resource.text)
      elseif b.type == "image" then
        local block, err = native.image.prepare(b.data, b.mimeType)
        if not block then error({ code = -32602, message = string.format("Invalid params: prompt[%d]: %s", i, err) }) end
        images[#images + 1] = block
      elseif b.type == "audio" then
        error({ code = -32602, message = string.format("Invalid params: prompt[%d]: audio is not supported (promptCapabilities.audio is false)", i) })
      end
    end
    return table.concat(parts, "\n"), images
  end

  local STOP = { length = "max_tokens", refusal = "refusal" }

  H["session/prompt"] = function(p)
    if p.sessionId ~= S.session_id then
      error({ code = -32602, message = "unknown session " .. tostring(p.sessionId) .. "; start one with session/new or session/load" })
    end
    if S.prompting then error({ code = -32000, message = "a prompt is already running in this session" }) end
    local text, images = prompt_text(p.prompt)
    if text:match("^%s*$") and #images == 0 then error({ code = -32602, message = "the prompt is empty" }) end
    S.prompting, S.live = true, true
    local ok, r = pcall(function()
      if #images == 0 and text:match("^%s*/%a") then
        local out, err = api.kernel.run_command(text)
        local shown = err or out
        if shown and shown ~= "" then update({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = shown } }) end
        return { status = "ok" }
      end
      return api.turn.submit(text, { images = images })
    end)
    S.prompting, S.live = false, false
    if not ok then error({ code = -32603, message = tostring(r) }) end
    if r.status == "cancelled" then return { stopReason = "cancelled" } end
    if r.status == "error" then error({ code = -32603, message = r.error or "the turn failed" }) end
    local last
    for _, m in ipairs(api.turn.messages() or {}) do
      if m.role == "assistant" then last = m end
    end
    return { stopReason = (last and STOP[last.stop_reason]) or "end_turn" }
  end

  -- The contract each method's params are checked against (contracts/protocols.toml).
  local PARAMS = {
    initialize = "AcpInitializeParams", authenticate = "AcpAuthenticateParams",
    ["session/new"] = "AcpNewSessionParams", ["session/load"] = "AcpLoadSessionParams",
    ["session/list"] = "AcpListSessionsParams", ["session/prompt"] = "AcpPromptParams",
    ["session/set_mode"] = "AcpSetModeParams", ["session/set_config_option"] = "AcpSetConfigOptionParams",
    ["session/cancel"] = "AcpCancelParams",
  }

  --- nil, or why the params do not fit the method's contract (JSON null counts as absent).
  local function invalid(method, params)
    for k, v in pairs(params) do
      if v == native.json.null then params[k] = nil end
    end
    local name = PARAMS[method]
    if not name then return nil end
    local ok, why = api.validate(name, params)
    if ok then return nil end
    return "Invalid params: " .. method .. ": " .. why
  end

  local NOTIFY = {}
  NOTIFY["session/cancel"] = function()
    api.turn.cancel()
    -- Commands running in the editor's terminal stop too.
    for tid in pairs(S.terminals) do
      S.terminals[tid] = nil
      term.spawn(function() pcall(request, "terminal/kill", { sessionId = S.session_id or "", terminalId = tid }) end)
    end
    -- Questions still open get the cancelled outcome from the client; stop waiting for them.
    for _, pending in pairs(S.calls) do
      pending.error = { code = -32800, message = "cancelled" }
      term.done(pending.waiter)
    end
  end

  --- One message from the client.
  local function handle(line)
    if line:match("^%s*$") then return end
    local m, err = native.json.decode(line)
    if err or type(m) ~= "table" then
      return respond_error(nil, -32700, "parse error: " .. tostring(err or "a message must be a JSON object"))
    end
    if m.method == nil then
      -- A response to one of our requests.
      local pending = S.calls[m.id]
      if pending then
        pending.result, pending.error = m.result, m.error
        term.done(pending.waiter)
      end
      return
    end
    local params = type(m.params) == "table" and m.params or {}
    if m.id == nil then
      local f = NOTIFY[m.method]
      -- A notification has no answer: a bad one is logged and dropped.
      local why = f and invalid(m.method, params)
      if why then return api.log("warn", "acp: " .. why) end
      if f then pcall(f, params) end
      return
    end
    local h = H[m.method]
    if not h then return respond_error(m.id, -32601, "method not found: " .. tostring(m.method)) end
    local why = invalid(m.method, params)
    if why then return respond_error(m.id, -32602, why) end
    term.spawn(function()
      local ok, result, after = pcall(h, params)
      if ok then
        respond(m.id, result)
        if after then pcall(after) end
      elseif type(result) == "table" and result.code then
        respond_error(m.id, result.code, result.message)
      else
        respond_error(m.id, -32603, tostring(result))
      end
    end)
  end

  api.register("presenter", {
    name = "acp",
    init = function()
      S.calls = {}
      S.closed = false
      S.fresh = true
    end,
    notify = function(text)
      update({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = "\n" .. tostring(text) .. "\n" } })
    end,
    select = function(title, items)
      if S.elicit then
        local options = {}
        for i, item in ipairs(items or {}) do options[i] = { const = tostring(i), title = tostring(item) } end
        local content = elicit(tostring(title or ""), { choice = { type = "string", title = tostring(title or ""), oneOf = array(options) } }, "choice")
        return content and tonumber(content.choice) or nil
      end
      S.ui_n = (S.ui_n or 0) + 1
      local opts = {}
      for i, item in ipairs(items or {}) do
        opts[i] = { optionId = tostring(i), name = tostring(item), kind = "allow_once" }
      end
      local id = choose({ toolCallId = "fen-ui-" .. S.ui_n, title = tostring(title or ""), kind = "other", status = "pending" }, opts)
      return tonumber(id or "")
    end,
    ask = generic_ask,
    --- `api.ui.prompt`: a form with one text field when the client takes forms; else no one
    --- can type an answer (nil, "no user").
    prompt = function(question, default)
      if not S.elicit then return nil, "no user" end
      local field = { type = "string", title = tostring(question or "") }
      if type(default) == "string" and default ~= "" then field.default = default end
      local content = elicit(tostring(question or ""), { answer = field }, "answer")
      return content and content.answer or nil
    end,
    run = function()
      while true do
        local line = term.read_line()
        if not line then break end
        handle(line)
      end
      -- The client went away: stop what runs and answer what waits.
      S.closed = true
      api.turn.cancel()
      for _, pending in pairs(S.calls) do
        pending.error = { code = -32800, message = "the client closed the connection" }
        term.done(pending.waiter)
      end
      while api.turn.busy() do native.sleep(20) end
      fsroute.editor, fsroute.terminal = nil, nil
      return 0
    end,
  })
end
