-- json: `--mode json`. Every event from `agent-started` on, as one JSON object a line on stdout,
-- in contract shape, then a last line `{"type": "result", status, final_text, error,
-- stop_reason, usage, cost, message_count, todos}` (it stands for the end: `agent-shutdown` is not printed).
local native = require("fen.native")

return function(api)
  -- In api.state(): handlers re-registered by /reload must see the run that is going on.
  local S = api.state()
  api.on("*", function(ev)
    if not S.active then return end
    io.stdout:write(native.json.encode(ev), "\n")
    io.stdout:flush()
  end)

  api.register("presenter", {
    name = "json",
    init = function() S.active = true end,
    run = function(ctx)
      S.active = true
      local r = api.turn.submit(ctx.prompt or "")
      S.active = false
      local usage = { input = 0, output = 0, cache_read = 0, cache_write = 0 }
      -- Dollars by kind, summed over the priced calls (absent when none was priced:
      -- unknown models, subscription logins).
      local cost
      local messages = api.turn.messages() or {}
      local stop_reason
      for _, m in ipairs(messages) do
        if m.role == "assistant" then
          stop_reason = m.stop_reason
          local u = m.usage or {}
          for k in pairs(usage) do usage[k] = usage[k] + (u[k] or 0) end
          if type(u.cost) == "table" then
            cost = cost or { input = 0, output = 0, cache_read = 0, cache_write = 0, total = 0 }
            for k in pairs(cost) do cost[k] = cost[k] + (tonumber(u.cost[k]) or 0) end
          end
          if u.subscription then usage.subscription = true end
        end
      end
      io.stdout:write(native.json.encode({
        type = "result", status = r.status, final_text = r.text, error = r.error,
        stop_reason = stop_reason, usage = usage, cost = cost, message_count = #messages,
        todos = require("fen.lib.todos").get(),
      }), "\n")
      io.stdout:flush()
      if r.status == "ok" then return 0 elseif r.status == "cancelled" then return 130 end
      return 1
    end,
  })
end
