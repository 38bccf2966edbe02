-- tui/editor: the input line's editing operations on {text, cursor} (cursor is a byte offset,
-- kept on UTF-8 character boundaries). Pure functions over the table; no terminal calls.
local M = {}

local function is_cont(b) return b and b >= 0x80 and b < 0xC0 end

--- Byte offset of the character before `i` (0 at the start).
function M.prev(text, i)
  if i <= 0 then return 0 end
  i = i - 1
  while i > 0 and is_cont(text:byte(i + 1)) do i = i - 1 end
  return i
end

--- Byte offset after the character at `i`.
function M.next(text, i)
  if i >= #text then return #text end
  i = i + 1
  while i < #text and is_cont(text:byte(i + 1)) do i = i + 1 end
  return i
end

function M.insert(ed, s)
  ed.text = ed.text:sub(1, ed.cursor) .. s .. ed.text:sub(ed.cursor + 1)
  ed.cursor = ed.cursor + #s
end

function M.backspace(ed)
  if ed.cursor == 0 then return end
  local p = M.prev(ed.text, ed.cursor)
  ed.text = ed.text:sub(1, p) .. ed.text:sub(ed.cursor + 1)
  ed.cursor = p
end

function M.delete(ed)
  if ed.cursor >= #ed.text then return end
  local n = M.next(ed.text, ed.cursor)
  ed.text = ed.text:sub(1, ed.cursor) .. ed.text:sub(n + 1)
end

function M.left(ed) ed.cursor = M.prev(ed.text, ed.cursor) end
function M.right(ed) ed.cursor = M.next(ed.text, ed.cursor) end

local function line_start(ed)
  local i = ed.cursor
  while i > 0 and ed.text:sub(i, i) ~= "\n" do i = i - 1 end
  return i
end

local function line_end(ed)
  local j = ed.text:find("\n", ed.cursor + 1, true)
  return j and j - 1 or #ed.text
end

function M.home(ed) ed.cursor = line_start(ed) end
M["end"] = function(ed) ed.cursor = line_end(ed) end

local function is_word(c) return c ~= "" and c:match("[%w_\128-\255]") ~= nil end

function M.word_left(ed)
  local i = ed.cursor
  while i > 0 and not is_word(ed.text:sub(i, i)) do i = i - 1 end
  while i > 0 and is_word(ed.text:sub(i, i)) do i = i - 1 end
  ed.cursor = i
end

function M.word_right(ed)
  local i, n = ed.cursor, #ed.text
  while i < n and not is_word(ed.text:sub(i + 1, i + 1)) do i = i + 1 end
  while i < n and is_word(ed.text:sub(i + 1, i + 1)) do i = i + 1 end
  ed.cursor = i
end

--- Ctrl-W: delete the word before the cursor (and the spaces after it).
function M.kill_word(ed)
  local i = ed.cursor
  while i > 0 and ed.text:sub(i, i):match("%s") do i = i - 1 end
  while i > 0 and not ed.text:sub(i, i):match("%s") do i = i - 1 end
  ed.text = ed.text:sub(1, i) .. ed.text:sub(ed.cursor + 1)
  ed.cursor = i
end

--- Ctrl-U: delete to the start of the line.
function M.kill_start(ed)
  local s = line_start(ed)
  ed.text = ed.text:sub(1, s) .. ed.text:sub(ed.cursor + 1)
  ed.cursor = s
end

--- Ctrl-K: delete to the end of the line.
function M.kill_end(ed)
  local e = line_end(ed)
  ed.text = ed.text:sub(1, ed.cursor) .. ed.text:sub(e + 1)
end

function M.set(ed, text)
  ed.text = text
  ed.cursor = #text
end

--- The word around the cursor that starts with `@` (for path completion): start, word.
function M.mention(ed)
  local before = ed.text:sub(1, ed.cursor)
  local s, word = before:match("()@([^%s@]*)$")
  if s then return s, word end
  return nil
end

return M
