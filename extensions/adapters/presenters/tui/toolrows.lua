-- tui/toolrows: tool rows that show more than a summary. `edit` and `write` results carry
-- their unified diff (details.files[].diff, details.diff) as the block's body, drawn natively
-- (hunks, line numbers, +/- and changed words; side by side over 160 columns), folded like
-- other tool rows until Ctrl-O. `bash` rows show the command highlighted (native, tree-sitter)
-- and the exit status in the ok or error style. Pure functions over the spec tables; the only
-- native call is `term.shell`.
local M = {}

--- The semantic style names a diff is drawn with (see fen.lib.theme).
M.DIFF_STYLES = { "diff.add", "diff.del", "diff.add.word", "diff.del.word", "diff.hunk", "diff.lineno", "diff.file" }

---@param theme table fen.lib.theme
---@return table<string, table> styles by semantic name
function M.diff_styles(theme)
  local out = {}
  for _, n in ipairs(M.DIFF_STYLES) do
    if type(theme[n]) == "table" then out[n] = theme[n] end
  end
  return out
end

--- The unified diff of a successful edit or write result, or nil.
---@param r table a tool result
---@return string|nil
function M.diff_text(r)
  if r.is_error then return nil end
  local d = r.details or {}
  if r.tool_name == "edit" and type(d.files) == "table" then
    local parts = {}
    for _, f in ipairs(d.files) do
      if type(f.diff) == "string" and f.diff ~= "" then parts[#parts + 1] = f.diff end
    end
    if #parts > 0 then return table.concat(parts) end
  elseif r.tool_name == "write" and type(d.diff) == "string" and d.diff ~= "" then
    return d.diff
  end
  return nil
end

--- Added and removed line counts of a unified diff (file headers excluded).
function M.diff_counts(text)
  local add, del = 0, 0
  for line in text:gmatch("[^\n]+") do
    local c = line:sub(1, 1)
    if c == "+" and line:sub(1, 4) ~= "+++ " then add = add + 1
    elseif c == "-" and line:sub(1, 4) ~= "--- " then del = del + 1 end
  end
  return add, del
end

local function human(n)
  if n < 1024 then return string.format("%dB", n) end
  if n < 1024 * 1024 then return string.format("%.1fKB", n / 1024) end
  return string.format("%.1fMB", n / 1024 / 1024)
end

local function result_text(r)
  local parts = {}
  for _, b in ipairs(r.content or {}) do parts[#parts + 1] = b.text or "" end
  return table.concat(parts)
end

--- How a bash run ended: text and whether it failed.
local function bash_status(r)
  local d = r.details or {}
  if d.timed_out then return "timed out", true end
  if d.cancelled then return "cancelled", true end
  if d.signal then return "signal " .. tostring(d.signal), true end
  if d.exit_code then return "exit " .. tostring(d.exit_code), d.exit_code ~= 0 end
  return nil, r.is_error and true or false
end

--- `tool> VERB[ bash] $ <command, highlighted>` spans, then `tail` spans.
local function bash_head(term, theme, verb, verb_style, prompt_style, command, tail)
  local spans = {
    { text = "tool> ", style = theme.dim },
    { text = verb, style = verb_style },
  }
  if verb ~= "run" then spans[#spans + 1] = { text = " bash" } end
  spans[#spans + 1] = { text = " $ ", style = prompt_style }
  for _, s in ipairs(term.shell(command)) do spans[#spans + 1] = s end
  for _, s in ipairs(tail or {}) do spans[#spans + 1] = s end
  return spans
end

--- The head of a running call's row, or nil for the default.
---@param call table the tool call
---@param term table fen.native.term
---@param theme table fen.lib.theme
function M.call_head(call, term, theme)
  local a = call.arguments or {}
  if call.name == "bash" and type(a.command) == "string" then
    local tail = a.timeout and { { text = string.format(" (timeout %ds)", a.timeout), style = theme.dim } } or nil
    return bash_head(term, theme, "run", theme.tool, theme.dim, a.command, tail)
  end
  return nil
end

--- Adds what this module knows to a result block's spec: a diff body for edit/write, the
--- highlighted command and exit status for bash.
---@param spec table the block spec (kind, head, text, folded, ...) changed in place
---@param r table the tool result
---@param call table|nil its call
---@param term table fen.native.term
---@param theme table fen.lib.theme
function M.decorate(spec, r, call, term, theme)
  local diff = M.diff_text(r)
  if diff then
    local add, del = M.diff_counts(diff)
    spec.diff = { text = diff, styles = M.diff_styles(theme) }
    spec.text = nil
    local head = spec.head
    head[#head + 1] = { text = "  +" .. add, style = theme["diff.add"] or theme.ok }
    head[#head + 1] = { text = " -" .. del, style = theme["diff.del"] or theme.err }
    return
  end
  if r.tool_name == "bash" then
    local d = r.details or {}
    local command = d.command or (call and call.arguments and call.arguments.command)
    if type(command) ~= "string" then return end
    local text = result_text(r)
    local lines = select(2, text:gsub("\n", "\n")) + (text == "" and 0 or 1)
    local status, failed = bash_status(r)
    local mark = failed and theme.err or theme.ok
    local tail = { { text = string.format(" (%d line%s, %s)", lines, lines == 1 and "" or "s", human(#text)), style = theme.dim } }
    if status then tail[#tail + 1] = { text = " " .. status, style = mark } end
    spec.head = bash_head(term, theme, failed and "err" or "ok", mark, mark, command, tail)
  end
end

return M
