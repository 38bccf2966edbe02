-- tui/overlays: the select and prompt overlays (api.ui.select, api.ui.prompt, approval asks),
-- one at a time (later ones queue), answered through a callback or awaited by one coroutine.
local native = require("fen.native")
local term = native.term

---@param tui table what tui/init.lua shares with its parts
return function(tui)
  local S, impl, editor = tui.S, tui.impl, tui.editor
  local open, layout = tui.open, tui.layout
  local multiselect = tui.multiselect

  function impl.open_overlay(o, done)
    o.selected = o.selected or 1
    o.done = done
    if S.overlay then
      S.overlay_queue = S.overlay_queue or {}
      table.insert(S.overlay_queue, o)
      return
    end
    S.overlay = o
    layout()
  end

  local function close_overlay(answer)
    local o = S.overlay
    S.overlay = S.overlay_queue and table.remove(S.overlay_queue, 1) or nil
    layout()
    if o and o.done then o.done(answer) end
  end

  --- Shows an overlay and waits (this coroutine only) for the person's answer.
  local function ask_overlay(o)
    if not open() then return nil, "no user" end
    local id = term.waiter()
    local answer
    impl.open_overlay(o, function(a)
      answer = a
      term.done(id)
    end)
    term.wait(id)
    return answer
  end

  function impl.dismiss() close_overlay(nil) end

  local function overlay_key(key)
    local o = S.overlay
    if key == "esc" or key == "ctrl-c" then
      close_overlay(nil)
    elseif key == "up" and o.items then
      o.selected = math.max(1, o.selected - 1)
    elseif key == "down" and o.items then
      o.selected = math.min(#o.items, o.selected + 1)
    elseif o.multi then
      local chosen = multiselect.key(o, key)
      if chosen then
        close_overlay(chosen)
        return
      end
    elseif key == "enter" then
      if o.input then close_overlay(o.input.text) else close_overlay(o.items and o.items[o.selected]) end
      return
    elseif o.input then
      if key == "backspace" then editor.backspace(o.input)
      elseif key == "left" then editor.left(o.input)
      elseif key == "right" then editor.right(o.input)
      elseif utf8.len(key) == 1 then editor.insert(o.input, key) end
    elseif o.items and key:match("^%d$") then
      local i = tonumber(key)
      if o.items[i] then
        o.selected = i
        close_overlay(o.items[i])
        return
      end
    elseif o.items and key:match("^%a$") then
      -- An item labelled "y  yes, once" is chosen by its letter (approval prompts).
      for i, label in ipairs(o.items) do
        if label:sub(1, 2) == key .. " " then
          o.selected = i
          close_overlay(label)
          return
        end
      end
    end
    layout()
  end

  return { ask = ask_overlay, key = overlay_key }
end
