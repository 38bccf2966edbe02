-- fsroute: where the file tools (read, write, edit) take and put text. The disk by default
-- (native.fs, native.edit); a presenter whose person edits in an editor sets `M.editor` (`fen
-- acp` when the client offers fs/read_text_file and fs/write_text_file), and text files are then
-- read from and written to the editor's buffers, unsaved changes included. One copy per Lua
-- state (`require` caches it).
local native = require("fen.native")
local M = {}

---@class fen.EditorFs
---@field read fun(path: string): string?, string? async; the buffer's (or file's) whole text
---@field write fun(path: string, text: string): boolean?, string? async

---@type fen.EditorFs?
M.editor = nil

--- Runs a bash command in the editor's terminal: `{command, cwd?, timeout_ms, call_id?}` ->
--- `{output, truncated, exit_code?, signal?, timed_out?, terminal_id}`; nil, nil when the
--- command is not for the editor (fen runs it); nil, message on failure. Async.
---@type (fun(opts: table): table?, string?)?
M.terminal = nil

--- The absolute form of a tool's path argument (`~` expanded, relative to the working directory).
---@param path string
---@return string
function M.absolute(path)
  local p = native.fs.expand(path)
  if p:sub(1, 1) ~= "/" then p = native.fs.cwd() .. "/" .. p end
  return p
end

--- Whether `path` goes through the editor: a text file (not a directory, not an image).
---@param path string
---@return boolean
function M.routed(path)
  if not M.editor then return false end
  local lower = path:lower()
  for _, ext in ipairs({ ".png", ".jpg", ".jpeg", ".gif", ".webp" }) do
    if lower:sub(-#ext) == ext then return false end
  end
  return not native.fs.is_dir(M.absolute(path))
end

return M
