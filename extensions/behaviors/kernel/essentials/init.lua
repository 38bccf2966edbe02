-- essentials: /help lists the registered commands; /reload re-runs every extension.
-- Command handlers return the text the presenter shows.
return function(api)
  api.register("command", {
    name = "help",
    description = "List the slash commands.",
    order = 0,
    handler = function()
      local commands = api.list("command")
      local rows = {}
      for _, c in ipairs(commands) do
        if not c.shadowed_by then rows[#rows + 1] = c end
      end
      table.sort(rows, function(a, b)
        local oa, ob = a.order or 100, b.order or 100
        if oa ~= ob then return oa < ob end
        return a.name < b.name
      end)
      local width = 0
      for _, c in ipairs(rows) do width = math.max(width, #c.name + 1) end
      local lines = { "Commands:" }
      for _, c in ipairs(rows) do
        lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", "/" .. c.name, c.description or "")
      end
      return table.concat(lines, "\n")
    end,
  })

  api.register("command", {
    name = "reload",
    description = "Reload every extension (a broken one keeps its previous version).",
    order = 1,
    idle_only = true,
    handler = function()
      local report = api.kernel.reload()
      api.emit({ type = "reinit-presenter" })
      return report.summary
    end,
  })

  -- /model [provider/id | id]: switch the model for the next turns (no argument: a picker over
  -- every model the providers declare, `fen list models`).
  api.register("command", {
    name = "model",
    description = "Switch the model for the next turns: /model provider/id (or an id of the current provider); without one, pick from the declared models.",
    idle_only = true,
    complete = function(prefix)
      local out = {}
      for _, p in ipairs(api.list("provider")) do
        if not p.shadowed_by then
          for _, m in ipairs(p.models or {}) do
            local id = p.name .. "/" .. m.id
            if id:sub(1, #prefix) == prefix then out[#out + 1] = id end
          end
        end
      end
      return out
    end,
    handler = function(args)
      local want = args:match("^%s*(%S+)%s*$")
      local current = api.turn.model()
      if not want then
        local ids = {}
        for _, p in ipairs(api.list("provider")) do
          if not p.shadowed_by then
            for _, m in ipairs(p.models or {}) do ids[#ids + 1] = p.name .. "/" .. m.id end
          end
        end
        if #ids == 0 then return "no provider declares models; use /model provider/id" end
        local n = api.ui.select(string.format("model (now %s/%s)", current.provider, current.model), ids)
        if not n then return string.format("model: %s/%s (unchanged)", current.provider, current.model) end
        want = ids[n]
      end
      local provider, model = want:match("^([^/]+)/(.+)$")
      local known = {}
      for _, p in ipairs(api.list("provider")) do known[p.name] = true end
      if not provider or not known[provider] then provider, model = current.provider, want end
      api.turn.set_model(provider, model)
      return string.format("model: %s/%s", provider, model)
    end,
  })

  -- /thinking [off|minimal|low|medium|high]: how hard the model thinks from the next turn on.
  api.register("command", {
    name = "thinking",
    description = "Set the thinking level for the next turns: off, minimal, low, medium or high (no argument: show it).",
    idle_only = true,
    complete = function(prefix)
      local out = {}
      for _, l in ipairs({ "off", "minimal", "low", "medium", "high" }) do
        if l:sub(1, #prefix) == prefix then out[#out + 1] = l end
      end
      return out
    end,
    handler = function(args)
      local level = args:match("^%s*(%a+)%s*$")
      if not level then
        return "thinking: " .. (api.turn.model().thinking or "the model's default")
      end
      api.turn.set_thinking(level)
      api.emit({ type = "set-status-info", text = "thinking: " .. level })
      return "thinking: " .. level
    end,
  })
end
