-- fen.lib.models: ~/.config/fen/models.json, read afresh each time (so /reload sees edits). Built-in provider extensions ask
-- `defines(name)` so that a user's definition of the same name replaces theirs.
local native = require("fen.native")
local M = {}

function M.path()
  return native.paths.config_dir .. "/models.json"
end

--- The parsed file (`{}` when absent); raises with the path when it is not valid JSON.
function M.load()
  local text = native.fs.read_text(M.path(), 16 << 20)
  if not text then return {} end
  local config, err = native.json.decode(text)
  if not config then error(M.path() .. ": " .. err, 0) end
  return config
end

--- True when models.json declares a provider of this name.
function M.defines(name)
  local ok, config = pcall(M.load)
  return ok and type(config.providers) == "table" and config.providers[name] ~= nil
end

return M
