-- export: `/export [FILE]` writes the conversation as one file (native: fen.native.session.export,
-- the same renderer as `fen session export`): self-contained HTML by default, Markdown for
-- `.md`, JSON for `.json`.
local native = require("fen.native")

local function format_of(path)
  local ext = (path:match("%.([%w]+)$") or ""):lower()
  if ext == "md" or ext == "markdown" then return "markdown" end
  if ext == "json" then return "json" end
  return "html"
end

local function title_of(messages)
  for _, m in ipairs(messages) do
    if m.role == "user" then
      local text = type(m.content) == "string" and m.content or ((m.content or {})[1] or {}).text or ""
      local line = (text:match("^%s*([^\n]*)") or ""):sub(1, 80)
      if line ~= "" then return line end
    end
  end
  return "fen session"
end

return function(api)
  api.register("command", {
    name = "export",
    description = "Write this conversation to one file: /export [FILE] (self-contained HTML; .md for Markdown, .json for JSON).",
    handler = function(args)
      local messages = api.turn.messages() or {}
      if #messages == 0 then return "nothing to export yet" end
      local ok, info = pcall(api.session.info)
      local id = ok and type(info) == "table" and info.id or nil
      local path = (args or ""):match("^%s*(.-)%s*$")
      if path == "" then
        path = string.format("fen-session-%s.html", id and id:sub(1, 13) or os.date("%Y%m%d-%H%M%S"))
      end
      local written, err = native.session.export(messages, {
        format = format_of(path), path = path, title = title_of(messages), id = id,
      })
      if not written then return "export failed: " .. tostring(err) end
      return "wrote " .. written
    end,
  })
end
