-- parent_ask: how a subagent child (`fen --mode json --on-ask parent`) asks its parent fen.
-- The question goes out as one line `{"type": "subagent-ask", "id": N, "request": {...}}` on
-- stdout; the parent writes `{"type": "subagent-answer", "id": N, "answer": ...}` on stdin.
-- Used by the permission policy (the child's own asks) and by the subagents companion (asks of
-- a grandchild, forwarded up). One copy per Lua state (`require` caches it): one reader of
-- stdin at a time, which keeps the answers meant for the other askers.
local native = require("fen.native")
local M = {}

local next_id = 0
local answers = {}      -- id -> answer (false: stdin closed)
local reading = false

--- Asks the parent; returns its answer (a string such as "y", "n: reason"), or nil when the
--- parent is gone. Async: waits without blocking the Lua thread.
---@param request table
---@return string?
function M.ask(request)
  next_id = next_id + 1
  local id = next_id
  io.stdout:write(native.json.encode({ type = "subagent-ask", id = id, request = request }), "\n")
  io.stdout:flush()
  while answers[id] == nil do
    if not reading then
      reading = true
      local ok, line = pcall(native.term.read_line)
      reading = false
      if not ok or not line then
        answers[id] = false
      else
        local msg = native.json.decode(line)
        if type(msg) == "table" and msg.type == "subagent-answer" and type(msg.id) == "number" then
          answers[msg.id] = type(msg.answer) == "string" and msg.answer or false
        end
      end
    else
      native.sleep(20)
    end
  end
  local a = answers[id]
  answers[id] = nil
  return a or nil
end

return M
