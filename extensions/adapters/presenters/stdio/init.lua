-- stdio: a line REPL (`fen` until the TUI exists, and whenever stdin or stdout is not a
-- terminal). Prefixes: `you>` (the prompt, on a terminal), `ai>` streamed answer text,
-- `tool>` tool rows, `info>` and `err>` notices. Lines starting with `/` run commands
-- (/help lists them). Ctrl-C cancels a running turn; Ctrl-D (end of input) quits.
local native = require("fen.native")
local rows = require("fen.lib.rows")

return function(api)
  local active, streaming = false, false
  local function out(s)
    io.stdout:write(s)
    io.stdout:flush()
  end
  local function end_stream()
    if streaming then
      out("\n")
      streaming = false
    end
  end
  api.on("assistant-text-delta", function(ev)
    if not active then return end
    if not streaming then
      out("ai> ")
      streaming = true
    end
    out(ev.delta)
  end)
  api.on("llm-end", function() if active then end_stream() end end)
  api.on("tool-call", function(ev)
    if active then out("tool> run " .. rows.call_summary(ev.tool_call) .. "\n") end
  end)
  api.on("tool-result", function(ev) if active then out(rows.result_row(ev.result) .. "\n") end end)
  api.on("provider-retry", function(ev)
    if active then
      out(string.format("info> attempt %d/%d failed (%s); retrying in %.1fs\n", ev.attempt, ev.max_attempts, ev.reason, ev.delay_ms / 1000))
    end
  end)
  api.on("info", function(ev) if active then out("info> " .. (ev.info or ev.text or "") .. "\n") end end)
  api.on("error", function(ev) if active then out("err> " .. ev.error .. "\n") end end)
  api.on("extension-error", function(ev)
    if active then out(string.format("err> extension %s failed in %s: %s\n", tostring(ev.owner), tostring(ev.event), ev.error)) end
  end)

  api.register("presenter", {
    name = "stdio",
    run = function(ctx)
      active = true
      local interactive = native.term.isatty(0)
      if interactive then out("fen " .. native.version .. ": type a task, /help for commands, Ctrl-D to quit\n") end
      local first = ctx.prompt ~= "" and ctx.prompt or nil
      while true do
        local line = first
        first = nil
        if not line then
          if interactive then out("you> ") end
          line = native.term.read_line()
        end
        if not line then break end
        if line:match("^%s*/") then
          local text, err = api.kernel.run_command(line)
          if err then
            out("err> " .. err .. "\n")
          elseif text then
            out(text .. "\n")
          end
        elseif not line:match("^%s*$") then
          local r = api.turn.submit(line, { when_busy = "steering" })
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
