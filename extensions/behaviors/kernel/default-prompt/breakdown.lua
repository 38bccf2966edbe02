-- default-prompt/breakdown: `/context`'s "what fills the context" table. Sizes are estimates
-- (4 bytes a token) of what the next request sends, by part: the system prompt (less the
-- parts named apart), tools' schemas, MCP tools' schemas, AGENTS.md and other context
-- files, skills, and the messages; then the largest items by name, and the last request's
-- real count from the provider when there is one.
local native = require("fen.native")
local M = {}

local function tokens(bytes) return math.floor((bytes + 3) / 4) end

local function fmt(n)
  if n < 1000 then return tostring(n) end
  if n < 1000000 then return string.format("%.1fk", n / 1000) end
  return string.format("%.2fM", n / 1000000)
end

local function encode(v)
  local ok, s = pcall(native.json.encode, v)
  return ok and s or ""
end

--- A short name for a message, for the "largest items" list.
local function message_name(m, i, calls)
  if m.role == "user" then
    local text = type(m.content) == "string" and m.content or ((m.content or {})[1] or {}).text or ""
    return string.format("message %d: your message %q", i, (text:gsub("%s+", " ")):sub(1, 40))
  elseif m.role == "tool-result" then
    local call = calls[m.tool_call_id or ""]
    local arg = ""
    if call and type(call.arguments) == "table" then
      local a = call.arguments
      arg = a.path or a.file_path or a.command or a.pattern or a.url or ""
      arg = " " .. (tostring(arg):gsub("%s+", " ")):sub(1, 40)
    end
    return string.format("message %d: %s result%s", i, tostring(m.tool_name or "tool"), arg)
  end
  return string.format("message %d: answer", i)
end

--- The breakdown's lines.
---@param api table the extension's api
---@return string[]
function M.lines(api)
  local parts = { system = 0, tools = 0, mcp = 0, files = 0, skills = 0, messages = 0 }
  local items = {}
  for _, fr in ipairs(api.kernel.prompt_fragments()) do
    local key = (fr.id == "project" and "files") or (fr.owner == "skills" and "skills")
      or (fr.owner == "mcp" and "mcp") or "system"
    parts[key] = parts[key] + fr.bytes
    items[#items + 1] = { name = string.format("system prompt: %s (%s)", fr.title or fr.id, fr.owner), bytes = fr.bytes }
  end
  for _, c in ipairs(api.kernel.contributions("tool")) do
    local spec = c.spec or {}
    local bytes = #encode({ name = spec.name or c.name, description = spec.description, parameters = spec.parameters })
    local name = tostring(spec.name or c.name)
    local key = (name:sub(1, 5) == "mcp__" or c.owner == "mcp") and "mcp" or "tools"
    parts[key] = parts[key] + bytes
    items[#items + 1] = { name = "tool schema: " .. name, bytes = bytes }
  end
  local ok, messages = pcall(api.turn.messages)
  local calls = {}
  local last_usage
  for i, m in ipairs(ok and messages or {}) do
    if m.role == "assistant" then
      for _, b in ipairs(m.content or {}) do
        if b.type == "tool-call" then calls[b.id or ""] = b end
      end
      if type(m.usage) == "table" then last_usage = m.usage end
    end
    local bytes = #encode(m.content)
    parts.messages = parts.messages + bytes
    items[#items + 1] = { name = message_name(m, i, calls), bytes = bytes }
  end
  local total = 0
  for _, v in pairs(parts) do total = total + v end
  local okw, window = pcall(api.turn.context_window)
  window = okw and tonumber(window) or nil
  local out = { string.format("Context by part (estimated, 4 bytes a token; window %s):", window and fmt(window) or "unknown") }
  local order = {
    { "system", "system prompt" }, { "tools", "tools' schemas" }, { "mcp", "MCP tools" },
    { "files", "AGENTS.md and context files" }, { "skills", "skills" }, { "messages", "messages" },
  }
  for _, o in ipairs(order) do
    local t = tokens(parts[o[1]])
    local pct = window and window > 0 and string.format("  %4.1f%%", t * 100 / window) or ""
    out[#out + 1] = string.format("  %-30s %8s tokens%s", o[2], fmt(t), pct)
  end
  out[#out + 1] = string.format("  %-30s %8s tokens%s", "total", fmt(tokens(total)),
    window and window > 0 and string.format("  %4.1f%%", tokens(total) * 100 / window) or "")
  if last_usage then
    local used = (last_usage.input or 0) + (last_usage.cache_read or 0) + (last_usage.cache_write or 0) + (last_usage.output or 0)
    if used > 0 then out[#out + 1] = string.format("  last request, as the provider counted it: %s tokens", fmt(used)) end
  end
  table.sort(items, function(a, b) return a.bytes > b.bytes end)
  if #items > 0 then
    out[#out + 1] = "Largest items:"
    for i = 1, math.min(5, #items) do
      out[#out + 1] = string.format("  %8s tokens  %s", fmt(tokens(items[i].bytes)), items[i].name)
    end
  end
  return out
end

return M
