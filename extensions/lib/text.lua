-- fen.lib.text: small string helpers shared by first-party extensions.
local M = {}

--- The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a UTF-8
--- character (a cut never leaves half a character, which would not encode as JSON).
---@param s string
---@param max_bytes integer
---@return string
function M.prefix(s, max_bytes)
  if #s <= max_bytes then return s end
  local i = max_bytes
  -- Back off while the byte after the cut is a continuation byte (10xxxxxx).
  while i > 0 do
    local b = s:byte(i + 1)
    if not b or b < 0x80 or b >= 0xC0 then break end
    i = i - 1
  end
  return s:sub(1, i)
end

return M
