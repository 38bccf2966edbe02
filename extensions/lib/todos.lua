-- todos: the session's todo list, shared by the todo companion (which owns it), the compaction
-- companion (which keeps an open list in its summary) and the json presenter (whose final
-- result carries it). One copy per Lua state: `require` caches this module, so the list also
-- survives `/reload`.
local native = require("fen.native")
local M = {}

M.MAX_ITEMS = 50
M.MAX_TEXT_BYTES = 240
local STATUSES = { pending = "[ ]", in_progress = "[~]", completed = "[x]" }

---@class TodoItem
---@field text string
---@field status "pending"|"in_progress"|"completed"

---@class TodoSnapshot
---@field items TodoItem[]
---@field version integer

local current = { items = {}, version = 0 }

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

--- A copy that encodes as a JSON array even when empty (a decoded `[]` carries the marker).
local function copy(items)
  local out = native.json.decode("[]")
  for i, it in ipairs(items or {}) do out[i] = { text = it.text, status = it.status } end
  return out
end

--- Checks a proposed list. Returns the normalised items (texts trimmed), or nil and why not.
---@return TodoItem[]|nil, string|nil
function M.validate(items)
  if type(items) ~= "table" then return nil, "items must be an array" end
  local n = 0
  for k in pairs(items) do
    if math.type(k) ~= "integer" or k < 1 then return nil, "items must be an array" end
    n = n + 1
  end
  if n ~= #items then return nil, "items must be an array" end
  if n > M.MAX_ITEMS then
    return nil, string.format("items must contain at most %d entries", M.MAX_ITEMS)
  end
  local out, active = {}, 0
  for i, it in ipairs(items) do
    if type(it) ~= "table" then return nil, string.format("items[%d] must be an object", i) end
    if type(it.text) ~= "string" or trim(it.text) == "" then
      return nil, string.format("items[%d].text must be a non-empty string", i)
    end
    local text = trim(it.text)
    if #text > M.MAX_TEXT_BYTES then
      return nil, string.format("items[%d].text must be at most %d bytes after trimming (it has %d)", i, M.MAX_TEXT_BYTES, #text)
    end
    if type(it.status) ~= "string" or not STATUSES[it.status] then
      return nil, string.format("items[%d].status must be pending, in_progress, or completed", i)
    end
    if it.status == "in_progress" then active = active + 1 end
    out[i] = { text = text, status = it.status }
  end
  if active > 1 then return nil, "only one todo item may be in_progress" end
  return out
end

--- The current snapshot (a copy).
---@return TodoSnapshot
function M.get() return { items = copy(current.items), version = current.version } end

--- Replaces the list; the version goes up by one unless one is given (replay).
function M.set(items, version)
  current = { items = copy(items), version = version or (current.version + 1) }
  return M.get()
end

--- Adopts a stored snapshot (tool-result details or extension state) when it is valid.
function M.adopt(snapshot)
  if type(snapshot) ~= "table" or type(snapshot.items) ~= "table" then return false end
  local items = M.validate(snapshot.items)
  if not items then return false end
  M.set(items, math.tointeger(snapshot.version) or 0)
  return true
end

--- The newest `todo_write` snapshot among canonical messages, or nil.
function M.latest_in(messages)
  local latest
  for _, m in ipairs(messages or {}) do
    if m.role == "tool-result" and m.tool_name == "todo_write" and not m.is_error
      and type(m.details) == "table" and type(m.details.items) == "table" then
      latest = m.details
    end
  end
  return latest
end

--- `{total, pending, in_progress, completed}`.
function M.counts(items)
  local c = { total = 0, pending = 0, in_progress = 0, completed = 0 }
  for _, it in ipairs(items or current.items) do
    c.total = c.total + 1
    c[it.status] = (c[it.status] or 0) + 1
  end
  return c
end

--- Whether any item is pending or in progress.
function M.open(items)
  local c = M.counts(items)
  return c.pending + c.in_progress > 0
end

--- The list as `[ ]`/`[~]`/`[x]` lines.
function M.lines(items)
  local out = {}
  for _, it in ipairs(items or current.items) do out[#out + 1] = STATUSES[it.status] .. " " .. it.text end
  return table.concat(out, "\n")
end

--- `todo:C/T`, or nil when the list is empty.
function M.status_text()
  local c = M.counts()
  if c.total == 0 then return nil end
  return string.format("todo:%d/%d", c.completed, c.total)
end

return M
