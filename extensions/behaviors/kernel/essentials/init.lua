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
end
