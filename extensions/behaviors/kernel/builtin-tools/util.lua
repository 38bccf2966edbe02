-- Shared helpers of the built-in tools: result shapes and text formatting for the model.
local native = require("fen.native")
local M = {}

--- A successful result: text for the model, details for presenters (never sent to providers).
function M.ok(text, details)
  return { content = { { type = "text", text = text } }, is_error = false, details = details }
end

--- A failed result the model can act on.
function M.fail(text, details)
  return { content = { { type = "text", text = text } }, is_error = true, details = details }
end

--- Numbers lines like `cat -n` (width 6, tab), starting at `first`; a trailing CR is dropped
--- from display (the caller says the file uses CRLF). Native: a 2000-line window in Lua
--- (gmatch, format, gsub per line) costs more than the rest of the read.
function M.number_lines(text, first)
  return native.truncate.number_lines(text, first)
end

--- "1 line" / "3 lines".
function M.plural(n, word)
  return string.format("%d %s%s", n, word, n == 1 and "" or "s")
end

return M
