-- stdio: a line REPL (`fen` until the TUI exists, and whenever stdin or stdout is not a
-- terminal). Prefixes: `you>` (the prompt, on a terminal), `ai>` streamed answer text,
-- `tool>` tool rows, `info>` and `err>` notices. Lines starting with `/` run commands
-- (/help lists them). Ctrl-C cancels a running turn; Ctrl-D (end of input), /quit and /exit
-- quit. On a terminal the line is edited with the cursor keys and Up/Down walk the history
-- (fen.native.line); without one, escape sequences in the input are dropped, never sent.
-- A question asked while the REPL waits for a line (an MCP server's login offer) takes the
-- next line typed as its answer.
local native = require("fen.native")
local rows = require("fen.lib.rows")

return function(api)
  -- Kept in api.state(): after /reload these handlers are new closures while run() goes on in
  -- the old one, so plain upvalues would leave the new handlers inactive (nothing printed).
  local S = api.state()
  local function out(s)
    io.stdout:write(s)
    io.stdout:flush()
  end
  local function end_stream()
    if S.streaming then
      out("\n")
      S.streaming = false
    end
  end
  api.on("assistant-text-delta", function(ev)
    if not S.active then return end
    if not S.streaming then
      out("ai> ")
      S.streaming = true
    end
    out(ev.delta)
  end)
  api.on("llm-end", function() if S.active then end_stream() end end)
  api.on("tool-call", function(ev)
    if S.active then out("tool> run " .. rows.call_summary(ev.tool_call) .. "\n") end
  end)
  api.on("tool-result", function(ev) if S.active then out(rows.result_row(ev.result) .. "\n") end end)
  api.on("provider-retry", function(ev)
    if S.active then
      out(string.format("info> attempt %d/%d failed (%s); retrying in %.1fs\n", ev.attempt, ev.max_attempts, ev.reason, ev.delay_ms / 1000))
    end
  end)
  api.on("info", function(ev) if S.active then out("info> " .. (ev.info or ev.text or "") .. "\n") end end)
  -- /rewind of the conversation puts the turn's prompt back: the next line starts with it
  -- (on a terminal; without one the rewind's message quotes it).
  api.on("input-prefill", function(ev) if S.active and type(ev.text) == "string" then S.prefill = ev.text end end)
  api.on("error", function(ev) if S.active then out("err> " .. ev.error .. "\n") end end)
  api.on("extension-error", function(ev)
    if S.active then out(string.format("err> extension %s failed in %s: %s\n", tostring(ev.owner), tostring(ev.event), ev.error)) end
  end)

  --- One answer line from the person (nil at end of input). Without a terminal the line
  --- editor shows no prompt, so the question is written out first.
  local function answer(prompt)
    if S.reading then
      -- The REPL already waits for a line (a question from the background, e.g. an MCP
      -- server's login offer): the line it reads next is handed over as this answer.
      while S.handover do native.sleep(50) end
      out(prompt .. "\n")
      local slot = {}
      S.handover = slot
      while not slot.done do native.sleep(50) end
      return slot.line and slot.line:match("^%s*(.-)%s*$") or nil
    end
    if not native.line.interactive() then
      out(prompt .. "\n")
      prompt = ""
    end
    local line = native.line.read(prompt)
    return line and line:match("^%s*(.-)%s*$") or nil
  end

  api.register("presenter", {
    name = "stdio",
    -- Questions from extensions and hooks, one line each (`api.ui.*`, `ctx.ask`).
    notify = function(text) out("info> " .. tostring(text) .. "\n") end,
    select = function(title, items)
      out(tostring(title) .. "\n")
      for i, item in ipairs(items or {}) do out(string.format("  %d. %s\n", i, tostring(item))) end
      local n = tonumber(answer("choose> ") or "")
      if n and items[n] then return n end
      return nil
    end,
    prompt = function(question, default)
      local a = answer(string.format("%s%s ", tostring(question), default and (" [" .. default .. "]") or ""))
      if a == nil then return nil end
      if a == "" then return default end
      return a
    end,
    --- A permission request: `{question, items, scope}` -> "y" | "s" | "a" | "n[: reason]" | "c".
    ask = function(req)
      if type(req) ~= "table" then req = { question = tostring(req) } end
      for _, item in ipairs(req.items or {}) do
        out(string.format("  %s %s — %s\n", item.verdict == "allow" and "ok " or "?? ", item.subject, item.reason))
      end
      if req.scope and #req.scope > 0 then
        out("  [s]ession / [a]lways would allow: " .. table.concat(req.scope, ", ") .. "\n")
      end
      while true do
        local a = answer((req.question or "Approve?") .. " [y]es [s]ession [a]lways [n]o [c]ancel ")
        if a == nil then return "n" end
        local key, reason = a:match("^(%a)%a*%s*:?%s*(.*)$")
        key = key and key:lower()
        if key == "y" or key == "s" or key == "a" or key == "c" then return key end
        if key == "n" then return reason ~= "" and ("n: " .. reason) or "n" end
        out("answer y, s, a, n (optionally `n: why`) or c\n")
      end
    end,
    run = function(ctx)
      S.active = true
      local line_in = native.line
      local interactive = line_in.interactive()
      if interactive then out("fen " .. native.version .. ": type a task, /help for commands, Ctrl-D or /quit to quit\n") end
      local first = ctx.prompt ~= "" and ctx.prompt or nil
      local after_turn = false
      while true do
        local line = first
        first = nil
        if not line then
          -- What was typed while the turn ran waits in the terminal: say so before it runs.
          if interactive and after_turn and line_in.pending() then
            out("info> a line typed during the turn was queued; it runs now\n")
          end
          after_turn = false
          local removed
          local initial = S.prefill
          S.prefill = nil
          S.reading = true
          line, removed = line_in.read(interactive and "you> " or "", interactive and initial or nil)
          S.reading = false
          if S.handover then
            S.handover.line, S.handover.done = line, true
            S.handover = nil
            line = line and ""
          end
          -- (On a terminal the line editor ends the prompt line itself at Ctrl-D.)
          if not line then break end
          if (removed or 0) > 0 then
            out(string.format("info> %d escape sequence(s) removed from the input (arrow keys edit the line only on a terminal)\n", removed))
          end
        end
        if line:match("^%s*/quit%s*$") or line:match("^%s*/exit%s*$") then break end
        if line:match("^%s*/") then
          local text, err = api.kernel.run_command(line)
          if err then
            out("err> " .. err .. "\n")
          elseif text then
            out(text .. "\n")
          end
        elseif not line:match("^%s*$") then
          local r = api.turn.submit(line, { when_busy = "steering" })
          after_turn = true
          end_stream()
          if r.status == "error" then
            out("err> " .. (r.error or "the turn failed") .. "\n")
          elseif r.status == "cancelled" then
            out("info> cancelled\n")
          end
        end
      end
      return 0
    end,
  })
end
