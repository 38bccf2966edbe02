-- tui/notify: tell the person when fen needs them and they are looking elsewhere. When a
-- turn ends, or an approval or a question waits, and the terminal is not focused (its focus
-- reports, or no input for 5 s when it sends none), fen writes a desktop notification
-- sequence (native picks OSC 9 / 777 / 99 or the bell for the terminal, wrapped for tmux and
-- screen) and runs settings' `notifications.command` with the event as JSON on stdin.
--
-- settings.json:
--   "notifications": {"on": ["turn_end", "approval", "question"],   (default: all three)
--                     "method": "auto" | "osc9" | "osc777" | "osc99" | "bell" | "off",
--                     "command": ["notify-send", "fen"] | "shell string"}
local native = require("fen.native")

local M = {}

M.KINDS = { turn_end = true, approval = true, question = true }
M.METHODS = { auto = true, osc9 = true, osc777 = true, osc99 = true, bell = true, off = true }

--- The `notifications` settings checked: `{on = set, method, command}`, and the problems
--- found (each says what was wrong and what is accepted; the rest keeps its default).
---@param raw any settings.json's `notifications` value
---@return table config, string[] problems
function M.config(raw)
  local cfg = { on = { turn_end = true, approval = true, question = true }, method = "auto", command = nil }
  local problems = {}
  if raw == nil then return cfg, problems end
  if type(raw) ~= "table" then
    return cfg, { "settings.json: notifications must be an object ({on, method, command})" }
  end
  if raw.on ~= nil then
    if type(raw.on) ~= "table" then
      problems[#problems + 1] = "settings.json: notifications.on must be a list of turn_end, approval, question"
    else
      cfg.on = {}
      for _, k in ipairs(raw.on) do
        if M.KINDS[k] then
          cfg.on[k] = true
        else
          problems[#problems + 1] = string.format("settings.json: notifications.on: unknown event %q (turn_end, approval, question)", tostring(k))
        end
      end
    end
  end
  if raw.method ~= nil then
    if M.METHODS[raw.method] then
      cfg.method = raw.method
    else
      problems[#problems + 1] = string.format("settings.json: notifications.method: unknown %q (auto, osc9, osc777, osc99, bell, off)", tostring(raw.method))
    end
  end
  if raw.command ~= nil then
    local c = raw.command
    local ok = type(c) == "string" and c ~= ""
    if type(c) == "table" and #c > 0 then
      ok = true
      for _, a in ipairs(c) do if type(a) ~= "string" then ok = false end end
    end
    if ok then
      cfg.command = c
    else
      problems[#problems + 1] = "settings.json: notifications.command must be a list of strings (program and arguments) or a shell command string"
    end
  end
  return cfg, problems
end

--- Notifies about one event if it is on and the terminal is not focused. Returns the method
--- used, or nil when nothing was sent.
---@param cfg table from M.config
---@param term table fen.native.term
---@param spawn fun(fn: function) runs a task beside the UI (the command must not block it)
---@param on_error fun(msg: string)
---@param ev {type: string, title: string, body: string}
function M.send(cfg, term, spawn, on_error, ev)
  if not cfg.on[ev.type] then return nil end
  if term.focused() then return nil end
  local method
  if cfg.method ~= "off" then
    local ok, used = pcall(term.notify, cfg.method, ev.title or "fen", ev.body or "")
    if ok then method = used else on_error(tostring(used)) end
  end
  if cfg.command then
    local payload = native.json.encode({
      type = ev.type, title = ev.title, body = ev.body, cwd = native.fs.cwd(),
    })
    spawn(function()
      local ok, err = term.notify_command(cfg.command, payload)
      if not ok then on_error(err) end
    end)
  end
  return method
end

return M
