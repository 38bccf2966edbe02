-- print: `fen -p "task"`. The final answer goes to stdout; progress lines go to stderr as they
-- happen (`tool> run read README.md`, `tool> ok read README.md (42 lines, 3.1KB)`, retries,
-- a heartbeat while a long answer streams), and at the end of the turn the tokens it used
-- (`tokens> input N, output N, cache read N, cache write N`, summed over its model calls).
-- Exit status: 0 on a normal stop (a refusal too: it is the answer, and stderr says so), 1 on
-- error, 130 when cancelled.
local rows = require("fen.lib.rows")

return function(api)
  -- In api.state(): handlers re-registered by /reload must see the run that is going on.
  local S = api.state()
  local function progress(line)
    if not S.active then return end
    io.stderr:write(line, "\n")
    io.stderr:flush()
  end
  api.on("tool-call", function(ev) progress("tool> run " .. rows.call_summary(ev.tool_call)) end)
  api.on("tool-result", function(ev) progress(rows.result_row(ev.result)) end)
  -- Errors outside a tool call (bad permission rules at start, an extension that failed).
  api.on("error", function(ev) progress("error> " .. tostring(ev.error)) end)
  -- A heartbeat at most once a second while an answer streams, so a long one shows life.
  local beat, streamed = nil, 0
  api.on("llm-start", function() beat, streamed = os.time(), 0 end)
  api.on("assistant-text-delta", function(ev)
    -- Characters, as the heartbeat says (not bytes).
    streamed = streamed + (utf8.len(ev.delta) or #ev.delta)
    local now = os.time()
    if beat and now > beat then
      beat = now
      progress(string.format("... streaming (%d chars)", streamed))
    end
  end)
  -- Token use of the turn, summed over its model calls.
  local used = nil
  api.on("llm-end", function(ev)
    S.refused = ev.message ~= nil and ev.message.stop_reason == "refusal"
    local u = ev.message and ev.message.usage
    if type(u) ~= "table" then return end
    used = used or { input = 0, output = 0, cache_read = 0, cache_write = 0 }
    for k in pairs(used) do used[k] = used[k] + (tonumber(u[k]) or 0) end
  end)
  local function report_tokens()
    if used then
      progress(string.format("tokens> input %d, output %d, cache read %d, cache write %d",
        used.input, used.output, used.cache_read, used.cache_write))
    end
  end
  api.on("provider-retry", function(ev)
    progress(string.format("retry> attempt %d/%d failed (%s); retrying in %.1fs", ev.attempt, ev.max_attempts, ev.reason, ev.delay_ms / 1000))
  end)

  api.on("plan-presented", function(ev) S.plan = ev.plan end)
  -- A goal (`--goal`): its final status line goes to stderr; exit 0 only when complete.
  api.on("goal", function(ev) S.goal = ev end)

  api.register("presenter", {
    name = "print",
    -- Active from init on: `agent-started` handlers (bad permission rules) report before run.
    init = function() S.active = true end,
    run = function(ctx)
      S.active = true
      local r = api.turn.submit(ctx.prompt or "")
      report_tokens()
      -- Plan mode: the plan `exit_plan` presented is the answer (the turn stops there).
      if S.plan then
        io.stdout:write(S.plan, "\n")
        io.stdout:flush()
        return 0
      end
      if S.goal then
        if r.status == "ok" and r.text then io.stdout:write(r.text, "\n") io.stdout:flush() end
        io.stderr:write(S.goal.line or ("goal " .. tostring(S.goal.status)), "\n")
        return S.goal.status == "complete" and 0 or 1
      end
      if r.status == "ok" then
        io.stdout:write(r.text or "", "\n")
        io.stdout:flush()
        if S.refused then io.stderr:write("fen: the model refused (stop_reason refusal); its refusal is the answer above\n") end
        return 0
      elseif r.status == "cancelled" then
        io.stderr:write("fen: cancelled\n")
        return 130
      end
      io.stderr:write("fen: ", r.error or "the turn failed", "\n")
      return 1
    end,
  })
end
