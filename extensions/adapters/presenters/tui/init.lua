-- tui: the full-screen presenter. A status row at the top, the transcript, registered panels,
-- the input at the bottom. Native `fen.native.term` does the terminal (modes, keys, painting,
-- wrapping, markdown, scrolling); this file is the policy: which events become which blocks,
-- the wording of rows, status and panel composition, submitting, the commands it adds; its
-- sibling files hold the keymap (keys.lua), completion (completion.lua), the input history
-- (history.lua) and the select/prompt overlays (overlays.lua). It runs on events and keys
-- only, never per frame, and hands native one layout description per change.
--
-- Everything mutable lives in `api.state()` so `/reload` swaps the code under a running loop:
-- the loop calls `S.impl.*`, which each load replaces (then `reinit-presenter` re-reads the
-- panels, status items and controls).
local native = require("fen.native")
local rows = require("fen.lib.rows")
local term = native.term

---@class TuiState
local S

return function(api)
  S = api.state()
  local editor = api.load("editor")
  local toolrows = api.load("toolrows")
  local notify = api.load("notify")
  local menu = api.load("menu")
  local multiselect = api.load("multiselect")
  S.ed = S.ed or { text = "", cursor = 0 }
  S.pastes = S.pastes or {}
  S.paste_n = S.paste_n or 0
  S.tools = S.tools or {}
  S.queued = S.queued or { steering = {}, ["follow-up"] = {} }
  S.expanded = S.expanded or false
  S.thinking_shown = S.thinking_shown or false
  S.usage = S.usage or { input = 0, output = 0 }
  S.preview_limit = tonumber(os.getenv("FEN_TUI_PREVIEW_BYTES") or "") or 1024

  local impl = {}
  S.impl = impl

  ---------------------------------------------------------------------------------------------
  -- Styles by role (the 16 base colours; NO_COLOR is applied natively), shared with user
  -- extensions that restyle rows (see fen.lib.theme).
  local style = require("fen.lib.theme")
  S.style = style

  local function human(n)
    if n < 1000 then return tostring(n) end
    if n < 1000000 then return string.format("%.1fk", n / 1000) end
    return string.format("%.1fM", n / 1000000)
  end

  --- Token counts the way the status row shows them: 950, 8.4k, 84k, 1.2M.
  local function short(n)
    if n < 1000 then return tostring(math.floor(n)) end
    if n < 10000 then return (string.format("%.1fk", n / 1000):gsub("%.0k$", "k")) end
    if n < 1000000 then return string.format("%dk", math.floor(n / 1000 + 0.5)) end
    return (string.format("%.1fM", n / 1000000):gsub("%.0M$", "M"))
  end
  impl.short = short

  --- The transcript blocks of the user's messages, oldest first (Ctrl-G, /jump).
  S.user_blocks = S.user_blocks or {}
  function impl.remember_user(id, text)
    S.user_blocks[#S.user_blocks + 1] = { id = id, text = text }
  end

  --- A top-level table of the user's settings.json as the run loaded it (at start and on
  --- /reload); the user's file only: a project's settings never style the screen or notify.
  function impl.user_setting(name)
    for _, f in ipairs(api.settings.files()) do
      if f.scope == "user" then return type(f.value) == "table" and f.value[name] or nil end
    end
    return nil
  end

  --- settings.json's `tui` table ({} when absent or unreadable).
  function impl.settings()
    local v = impl.user_setting("tui")
    return type(v) == "table" and v or {}
  end

  ---------------------------------------------------------------------------------------------
  -- Transcript blocks.
  local function open() return S.open end

  local function notice(text, st)
    if not open() then return end
    term.push({ kind = "notice", text = text, style = st or style.info, gap = true })
  end
  impl.notice = notice

  --- Markdown and code are drawn by native, in the theme's `markdown.*` and `code.*` styles.
  --- A bad one is a notice naming it (once) and the defaults stay.
  local function sync_palette()
    local ok, err = pcall(term.palette, style.native_styles())
    if ok then S.palette_error = nil return end
    pcall(term.palette, nil)
    local first = tostring(err):match("[^\n]*")
    local msg = "tui.theme: " .. (first:gsub("^.-native%.term%.palette: ", ""))
    if msg ~= S.palette_error then
      S.palette_error = msg
      notice(msg, style.error)
    end
  end
  impl.sync_palette = sync_palette

  --- `tool> ok read README.md (42 lines, 3.1KB)` as styled spans.
  local function tool_row(text)
    local verb, rest = text:match("^tool> (%S+)(.*)$")
    if not verb then return { { text = text, style = style.tool } } end
    local vs = (verb == "ok" and style.ok) or (verb == "err" and style.err) or style.tool
    return { { text = "tool> ", style = style.dim }, { text = verb, style = vs }, { text = rest } }
  end

  local function result_text(result)
    local parts = {}
    for _, b in ipairs(result.content or {}) do parts[#parts + 1] = b.text or "" end
    return table.concat(parts)
  end

  local function preview(text)
    if #text <= S.preview_limit then return text end
    local cut = text:sub(1, S.preview_limit)
    -- Never split a UTF-8 sequence.
    while #cut > 0 and cut:byte(#cut) >= 0x80 and cut:byte(#cut) < 0xC0 do cut = cut:sub(1, -2) end
    if #cut > 0 and cut:byte(#cut) >= 0xC0 then cut = cut:sub(1, -2) end
    return cut .. string.format("\n… (%d more bytes)", #text - #cut)
  end

  local function last_lines(text, n)
    local lines = {}
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
    local from = math.max(1, #lines - n + 1)
    return table.concat(lines, "\n", from)
  end

  --- The streaming answer and thinking are done: in inline mode they may now go to scrollback.
  local function end_text()
    if S.open then
      if S.cur_text then pcall(term.update, S.cur_text, { live = false }) end
      if S.cur_think then pcall(term.update, S.cur_think, { live = false }) end
    end
    S.cur_text = nil
    S.cur_think = nil
  end

  ---------------------------------------------------------------------------------------------
  -- Status row and panels (recomputed on events, cached between keystrokes).
  local function ctx_for_extensions()
    return { busy = S.busy, width = (term.size()), presenter = "tui" }
  end

  local function contributions(kind)
    local list = api.kernel.contributions(kind)
    return list
  end

  local function compute_status()
    local items = {}
    if S.provider and S.provider ~= "" then
      items[#items + 1] = { text = S.provider .. ":" .. (S.model or "?"), style = style.status }
    else
      items[#items + 1] = { text = "no provider", style = style.err }
    end
    -- The thinking level in use (`/thinking` changes it between turns).
    local okm, m = pcall(api.turn.model)
    local thinking = okm and m and m.thinking or S.thinking_level
    if thinking then items[#items + 1] = { text = "think:" .. thinking } end
    -- Context use, always in view: the last request's input (cache reads and writes
    -- included) plus its answer, against the model's window; warn at 70 %, alarm at 90 %.
    local used = (S.usage.last_input or 0) + (S.usage.last_output or 0)
    local okw, window = pcall(api.turn.context_window)
    if okw and type(window) == "number" and window > 0 then
      local pct = math.floor(used * 100 / window)
      local st = (pct >= 90 and style.err) or (pct >= 70 and style.hint) or nil
      items[#items + 1] = { text = string.format("ctx %d%% %s/%s", pct, short(used), short(window)), style = st }
    elseif used > 0 then
      items[#items + 1] = { text = "ctx " .. short(used) }
    end
    if #S.queued.steering > 0 then items[#items + 1] = { text = "steer:" .. #S.queued.steering, style = style.hint } end
    if #S.queued["follow-up"] > 0 then items[#items + 1] = { text = "follow:" .. #S.queued["follow-up"], style = style.hint } end
    local list = contributions("status")
    table.sort(list, function(a, b) return (a.spec.order or 100) < (b.spec.order or 100) end)
    for _, c in ipairs(list) do
      local ok, text = pcall(c.spec.render, ctx_for_extensions())
      if not ok then
        items[#items + 1] = { text = "status-error:" .. tostring(c.name), style = style.err }
      elseif type(text) == "string" and text ~= "" then
        items[#items + 1] = { text = text }
      end
    end
    S.status = items
  end

  local function to_lines(out)
    local lines = {}
    if type(out) == "string" then
      for l in (out .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
      if lines[#lines] == "" then lines[#lines] = nil end
    elseif type(out) == "table" then
      for _, l in ipairs(out) do
        -- A row is a string, a list of spans, or one span ({text = ..., style = ...}).
        if type(l) == "table" and l.text ~= nil then
          lines[#lines + 1] = { l }
        elseif type(l) == "string" or type(l) == "table" then
          lines[#lines + 1] = l
        else
          lines[#lines + 1] = tostring(l)
        end
      end
    end
    return lines
  end

  local function compute_panels()
    local panels = {}
    for _, c in ipairs(contributions("panel")) do
      local spec = c.spec
      local shown = true
      if spec.enabled then
        local ok, on = pcall(spec.enabled, ctx_for_extensions())
        shown = ok and on and true or false
      end
      if shown then
        local ok, out = pcall(spec.render, ctx_for_extensions())
        if ok then
          local lines = to_lines(out)
          if #lines > 0 then panels[#panels + 1] = { title = spec.title, lines = lines } end
        else
          panels[#panels + 1] = { title = spec.title, lines = { { { text = "panel-error:" .. tostring(c.name), style = style.err } } } }
        end
      end
    end
    S.panels = panels
  end

  local function compute_controls()
    local keys = {}
    for _, c in ipairs(contributions("control")) do
      local key = c.spec.key or c.name
      if type(key) == "string" then keys[key] = c.spec end
    end
    S.controls = keys
  end

  ---------------------------------------------------------------------------------------------
  -- The layout description.
  local function layout()
    if not open() then return end
    local notices = {}
    if S.hint then notices[#notices + 1] = { { text = S.hint, style = style.hint } } end
    local right = {}
    if S.info and S.info ~= "" then right[#right + 1] = { text = S.info, style = style.hint } end
    local desc = {
      status = S.status or {},
      status_right = right,
      busy = (S.busy or api.turn.busy()) and { label = "working" } or nil,
      panels = S.panels or {},
      notices = notices,
      input = {
        text = S.ed.text,
        cursor = S.ed.cursor,
        prompt = "› ",
        placeholder = S.busy and "Enter queues steering, >text a follow-up, Esc cancels"
          or "Ask anything · / for commands · @ for files",
      },
    }
    if S.menu and #S.menu.items > 0 then
      local items = {}
      for i, it in ipairs(S.menu.items) do
        items[i] = { { text = it.label }, { text = it.detail and ("  " .. it.detail) or "", style = style.dim } }
      end
      desc.menu = { items = items, selected = S.menu.selected - 1 }
    end
    if S.overlay then
      local o = S.overlay
      local items = {}
      for i, it in ipairs(o.multi and multiselect.items(o) or o.items or {}) do items[i] = tostring(it) end
      desc.overlay = {
        title = o.title or "",
        question = o.question or "",
        items = items,
        selected = o.items and #o.items > 0 and (o.selected - 1) or nil,
        input = o.input and { text = o.input.text, cursor = o.input.cursor, prompt = "› " } or nil,
        hint = o.input and "enter answer · esc dismiss" or o.multi and multiselect.HINT or "↑↓ choose · enter select · esc dismiss",
      }
    end
    local ok, err = pcall(term.layout, desc)
    if not ok then
      -- A panel or status item handed over something the layout refuses (a bad style, say):
      -- show that instead of freezing the screen.
      local status = {}
      for i, it in ipairs(desc.status) do status[i] = tostring(type(it) == "table" and it.text or it) end
      desc.status = status
      desc.panels = { { title = "layout-error", lines = { tostring(err):sub(1, 300) } } }
      term.layout(desc)
    end
  end
  impl.layout = layout

  local function refresh()
    if not open() then return end
    compute_status()
    compute_panels()
    layout()
  end
  impl.refresh = refresh

  ---------------------------------------------------------------------------------------------
  -- Events to blocks.
  api.on("model-changed", function(ev)
    S.provider, S.model = ev.provider, ev.model
  end)
  api.on("agent-started", function(ev)
    S.provider, S.model = ev.provider, ev.model
    local ok, m = pcall(api.turn.model)
    if ok and m then S.thinking_level = m.thinking end
    if open() then refresh() end
  end)

  api.on("user", function(ev)
    if not open() then return end
    end_text()
    local id = term.push({ kind = "user", text = ev.line, prefix = { { text = "› ", style = style.user_prefix } }, cont = "  ", style = style.user, gap = true })
    impl.remember_user(id, ev.line)
  end)

  api.on("llm-start", function() end_text() end)

  api.on("assistant-thinking-delta", function(ev)
    if not open() then return end
    if not S.cur_think then
      S.cur_think = term.push({
        kind = "thinking", head = { { text = "✻ thinking", style = style.thinking } }, text = "",
        style = style.thinking, folded = not S.thinking_shown, gap = true, live = true,
      })
    end
    term.append(S.cur_think, ev.delta)
  end)

  api.on("assistant-text-delta", function(ev)
    if not open() then return end
    if not S.cur_text then
      S.cur_text = term.push({ kind = "assistant", markdown = true, text = "", gap = true, live = true, style = style.assistant })
    end
    term.append(S.cur_text, ev.delta)
  end)

  api.on("llm-end", function(ev)
    end_text()
    local u = ev.message and ev.message.usage
    if u then
      S.usage.input = S.usage.input + (u.input or 0)
      S.usage.output = S.usage.output + (u.output or 0)
      S.usage.last_input = (u.input or 0) + (u.cache_read or 0) + (u.cache_write or 0)
      S.usage.last_output = u.output or 0
      S.usage.cost = (S.usage.cost or 0) + ((u.cost and u.cost.total) or 0)
    end
  end)

  api.on("tool-call", function(ev)
    if not open() then return end
    end_text()
    local call = ev.tool_call or {}
    local head = toolrows.call_head(call, term, style) or tool_row("tool> run " .. rows.call_summary(call))
    local id = term.push({ kind = "tool-live", head = head, text = "", live = true })
    local t = { id = id, out = "", call = call, head = head, started = os.time() }
    S.tools[call.id or ""] = t
    impl.tick_tool(call.id or "", t)
  end)

  --- A running tool's row shows its elapsed time once it has run for 2 s, updated each
  --- second until its result arrives (a wake-up a second while a tool runs; none otherwise).
  function impl.tick_tool(key, t)
    term.spawn(function()
      while S.tools[key] == t and open() do
        pcall(native.sleep, 1000)
        if S.tools[key] ~= t or not open() then return end
        local secs = os.time() - t.started
        if secs >= 2 then
          local head = {}
          for i, span in ipairs(t.head) do head[i] = span end
          local el = secs < 60 and string.format("%ds", secs) or string.format("%dm%02ds", secs // 60, secs % 60)
          head[#head + 1] = { text = "  " .. el, style = style.dim }
          pcall(term.update, t.id, { head = head })
        end
      end
    end)
  end

  api.on("tool-update", function(ev)
    if not open() then return end
    local t = S.tools[ev.tool_call_id or ""]
    if not t then return end
    t.out = (t.out .. (ev.text or "")):sub(-4096)
    term.update(t.id, { text = last_lines(t.out, 5), style = style.dim })
  end)

  api.on("tool-result", function(ev)
    if not open() then return end
    local r = ev.result or {}
    local t = S.tools[r.tool_call_id or ""]
    local row = rows.result_row(r, t and t.call)
    local body = result_text(r)
    if r.is_error then
      local first = body:match("^[^\n]*") or ""
      if first ~= "" then row = row .. "  " .. first:sub(1, 120) end
    end
    local spec = { kind = "tool", head = tool_row(row), text = preview(body), folded = not S.expanded, style = {}, live = false }
    toolrows.decorate(spec, r, t and t.call, term, style)
    if t then
      term.update(t.id, spec)
      S.tools[r.tool_call_id or ""] = nil
    else
      term.push(spec)
    end
  end)

  api.on("queued", function() if open() then refresh() end end)

  api.on("message-appended", function(ev)
    local m = ev.message or {}
    if m.role == "user" then
      local text = type(m.content) == "string" and m.content or ((m.content or {})[1] or {}).text
      for _, kind in ipairs({ "steering", "follow-up" }) do
        local q = S.queued[kind]
        if q[1] and q[1] == text then
          table.remove(q, 1)
          if open() then refresh() end
          return
        end
      end
    end
  end)

  --- A desktop notification when the terminal is not focused (tui/notify.lua).
  function impl.notify(kind, title, body)
    if not open() or not S.notify_cfg then return end
    notify.send(S.notify_cfg, term, function(fn) term.spawn(function() pcall(fn) end) end,
      function(msg) notice(msg, style.error) end,
      { type = kind, title = title, body = body })
  end

  --- The first line of the last answer, for the turn-end notification.
  local function last_answer_line()
    local ok, msgs = pcall(api.turn.messages)
    if not ok then return "" end
    for i = #(msgs or {}), 1, -1 do
      local m = msgs[i]
      if m.role == "assistant" then
        for _, b in ipairs(m.content or {}) do
          if b.type == "text" and (b.text or ""):match("%S") then
            return (b.text:match("^%s*([^\n]*)") or ""):sub(1, 200)
          end
        end
        return ""
      end
    end
    return ""
  end

  api.on("agent-turn-complete", function(ev)
    if not open() then return end
    impl.notify("turn_end", "fen: turn done", last_answer_line())
    end_text()
    -- Tool rows whose result never came (a cancelled turn) are final now.
    for k, t in pairs(S.tools) do
      pcall(term.update, t.id, { live = false })
      S.tools[k] = nil
    end
    local u = S.usage
    if (u.input or 0) + (u.output or 0) > 0 then
      local text = string.format("↳ %s in · %s out", human(u.input), human(u.output))
      if (u.cost or 0) > 0 then text = text .. string.format(" · $%.4f", u.cost) end
      term.push({ kind = "usage", text = text, style = style.dim })
    end
    S.usage.input, S.usage.output, S.usage.cost = 0, 0, 0
    if S.hint == "cancelling…" then S.hint = nil end
    refresh()
  end)

  api.on("cancelled", function() notice("cancelled", style.info) end)
  api.on("info", function(ev) notice("info: " .. tostring(ev.info or ev.text or ""), style.info) end)
  api.on("error", function(ev) notice("error: " .. tostring(ev.error), style.error) end)
  api.on("extension-error", function(ev)
    notice(string.format("extension %s failed in %s: %s", tostring(ev.owner), tostring(ev.event), tostring(ev.error)), style.error)
  end)
  api.on("provider-retry", function(ev)
    notice(string.format("attempt %d/%d failed (%s); retrying in %.1fs", ev.attempt, ev.max_attempts, tostring(ev.reason), (ev.delay_ms or 0) / 1000), style.dim)
  end)
  api.on("compaction-summary", function(ev)
    notice("compacted: " .. tostring(ev.summary or ""):sub(1, 400), style.dim)
  end)
  api.on("set-status-info", function(ev)
    S.info = ev.info
    layout()
  end)
  api.on("redraw", function() refresh() end)
  api.on("dismiss", function()
    if S.overlay then S.impl.dismiss() end
  end)
  api.on("reinit-presenter", function()
    if not open() then return end
    local impl2 = S.impl
    impl2.reinit()
  end)
  api.on("reset-conversation", function()
    S.user_blocks = {}
    if open() then term.clear() end
  end)
  -- /rewind of the conversation puts the turn's prompt back for editing.
  api.on("input-prefill", function(ev)
    if type(ev.text) ~= "string" then return end
    editor.set(S.ed, ev.text)
    refresh()
  end)

  -- History, completion, overlays and keys are sibling files; they share these.
  local tui = {
    api = api, S = S, impl = impl, editor = editor, menu = menu, style = style,
    open = open, layout = layout, refresh = refresh, notice = notice, contributions = contributions,
    ctx_for_extensions = ctx_for_extensions, sync_palette = sync_palette, compute_controls = compute_controls,
    multiselect = multiselect,
  }
  local history = api.load("history")(tui)
  tui.history = history
  local completion = api.load("completion")(tui)
  tui.completion = completion

  ---------------------------------------------------------------------------------------------
  -- Submitting.
  local function expand_pastes(text)
    return (text:gsub("%[paste #(%d+) %+%d+ lines%]", function(n)
      return S.pastes[tonumber(n)] or nil
    end))
  end

  --- `@path` mentions of existing files are attached to the message as a read would show
  --- them (numbered lines, the read tool's limits), after the text the person typed.
  local function attach_mentions(line)
    local seen, parts = {}, {}
    for path in line:gmatch("@([%w%._%-/~]+)") do
      local st = not seen[path] and native.fs.stat(path)
      seen[path] = true
      if st and not st.is_dir then
        local r = native.fs.read(path)
        if r and r.kind == "text" then
          r.text = native.truncate.number_lines(r.text, r.first_line)
          local more = r.next_offset and string.format(" (lines %d-%d of %d; read more with the read tool)",
            r.first_line, r.last_line, r.total_lines) or ""
          parts[#parts + 1] = string.format("<file path=%q>%s\n%s\n</file>", path, more, r.text)
        end
      end
    end
    if #parts == 0 then return line end
    return line .. "\n\n" .. table.concat(parts, "\n")
  end

  local function run_task(fn)
    term.spawn(function()
      local ok, err = pcall(fn)
      if not ok then notice("error: " .. tostring(err), style.error) end
    end)
  end

  local function submit()
    local raw = S.ed.text
    if raw:match("^%s*$") then return end
    local line = expand_pastes(raw)
    history.add(raw)
    S.hist_i = nil
    editor.set(S.ed, "")
    S.menu = nil
    if line:match("^%s*/") then
      run_task(function()
        local text, err = api.kernel.run_command(line)
        if err then
          notice(err, style.error)
        elseif text and text ~= "" then
          notice(text, {})
        end
        refresh()
      end)
      layout()
      return
    end
    if S.busy then
      local kind, text = "steering", line
      if line:sub(1, 1) == ">" then kind, text = "follow-up", line:sub(2):gsub("^%s+", "") end
      local q = S.queued[kind]
      q[#q + 1] = text
      local id = term.push({ kind = "user", text = text, prefix = { { text = kind == "steering" and "» " or "> ", style = style.queued } }, cont = "  ", style = style.dim, gap = true })
      impl.remember_user(id, text)
      api.turn.submit(text, { when_busy = kind })
      refresh()
      return
    end
    S.busy = true
    layout()
    run_task(function()
      local r = api.turn.submit(attach_mentions(line), { when_busy = "steering" })
      S.busy = false
      if r.status == "error" then
        notice("error: " .. (r.error or "the turn failed"), style.error)
      end
      refresh()
    end)
  end

  tui.run_task, tui.submit = run_task, submit
  local overlays = api.load("overlays")(tui)
  tui.overlays = overlays
  local ask_overlay = overlays.ask
  local toggle_expand = api.load("keys")(tui).toggle_expand

  ---------------------------------------------------------------------------------------------
  -- The earlier transcript (fen -c / --resume).
  local function replay(messages)
    for _, m in ipairs(messages or {}) do
      local content = m.content
      if m.role == "user" then
        local text = type(content) == "string" and content or ""
        if type(content) == "table" then
          for _, b in ipairs(content) do if b.type == "text" then text = text .. (b.text or "") end end
        end
        local id = term.push({ kind = "user", text = text, prefix = { { text = "› ", style = style.user_prefix } }, cont = "  ", style = style.user, gap = true })
        impl.remember_user(id, text)
      elseif m.role == "assistant" then
        -- The context gauge starts where the resumed conversation left it.
        local u = m.usage
        if type(u) == "table" and ((u.input or 0) + (u.output or 0)) > 0 then
          S.usage.last_input = (u.input or 0) + (u.cache_read or 0) + (u.cache_write or 0)
          S.usage.last_output = u.output or 0
        end
        for _, b in ipairs(content or {}) do
          if b.type == "text" and b.text ~= "" then
            term.push({ kind = "assistant", markdown = true, text = b.text, gap = true, style = style.assistant })
          elseif b.type == "thinking" then
            term.push({ kind = "thinking", head = { { text = "✻ thinking", style = style.thinking } }, text = b.thinking or "", style = style.thinking, folded = not S.thinking_shown, gap = true })
          elseif b.type == "tool-call" then
            S.replay_calls = S.replay_calls or {}
            S.replay_calls[b.id or ""] = b
          end
        end
      elseif m.role == "tool-result" then
        local body = result_text(m)
        local call = (S.replay_calls or {})[m.tool_call_id or ""]
        local spec = { kind = "tool", head = tool_row(rows.result_row(m, call)), text = preview(body), folded = not S.expanded }
        toolrows.decorate(spec, m, call, term, style)
        term.push(spec)
      end
    end
  end

  ---------------------------------------------------------------------------------------------
  -- Commands this presenter adds.
  api.register("command", {
    name = "expand",
    description = "Show or hide tool result previews under the tool rows (also Ctrl-O).",
    handler = function()
      if not open() then return "/expand works in the TUI" end
      toggle_expand()
      return nil
    end,
  })

  --- The answers' texts, oldest first.
  local function answers()
    local out = {}
    for _, m in ipairs(api.turn.messages() or {}) do
      if m.role == "assistant" then
        local parts = {}
        for _, b in ipairs(m.content or {}) do if b.type == "text" then parts[#parts + 1] = b.text end end
        if #parts > 0 then out[#out + 1] = table.concat(parts) end
      end
    end
    return out
  end

  --- The body of the last fenced code block in `text`, or nil.
  local function last_code(text)
    local found
    local body, fence
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
      local f = line:match("^%s*(```+)") or line:match("^%s*(~~~+)")
      if fence then
        if f and f:sub(1, 1) == fence:sub(1, 1) and #f >= #fence and line:match("^%s*[`~]+%s*$") then
          found = table.concat(body, "\n")
          fence = nil
        else
          body[#body + 1] = line
        end
      elseif f then
        fence, body = f, {}
      end
    end
    return found
  end

  local function copied(text)
    term.copy(text)
    return string.format("copied %d characters", utf8.len(text) or #text)
  end

  api.register("command", {
    name = "copy",
    description = "Copy an answer to the clipboard (OSC 52; passes through tmux): /copy the last, /copy N the Nth-last, /copy code the last code block.",
    handler = function(args)
      args = (args or ""):match("^%s*(.-)%s*$")
      local all = answers()
      if args == "code" then
        for i = #all, 1, -1 do
          local code = last_code(all[i])
          if code then return copied(code) end
        end
        return "no code block in the answers"
      end
      local n = args == "" and 1 or tonumber(args)
      if not n or n < 1 or n % 1 ~= 0 then return "usage: /copy [N] | /copy code" end
      local text = all[#all - n + 1]
      if not text then return #all == 0 and "nothing to copy yet" or string.format("there are %d answers", #all) end
      return copied(text)
    end,
  })

  ---------------------------------------------------------------------------------------------
  -- Navigation: Ctrl-G, /jump, /find (full-screen mode: inline mode's transcript is in the
  -- terminal's own scrollback, searched and scrolled by the terminal).
  local INLINE_NAV = "inline mode: the transcript is in your terminal's scrollback (use its search and scrolling)"

  function impl.jump_last_user()
    if S.inline then S.hint = INLINE_NAV return end
    local u = S.user_blocks[#S.user_blocks]
    if u then term.jump(u.id) end
  end

  function impl.find_step(forward)
    local at = term.find_step(forward)
    if at then
      S.hint = string.format("find %q: %d of %d blocks · n next · N previous · esc done", S.finding, at[1], at[2])
    end
  end

  function impl.find_done()
    S.finding = nil
    S.hint = nil
    term.find_clear()
  end

  api.register("command", {
    name = "find",
    description = "Search the transcript (also Ctrl-F); n / N jump between matches, Esc ends.",
    handler = function(args)
      if not open() then return "/find works in the TUI" end
      if S.inline then return INLINE_NAV end
      local text = (args or ""):match("^%s*(.-)%s*$")
      if text == "" then impl.find_done() return "usage: /find TEXT" end
      local n = term.find(text)
      if n == 0 then
        impl.find_done()
        return string.format("%q not found", text)
      end
      S.finding = text
      term.bottom()
      impl.find_step(false)
      return nil
    end,
  })

  api.register("command", {
    name = "mouse",
    description = "Mouse mode on/off: drag to select and copy transcript text (OSC 52), the wheel scrolls; off: your terminal's own selection.",
    handler = function(args)
      if not open() then return "/mouse works in the TUI" end
      if S.inline then return "inline mode: select and copy with your terminal" end
      local a = (args or ""):match("^%s*(.-)%s*$")
      if a == "on" then S.mouse = true elseif a == "off" then S.mouse = false else S.mouse = not S.mouse end
      term.mouse(S.mouse)
      return S.mouse and "mouse mode on: drag to copy, the wheel scrolls" or "mouse mode off: your terminal selects"
    end,
  })

  api.register("command", {
    name = "jump",
    description = "Jump to one of your messages (a list, newest first; Ctrl-G: the last one).",
    handler = function()
      if not open() then return "/jump works in the TUI" end
      if S.inline then return INLINE_NAV end
      local items, ids = {}, {}
      for i = #S.user_blocks, 1, -1 do
        local u = S.user_blocks[i]
        items[#items + 1] = (u.text:gsub("%s+", " ")):sub(1, 80)
        ids[#ids + 1] = u.id
      end
      if #items == 0 then return "no messages yet" end
      local choice = api.ui.select("Jump to", items)
      if choice then term.jump(ids[choice]) end
      return nil
    end,
  })

  ---------------------------------------------------------------------------------------------
  local function labels(items)
    local out = {}
    for i, it in ipairs(items or {}) do
      out[i] = type(it) == "table" and tostring(it.label or it.text or it.value or it[1]) or tostring(it)
    end
    return out
  end

  api.register("presenter", {
    name = "tui",
    --- `api.ui.notify(text)`: a notice in the transcript.
    notify = function(text)
      notice(tostring(text), style.info)
    end,
    --- `api.ui.select(title, items)`: the chosen index, nil when dismissed (Esc).
    select = function(title, items)
      local shown = labels(items)
      S.impl.notify("question", "fen asks", tostring(title or ""))
      local choice = ask_overlay({ title = tostring(title or ""), items = shown })
      if choice == nil then return nil end
      for i, l in ipairs(shown) do if l == choice then return i end end
      return nil
    end,
    --- `api.ui.select_multi(title, items)`: the chosen indices in order, nil when dismissed.
    select_multi = function(title, items)
      S.impl.notify("question", "fen asks", tostring(title or ""))
      return ask_overlay({ title = tostring(title or ""), items = labels(items), multi = true, checked = {} })
    end,
    --- `api.ui.prompt(question, default)`: the text entered, nil when dismissed.
    prompt = function(question, default)
      local d = default and tostring(default) or ""
      S.impl.notify("question", "fen asks", tostring(question or ""))
      return ask_overlay({ title = "fen", question = tostring(question or ""), input = { text = d, cursor = #d } })
    end,
    --- A hook's `ctx.ask(request)`. A string asks yes/no and answers "yes" or "no"; a table
    --- `{title, question, options = {...}}` answers the chosen option (its `value`, else its
    --- label); `{question, input = true, default}` answers text. Dismissed: nil.
    ask = function(request)
      local what = type(request) == "table" and (request.question or request.text or request.title) or request
      S.impl.notify("approval", "fen needs your approval", tostring(what or ""):match("^[^\n]*"))
      if type(request) ~= "table" then
        local a = ask_overlay({ title = "fen asks", question = tostring(request), items = { "yes", "no" } })
        return a
      end
      if request.input then
        local d = request.default and tostring(request.default) or ""
        return ask_overlay({ title = request.title or "fen asks", question = tostring(request.question or ""), input = { text = d, cursor = #d } })
      end
      local options = request.options or request.items or { "yes", "no" }
      local shown = labels(options)
      local a = ask_overlay({ title = request.title or "fen asks", question = tostring(request.text or request.question or ""), items = shown })
      if a == nil then return nil end
      for i, l in ipairs(shown) do
        if l == a then
          local o = options[i]
          return type(o) == "table" and (o.value or l) or o
        end
      end
      return nil
    end,
    run = function(ctx)
      S.open = true
      S.quit = false
      local settings = impl.settings()
      local ok_opts, opts = pcall(api.kernel.run_options)
      S.inline = (ok_opts and opts and opts.inline == true) or settings.mode == "inline"
      S.mouse = settings.mouse == true and not S.inline
      S.user_theme = settings.theme
      local problems
      S.notify_cfg, problems = notify.config(impl.user_setting("notifications"))
      S.theme_base = style.apply(S.user_theme, term.background())
      term.open({ inline = S.inline, mouse = S.mouse })
      S.impl.sync_palette()
      S.cwd = native.fs.cwd()
      local ok_msgs, messages = pcall(api.turn.messages)
      if ok_msgs then replay(messages) end
      S.impl.reinit()
      for _, p in ipairs(problems) do S.impl.notice(p, S.style.error) end
      -- The @ menu's files, listed in the background now so the first @ finds them.
      menu.refresh_files(S, term, function() S.impl.files_arrived() end)
      if ctx.prompt and ctx.prompt ~= "" then
        editor.set(S.ed, ctx.prompt)
        S.impl.key("enter")
      end
      while not S.quit do
        local ev = term.next()
        if not ev then break end
        local ok, err = pcall(S.impl.input, ev)
        if not ok then S.impl.notice("presenter error: " .. tostring(err), S.style.error) end
      end
      return 0
    end,
    shutdown = function()
      S.open = false
      term.close()
    end,
  })
end
