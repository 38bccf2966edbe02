-- rpc: `fen --mode rpc`, a headless presenter driven by another program. JSON Lines both ways:
-- one request a line on stdin (`{"id"?, "type", ...}`), and on stdout every event exactly as
-- `--mode json` prints it, `ask` lines that wait for an `answer`, and one `response` per request
-- (`{"type":"response","id","command","ok","error"?, ...}`). A bad line gets an error response
-- naming the line and the fault, and the session goes on. End of input ends the run after the
-- current turn; asks still open then (and later ones) get the `--on-ask` answer. docs/rpc.md
-- documents every message; `fen acp` (the acp presenter) speaks ACP over the same kernel calls.
local native = require("fen.native")
local term = native.term

return function(api)
  -- In api.state(): handlers re-registered by /reload must see the run that is going on.
  local S = api.state()

  local function write(msg)
    io.stdout:write(native.json.encode(msg), "\n")
    io.stdout:flush()
  end

  api.on("*", function(ev)
    if S.active then write(ev) end
  end)

  ---------------------------------------------------------------------------------------------
  -- Asks: questions from the kernel (permission approvals, `api.ui.*`), answered over the pipe.

  --- The `--on-ask` answer to an approval once no one can answer (stdin closed).
  local function headless_answer(kind)
    if kind ~= "approval" then return nil end
    local o = (api.kernel.run_options() or {}).on_ask
    if o == "allow" then return "y" end
    return "n: the rpc client closed its input (--on-ask " .. tostring(o or "deny") .. ")"
  end

  --- Sends an ask and waits for its answer (this coroutine only). `convert(answer_msg)` turns
  --- the client's answer into what the caller returns; an invalid one is an error response and
  --- the ask stays open.
  local function ask(msg, convert)
    if S.closed then return convert(nil, headless_answer(msg.kind)) end
    S.next_ask = (S.next_ask or 0) + 1
    local ask_id = "ask-" .. S.next_ask
    msg.type = "ask"
    msg.ask_id = ask_id
    local pending = { waiter = term.waiter(), kind = msg.kind, convert = convert, options = msg.options }
    S.asks[ask_id] = pending
    write(msg)
    -- The caller may be cancelled while it waits (the turn aborted): the entry goes with it.
    local ok, err = pcall(term.wait, pending.waiter)
    S.asks[ask_id] = nil
    if not ok then error(err, 0) end
    return pending.result
  end

  --- Validates an `answer` against its ask; nil, why when it does not fit.
  local function take_answer(pending, m)
    if m.cancel == true then return true, nil end
    if pending.kind == "prompt" then return true, m.text end
    local choice = m.choice
    if pending.kind == "select" then
      local n = math.tointeger(tonumber(choice))
      if not n or n < 1 or n > #pending.options then
        return nil, string.format("`choice` must be an option index from 1 to %d", #pending.options)
      end
      return true, n
    end
    for _, o in ipairs(pending.options) do
      if o.id == choice then
        if choice == "n" and type(m.text) == "string" and m.text ~= "" then return true, "n: " .. m.text end
        return true, choice
      end
    end
    local ids = {}
    for _, o in ipairs(pending.options) do ids[#ids + 1] = o.id end
    return nil, "`choice` must be one of the ask's option ids: " .. table.concat(ids, ", ")
  end

  local function identity(_, v) return v end

  ---------------------------------------------------------------------------------------------
  -- Turns.

  --- Wakes whoever waits for the end of the turns (end of input).
  local function turn_done()
    S.turns = S.turns - 1
    if S.turns == 0 and S.preparing == 0 and S.idle_waiter then term.done(S.idle_waiter) end
  end

  local function spawn(fn)
    term.spawn(function()
      local ok, err = pcall(fn)
      if not ok then write({ type = "error", error = "rpc: " .. tostring(err) }) end
    end)
  end

  local BEHAVIOR = { steer = "steering", follow_up = "follow-up" }

  local function sum_usage()
    local usage = { input = 0, output = 0, cache_read = 0, cache_write = 0 }
    local last
    for _, m in ipairs(api.turn.messages() or {}) do
      if m.role == "assistant" and type(m.usage) == "table" then
        for k in pairs(usage) do usage[k] = usage[k] + (tonumber(m.usage[k]) or 0) end
        last = m.usage
      end
    end
    return usage, last
  end

  local function permission_mode()
    local text = api.kernel.run_command("/permissions") or ""
    return text:match("^mode: (%a+)")
  end

  --- The handlers, by request type. Each gets the message (already checked against its
  --- contract, contracts/protocols.toml) and `reply(fields)` / `fail(error)`; one that waits
  --- runs in a task of its own so the reader goes on.
  local H = {}

  --- Starts or queues a prompt whose images are ready.
  local function start(m, images, reply, fail)
    if S.turns > 0 then
      -- Busy: queued for the running turn (a follow-up unless it says steer). Counted as a
      -- turn while it is submitted: if the turn ended meanwhile, this one runs on its own.
      local kind = BEHAVIOR[m.behavior or "follow_up"]
      S.turns = S.turns + 1
      spawn(function()
        local ok, r = pcall(api.turn.submit, m.text, { when_busy = kind, images = images })
        turn_done()
        if not ok then return fail(tostring(r)) end
        if r.status == "queued" then
          reply({ queued = kind })
        elseif r.status == "rejected" then
          fail(r.error or "the agent is busy")
        else
          -- The turn had ended meanwhile, so this one ran as a turn of its own.
          reply({ status = r.status })
        end
      end)
      return
    end
    S.turns = S.turns + 1
    reply({})
    spawn(function()
      local ok, err = pcall(api.turn.submit, m.text, { when_busy = "follow-up", images = images })
      turn_done()
      if not ok then error(err, 0) end
    end)
  end

  function H.prompt(m, reply, fail)
    if m.text == "" and not m.images then return fail("`text` must not be empty") end
    if not m.images or #m.images == 0 then return start(m, nil, reply, fail) end
    -- Images are decoded and checked off the Lua thread first; end of input waits for them.
    S.preparing = S.preparing + 1
    spawn(function()
      local images = {}
      for i, img in ipairs(m.images) do
        local block, err = native.image.prepare(img.data, img.mime_type)
        if not block then
          images = nil
          fail(string.format("images[%d]: %s", i, err))
          break
        end
        images[i] = block
      end
      if images then start(m, images, reply, fail) end
      S.preparing = S.preparing - 1
      -- (start counted the turn, if any, before this one stops counting.)
      S.turns = S.turns + 1
      turn_done()
    end)
  end

  function H.abort(_, reply)
    api.turn.cancel()
    -- What the cancelled turn (or command) asked is gone with it.
    for id, pending in pairs(S.asks) do
      S.asks[id] = nil
      pending.result = nil
      term.done(pending.waiter)
    end
    reply({})
  end

  function H.answer(m, reply, fail)
    local pending = S.asks[m.ask_id]
    if not pending then return fail("no open ask " .. m.ask_id .. " (answered, cancelled, or never asked)") end
    local ok, value = take_answer(pending, m)
    if not ok then return fail(value) end
    pending.result = pending.convert(m, value)
    S.asks[m.ask_id] = nil
    term.done(pending.waiter)
    reply({})
  end

  function H.set_model(m, reply, fail)
    if m.model == "" then return fail("`model` must be provider/id or an id of the current provider") end
    local current = api.turn.model()
    local provider, model = m.model:match("^([^/]+)/(.+)$")
    local known = {}
    for _, p in ipairs(api.list("provider")) do known[p.name] = true end
    if not provider or not known[provider] then provider, model = current.provider, m.model end
    local ok, err = pcall(api.turn.set_model, provider, model)
    if not ok then return fail(tostring(err)) end
    reply({ model = provider .. "/" .. model })
  end

  function H.set_thinking(m, reply, fail)
    local ok, err = pcall(api.turn.set_thinking, m.level)
    if not ok then return fail(tostring(err)) end
    reply({ level = m.level })
  end

  function H.set_permission_mode(m, reply, fail)
    spawn(function()
      local text, err = api.kernel.run_command("/permissions " .. m.mode)
      if err then return fail(err) end
      if not (text or ""):match("^mode: " .. m.mode) then return fail(text or "the mode did not change") end
      reply({ mode = m.mode })
    end)
  end

  local function command(line, reply, fail)
    spawn(function()
      local text, err = api.kernel.run_command(line)
      if err then return fail(err) end
      reply({ text = text })
    end)
  end

  function H.compact(m, reply, fail)
    command("/compact" .. (m.guidance and (" " .. m.guidance) or ""), reply, fail)
  end

  function H.command(m, reply, fail)
    if not m.text:match("^%s*/") then return fail("`text` must be a slash command such as \"/help\"") end
    command(m.text, reply, fail)
  end

  function H.new_session(_, reply, fail)
    if S.turns > 0 then return fail("a turn is running; abort it first") end
    spawn(function()
      local ok, err = api.session.new()
      if not ok then return fail(err or "cannot start a new session") end
      reply({ session = api.session.info() })
    end)
  end

  function H.resume(m, reply, fail)
    if S.turns > 0 then return fail("a turn is running; abort it first") end
    spawn(function()
      local ok, err = api.session.resume(m.session)
      if not ok then return fail(err or ("no session matches " .. m.session)) end
      reply({ session = api.session.info(), message_count = #(api.turn.messages() or {}) })
    end)
  end

  function H.get_state(_, reply)
    spawn(function()
      local model = api.turn.model()
      local usage, last = sum_usage()
      local window = api.turn.context_window()
      local used = last and ((tonumber(last.input) or 0) + (tonumber(last.cache_read) or 0) + (tonumber(last.cache_write) or 0) + (tonumber(last.output) or 0)) or 0
      local info = api.session.info()
      reply({ state = {
        provider = model.provider, model = model.model, thinking = model.thinking,
        permission_mode = permission_mode(), busy = api.turn.busy(),
        session_id = info and info.id, session_path = info and info.path,
        usage = usage, context_tokens = used, context_window = window,
        context_percent = (window and window > 0) and math.floor(used * 1000 / window + 0.5) / 10 or nil,
        message_count = #(api.turn.messages() or {}),
      } })
    end)
  end

  function H.get_messages(_, reply)
    local messages = api.turn.messages() or {}
    reply({ messages = #messages > 0 and messages or native.json.decode("[]") })
  end

  function H.list_commands(_, reply)
    local out = {}
    for _, c in ipairs(api.list("command")) do
      if not c.shadowed_by then out[#out + 1] = { name = c.name, description = c.description } end
    end
    table.sort(out, function(a, b) return a.name < b.name end)
    reply({ commands = out })
  end

  function H.list_models(_, reply)
    local out = {}
    for _, p in ipairs(api.list("provider")) do
      if not p.shadowed_by then
        for _, m in ipairs(p.models or {}) do
          out[#out + 1] = { id = p.name .. "/" .. m.id, provider = p.name, model = m.id, context_window = m.context_window }
        end
      end
    end
    local current = api.turn.model()
    reply({ models = out, current = current.provider .. "/" .. current.model })
  end

  --- One input line: parse, check the frame, dispatch.
  local function handle(line, n)
    if line:match("^%s*$") then return end
    local m, err = native.json.decode(line)
    local function bad(msg, id)
      write({ type = "response", id = id, ok = false, error = string.format("line %d: %s", n, msg) })
    end
    if err then return bad(tostring(err)) end
    -- (A JSON array decodes to a table too: its first element gives it away.)
    if type(m) ~= "table" or m[1] ~= nil or next(m) == nil then
      return bad("a request must be a JSON object with a `type`")
    end
    local id = m.id
    if id ~= nil and type(id) ~= "string" and math.type(id) ~= "integer" then
      return bad("`id` must be a string or an integer")
    end
    local ty = m.type
    local h = type(ty) == "string" and H[ty] or nil
    if not h then
      local names = {}
      for k in pairs(H) do names[#names + 1] = k end
      table.sort(names)
      return bad(type(ty) == "string" and ("unknown type " .. string.format("%q", ty) .. "; one of " .. table.concat(names, ", "))
        or "`type` is missing", id)
    end
    local function reply(fields)
      local r = fields or {}
      r.type, r.id, r.command, r.ok = "response", id, ty, true
      write(r)
    end
    local function fail(e)
      write({ type = "response", id = id, command = ty, ok = false, error = e })
    end
    -- JSON null is an absent field; then the request against its contract (the fields it
    -- takes, their types and values).
    for k, v in pairs(m) do
      if v == native.json.null then m[k] = nil end
    end
    local valid, why = api.validate("RpcRequest", m, { strict = true })
    if not valid then return bad(ty .. ": " .. why, id) end
    local ok, e = pcall(h, m, reply, fail)
    if not ok then fail(tostring(e)) end
  end

  api.register("presenter", {
    name = "rpc",
    init = function()
      S.active = true
      S.asks = {}
      S.turns = 0
      S.preparing = 0
      S.closed = false
    end,
    notify = function(text) write({ type = "notify", text = tostring(text) }) end,
    select = function(title, items)
      local options = {}
      for i, item in ipairs(items or {}) do options[i] = { id = i, label = tostring(item) } end
      return ask({ kind = "select", title = tostring(title or ""), options = options }, identity)
    end,
    prompt = function(question, default)
      return ask({ kind = "prompt", title = tostring(question or ""), default = default, options = {} }, identity)
    end,
    --- A hook's `ctx.ask` (the permission policy's approvals): options by their `value`.
    ask = function(request)
      if type(request) ~= "table" then request = { question = tostring(request), options = { "yes", "no" } } end
      if request.input then
        return ask({ kind = "prompt", title = tostring(request.title or request.question or ""), default = request.default, options = {} }, identity)
      end
      local options = {}
      for i, o in ipairs(request.options or request.items or { "yes", "no" }) do
        if type(o) == "table" then
          local label = tostring(o.label or o.value or i)
          options[i] = { id = tostring(o.value or label), label = label }
        else
          options[i] = { id = tostring(o), label = tostring(o) }
        end
      end
      return ask({
        kind = "approval", title = tostring(request.title or "fen asks"),
        text = request.text or request.question, tool = request.tool, tool_call_id = request.call_id,
        scope = request.scope, options = options,
      }, identity)
    end,
    run = function(ctx)
      S.active = true
      local n = 0
      if ctx.prompt and ctx.prompt ~= "" then handle(native.json.encode({ type = "prompt", text = ctx.prompt }), 0) end
      while true do
        local line = term.read_line()
        if not line then break end
        n = n + 1
        handle(line, n)
      end
      -- End of input: what is still asked gets the headless answer; the turn ends by itself.
      S.closed = true
      for id, pending in pairs(S.asks) do
        S.asks[id] = nil
        pending.result = pending.convert(nil, headless_answer(pending.kind))
        term.done(pending.waiter)
      end
      while S.turns > 0 or S.preparing > 0 do
        S.idle_waiter = term.waiter()
        term.wait(S.idle_waiter)
      end
      return 0
    end,
  })
end
