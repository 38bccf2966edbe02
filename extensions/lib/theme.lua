-- fen.lib.theme: the TUI's styles by role. One table per Lua state (require caches it), so a
-- user extension restyles rows by changing fields, e.g.
--   require("fen.lib.theme").tool = { fg = "magenta" }
-- and /reload applies it. A style is a table of `fg`, `bg` (default, black, red, green,
-- yellow, blue, magenta, cyan, white, bright-black ... bright-white, a 256-colour index 0-255,
-- or "#rrggbb"), `bold`, `dim`, `italic`, `underline`, `reverse`, `strike`. The defaults use
-- the 16 base colours so they read on light and dark terminals; NO_COLOR drops colours
-- (attributes stay).
--
-- Semantic names (what settings.json `tui.theme` and `apply` take) and the role each sets:
--   user, user.prefix, assistant, thinking, tool, tool.ok, tool.err, queued, dim, info, error,
--   status, hint, diff.add, diff.del, diff.add.word, diff.del.word, diff.hunk, diff.lineno,
--   diff.file
-- (`tool.ok` is the role `ok`, `tool.err` is `err`, `user.prefix` is `user_prefix`; any other
-- name is kept as given, for extensions that look it up.) Names starting `markdown.` and
-- `code.` style what native draws itself (headings, inline code, links, highlighted code);
-- `native_styles()` collects them for `native.term.palette`, which knows their defaults and
-- refuses unknown ones.

---@alias ThemeStyle {fg?: string|integer, bg?: string|integer, bold?: boolean, dim?: boolean, italic?: boolean, underline?: boolean, reverse?: boolean, strike?: boolean}

local defaults = {
  user_prefix = { fg = "green", bold = true },
  user = { bold = true },
  assistant = {},
  queued = { fg = "yellow" },
  tool = { fg = "cyan" },
  ok = { fg = "green" },
  err = { fg = "red" },
  dim = { dim = true },
  thinking = { dim = true, italic = true },
  info = { fg = "yellow" },
  error = { fg = "red" },
  status = { fg = "cyan" },
  hint = { fg = "yellow" },
  -- Diffs of edit/write results (tui/toolrows.lua hands these to the native diff view).
  ["diff.add"] = { fg = "green" },
  ["diff.del"] = { fg = "red" },
  ["diff.add.word"] = { fg = "green", reverse = true },
  ["diff.del.word"] = { fg = "red", reverse = true },
  ["diff.hunk"] = { fg = "cyan" },
  ["diff.lineno"] = { dim = true },
  ["diff.file"] = { bold = true },
}

-- Changes from the defaults for a known background.
local palettes = {
  dark = {
    user_prefix = { fg = "bright-green", bold = true },
    tool = { fg = "bright-cyan" },
    status = { fg = "bright-cyan" },
    info = { fg = "bright-yellow" },
    hint = { fg = "bright-yellow" },
    queued = { fg = "bright-yellow" },
  },
  -- Yellow and the bright colours wash out on a light background.
  light = {
    tool = { fg = "blue" },
    status = { fg = "blue" },
    info = { fg = "magenta" },
    hint = { fg = "magenta" },
    queued = { fg = "magenta" },
  },
}

local aliases = { ["tool.ok"] = "ok", ["tool.err"] = "err", ["user.prefix"] = "user_prefix" }

local M = {}
for k, v in pairs(defaults) do M[k] = v end

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

--- Resets the roles to the defaults for `background` ("dark", "light" or nil: the 16-colour
--- default), then applies `user` (settings.json `tui.theme`): a table from semantic names to a
--- style or a colour (the foreground), optionally with `base = "dark" | "light"` to choose
--- the palette; or just "dark" / "light". Returns the palette used.
---@param user table|string|nil
---@param background string|nil
---@return string|nil
local function apply(user, background)
  if type(user) == "string" then user = { base = user } end
  user = type(user) == "table" and user or {}
  local base = (user.base == "dark" or user.base == "light") and user.base or background
  for k in pairs(M) do
    if type(M[k]) == "table" then M[k] = nil end
  end
  for k, v in pairs(defaults) do M[k] = copy(v) end
  for k, v in pairs(palettes[base] or {}) do M[k] = copy(v) end
  for name, v in pairs(user) do
    if name ~= "base" then
      local key = aliases[name] or name
      if type(v) == "string" or math.type(v) == "integer" then
        M[key] = { fg = v }
      elseif type(v) == "table" then
        M[key] = copy(v)
      end
    end
  end
  return base
end

--- The `markdown.*` and `code.*` styles the theme sets (native draws these; see
--- native.term.palette for the names and defaults).
---@return table<string, ThemeStyle>
local function native_styles()
  local out = {}
  for k, v in pairs(M) do
    if type(k) == "string" and (k:find("^markdown%.") or k:find("^code%.")) and type(v) == "table" then
      out[k] = v
    end
  end
  return out
end

return setmetatable(M, { __index = { apply = apply, native_styles = native_styles } })
