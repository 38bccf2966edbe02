-- tui/completion: the `/` and `@` menu over the input: slash commands (and their arguments),
-- @paths (the items come from tui/menu.lua). Sets `impl.update_menu` (after every input change)
-- and `impl.files_arrived`.
local native = require("fen.native")
local term = native.term

---@param tui table what tui/init.lua shares with its parts
return function(tui)
  local api, S, impl, menu = tui.api, tui.S, tui.impl, tui.menu
  local open, layout, contributions = tui.open, tui.layout, tui.contributions

  --- The file list arrived: an @ menu waiting for it shows it at once.
  function impl.files_arrived()
    if not open() then return end
    local kind = menu.trigger(S.ed.text, S.ed.cursor)
    if kind == "file" and not S.menu_dismissed then
      impl.update_menu(true)
      layout()
    end
  end

  --- `wait`: Tab asked, so a file list not there yet is waited for.
  local function completions(wait)
    return menu.items({
      api = api, S = S, term = term, contributions = contributions,
      on_files = function() S.impl.files_arrived() end, wait = wait,
    })
  end

  --- Opens, narrows or closes the menu after the input changed: it opens by itself on a
  --- `/command` or `@path` word (unless Esc closed it for this word); a menu opened with
  --- Tab (command arguments) narrows while it has items.
  function impl.update_menu(force)
    local kind, _, from = menu.trigger(S.ed.text, S.ed.cursor)
    if S.menu_dismissed and S.menu_dismissed ~= (kind and (kind .. from) or nil) then S.menu_dismissed = nil end
    if not kind and not (S.menu and S.menu.kind == "arg") then
      S.menu = nil
      return
    end
    if kind and S.menu_dismissed and not force then return end
    local items = completions()
    if #items > 0 then
      local sel = 1
      S.menu = { items = items, selected = sel, kind = kind or "arg" }
    else
      S.menu = nil
    end
  end

  local function apply_completion(it)
    local a, b = it.replace[1], it.replace[2]
    S.ed.text = S.ed.text:sub(1, a - 1) .. it.value .. S.ed.text:sub(b + 1)
    S.ed.cursor = a - 1 + #it.value
    S.menu = nil
  end

  local function complete()
    if S.menu then
      apply_completion(S.menu.items[S.menu.selected])
      return
    end
    local items = completions(true)
    if #items == 1 then
      apply_completion(items[1])
    elseif #items > 1 then
      S.menu = { items = items, selected = 1, kind = items[1].kind }
    end
  end

  return { complete = complete, apply = apply_completion }
end
