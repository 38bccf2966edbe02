-- tui/multiselect: the overlay of `api.ui.select_multi` (the question tool's multi_select
-- questions). Space toggles the highlighted option, an option's digit toggles that option,
-- Enter confirms the checked set (the highlighted option alone when none is checked), Esc
-- dismisses. The overlay itself (drawing, ↑↓, Esc) is the presenter's; this is the rest.
local M = {}

M.HINT = "↑↓ move · space or digit toggles · enter confirms · esc dismiss"

--- The rows as shown: a check box before each item.
---@param o table the overlay: `items`, `checked` (index -> true)
---@return string[]
function M.items(o)
  local out = {}
  for i, it in ipairs(o.items) do out[i] = (o.checked[i] and "[x] " or "[ ] ") .. tostring(it) end
  return out
end

--- One key on a multi-select overlay (not ↑↓ or Esc): the chosen indices, in order, when
--- Enter confirms; nil while the overlay stays open.
---@param o table the overlay: `items`, `checked`, `selected`
---@param key string
---@return integer[]|nil
function M.key(o, key)
  local digit = key:match("^%d$") and tonumber(key)
  if key == " " then
    o.checked[o.selected] = (not o.checked[o.selected]) or nil
  elseif digit and o.items[digit] then
    o.selected = digit
    o.checked[digit] = (not o.checked[digit]) or nil
  elseif key == "enter" then
    local out = {}
    for i = 1, #o.items do
      if o.checked[i] then out[#out + 1] = i end
    end
    if #out == 0 then out[1] = o.selected end
    return out
  end
  return nil
end

return M
