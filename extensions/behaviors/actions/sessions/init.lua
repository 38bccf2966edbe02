-- sessions: /new (start a fresh session), /sessions (this directory's sessions, newest first,
-- each with its other branches) and /resume [id] (switch to one, or to a branch by its id;
-- the latest without an id).
local function age(modified)
  local s = os.time() - (modified or os.time())
  if s < 60 then return s .. "s ago" end
  if s < 3600 then return (s // 60) .. "m ago" end
  if s < 86400 then return (s // 3600) .. "h ago" end
  return (s // 86400) .. "d ago"
end

return function(api)
  api.register("command", {
    name = "new", description = "Start a new session (the current one stays on disk).", order = 10, idle_only = true,
    handler = function()
      local ok, err = api.session.new()
      if not ok then return "error: " .. err end
      return "new session started"
    end,
  })
  api.register("command", {
    name = "sessions", description = "List this directory's sessions, newest first.", order = 11,
    handler = function()
      local list = api.session.list()
      if #list == 0 then return "no sessions yet in this directory" end
      local current = api.session.info()
      local lines = {}
      for i, s in ipairs(list) do
        if i > 30 then
          lines[#lines + 1] = string.format("... and %d more (fen session list)", #list - 30)
          break
        end
        local mark = (current and current.path == s.path) and "*" or " "
        lines[#lines + 1] = string.format("%s %s  %8s  %4d msgs  %s", mark, (s.id or "?"):sub(1, 13), age(s.modified), s.message_count or 0, s.title or "(no messages)")
        -- Other branches of the file (a rewound conversation): /resume takes their id.
        for _, b in ipairs(s.branches or {}) do
          lines[#lines + 1] = string.format("    branch %s  %4d msgs  %s", b.point.leaf or "?", b.message_count or 0, b.title or "")
        end
      end
      return table.concat(lines, "\n")
    end,
  })
  api.register("command", {
    name = "resume", description = "Resume a session (or a branch /sessions lists) by id prefix (the latest without one).", order = 12, idle_only = true,
    handler = function(args)
      local ok, err = api.session.resume(args ~= "" and args or nil)
      if not ok then return "error: " .. err end
      local info = api.session.info()
      return string.format("resumed %s (%d messages)", info and info.id or "?", #(api.turn.messages() or {}))
    end,
  })
end
