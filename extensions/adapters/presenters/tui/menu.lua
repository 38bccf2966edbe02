-- tui/menu: what the input's popup menu offers. It opens by itself as soon as the word at the
-- cursor starts with `/` (slash commands, with their descriptions) or `@` (file paths), and
-- Tab opens it for command arguments (commands with a `complete` function). Ranking is
-- native and fuzzy (`native.search.fuzzy`); the files come from the native walker
-- (.gitignore respected, most recently changed first), listed on the blocking pool and kept
-- native-side (`native.search.file_list`), so a keystroke ranks 20,000 paths without
-- copying them into Lua. The list is fetched when the TUI starts and again, in the
-- background, when an `@` menu opens and the list is older than REFRESH_S seconds.
local native = require("fen.native")

local M = {}

M.LIMIT = 50
M.REFRESH_S = 10

--- Starts listing the files in the background (at most one walk at a time); `done()` runs on
--- the Lua thread when the new list is in.
---@param S table the TUI state
---@param term table fen.native.term
---@param done fun()
function M.refresh_files(S, term, done)
  -- A walk already running calls the latest `done` when it ends.
  S.files_done = done
  if S.files_loading then return end
  S.files_loading = true
  term.spawn(function()
    local ok, list = pcall(native.search.file_list, ".")
    S.files_loading = false
    if ok and list then
      S.file_list = list
      S.files_at = os.time()
    end
    local cb = S.files_done
    S.files_done = nil
    if cb then cb() end
  end)
end

--- The word the menu would complete automatically: `"command", query, from` for `/word` at
--- the start of the input, `"file", query, from` for `@word` at the start of a word.
---@param text string
---@param cursor integer bytes before the cursor
function M.trigger(text, cursor)
  local before = text:sub(1, cursor)
  local cmd = before:match("^/(%S*)$")
  if cmd then return "command", cmd, 1 end
  local at, word = before:match("()@([^%s@]*)$")
  if at and (at == 1 or before:sub(at - 1, at - 1):match("%s")) then return "file", word, at end
  return nil
end

local function rank_labels(query, items, key)
  local keys = {}
  for i, it in ipairs(items) do keys[i] = key(it) end
  local out = {}
  for _, i in ipairs(native.search.fuzzy(query, keys, M.LIMIT)) do out[#out + 1] = items[i] end
  return out
end

--- The menu's items for the input as it is: `{label, detail, replace = {from, to}, value,
--- kind}` ranked best first, or {}.
---@param ctx {api: table, S: table, term: table, contributions: fun(kind: string): table, on_files: fun(), wait: boolean?}
function M.items(ctx)
  local S, api = ctx.S, ctx.api
  local text, cur = S.ed.text, S.ed.cursor
  local kind, query, from = M.trigger(text, cur)
  if kind == "command" then
    local items = {}
    for _, c in ipairs(api.list("command")) do
      if not c.shadowed_by then
        items[#items + 1] = { label = "/" .. c.name, detail = c.description, replace = { from, cur },
          value = "/" .. c.name .. " ", kind = "command", name = c.name }
      end
    end
    -- Alphabetical first: equal scores (an empty query) keep this order.
    table.sort(items, function(a, b) return a.name < b.name end)
    return rank_labels(query, items, function(it) return it.name end)
  end
  if kind == "file" then
    if not S.file_list and ctx.wait then
      -- Tab before the first walk ended: wait for a walk (off the Lua thread) this once.
      local ok, list = pcall(native.search.file_list, ".")
      if ok and list then
        S.file_list = list
        S.files_at = os.time()
      end
    end
    if not S.file_list or os.time() - (S.files_at or 0) > M.REFRESH_S then
      M.refresh_files(S, ctx.term, ctx.on_files)
    end
    if not S.file_list then return {} end
    local items = {}
    for _, p in ipairs(S.file_list:rank(query, M.LIMIT)) do
      items[#items + 1] = { label = "@" .. p, replace = { from, cur }, value = "@" .. p .. " ", kind = "file" }
    end
    return items
  end
  -- Command arguments (on Tab only).
  local before = text:sub(1, cur)
  local name, arg = before:match("^/(%S+)%s+(.*)$")
  if name then
    for _, c in ipairs(ctx.contributions("command")) do
      if c.name == name and type(c.spec.complete) == "function" then
        local ok, list = pcall(c.spec.complete, arg)
        if ok and type(list) == "table" then
          local items = {}
          local start = cur - #arg + 1
          for _, v in ipairs(list) do
            items[#items + 1] = { label = tostring(v), replace = { start, cur }, value = tostring(v), kind = "arg" }
          end
          return rank_labels(arg, items, function(it) return it.label end)
        end
      end
    end
  end
  return {}
end

return M
