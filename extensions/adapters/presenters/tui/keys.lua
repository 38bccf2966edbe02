-- tui/keys: the keymap and the other input events (paste, wheel, resize, the terminal's
-- background and copy reports): `impl.key`, `impl.paste`, `impl.input`, `impl.reinit`.
local native = require("fen.native")
local term = native.term

---@param tui table what tui/init.lua shares with its parts
return function(tui)
  local api, S, impl, editor, menu, style = tui.api, tui.S, tui.impl, tui.editor, tui.menu, tui.style
  local layout, refresh, notice, run_task, submit = tui.layout, tui.refresh, tui.notice, tui.run_task, tui.submit
  local ctx_for_extensions, sync_palette, compute_controls = tui.ctx_for_extensions, tui.sync_palette, tui.compute_controls
  local history_step, complete, apply_completion = tui.history.step, tui.completion.complete, tui.completion.apply
  local overlay_key = tui.overlays.key

  local function quit()
    S.quit = true
    if S.busy then pcall(api.turn.cancel) end
  end

  local function toggle_expand()
    S.expanded = not S.expanded
    term.fold("tool", not S.expanded)
  end
  impl.toggle_expand = toggle_expand

  local function toggle_thinking()
    S.thinking_shown = not S.thinking_shown
    term.fold("thinking", not S.thinking_shown)
  end

  local function ctrl_c()
    if S.busy or api.turn.busy() then
      pcall(api.turn.cancel)
      S.hint = "cancelling…"
    elseif S.ed.text ~= "" then
      editor.set(S.ed, "")
      S.menu = nil
    else
      -- Milliseconds on a monotonic clock: the window is 2 s, as docs/tui.md says.
      local now = native.clock_ms()
      if S.armed and now - S.armed <= 2000 then
        quit()
        return
      end
      S.armed = now
      S.hint = "press Ctrl-C again to quit"
    end
  end

  local simple = {
    ["ctrl-a"] = editor.home, home = nil, ["ctrl-e"] = editor["end"],
    ["ctrl-b"] = editor.left, left = editor.left, right = editor.right,
    ["ctrl-w"] = editor.kill_word, ["alt-backspace"] = editor.kill_word, ["ctrl-u"] = editor.kill_start,
    ["ctrl-k"] = editor.kill_end, ["alt-b"] = editor.word_left, ["alt-f"] = editor.word_right,
    ["ctrl-left"] = editor.word_left, ["ctrl-right"] = editor.word_right,
    backspace = editor.backspace, ["ctrl-h"] = editor.backspace, delete = editor.delete,
  }

  function impl.key(key)
    if S.hint and key ~= "ctrl-c" then S.hint = nil end
    if key ~= "ctrl-c" then S.armed = nil end
    if S.overlay then return overlay_key(key) end
    if S.finding and S.ed.text == "" and (key == "n" or key == "N" or key == "esc") then
      if key == "esc" then
        impl.find_done()
      else
        impl.find_step(key == "n")
      end
      return layout()
    end
    local ctl = S.controls and S.controls[key]
    if ctl then
      local ok, err = pcall(ctl.handler, ctx_for_extensions())
      if not ok then notice("control " .. key .. " failed: " .. tostring(err), style.error) end
      refresh()
      return
    end
    if S.menu then
      if key == "up" or key == "shift-tab" or key == "ctrl-p" then
        S.menu.selected = (S.menu.selected - 2) % #S.menu.items + 1
        return layout()
      elseif key == "down" or key == "ctrl-n" then
        S.menu.selected = S.menu.selected % #S.menu.items + 1
        return layout()
      elseif key == "esc" then
        local kind, _, from = menu.trigger(S.ed.text, S.ed.cursor)
        S.menu_dismissed = kind and (kind .. from) or nil
        S.menu = nil
        return layout()
      elseif key == "tab" then
        complete()
        impl.update_menu()
        return layout()
      elseif key == "enter" then
        -- Enter takes the item; a command runs at once (as if typed in full).
        local it = S.menu.items[S.menu.selected]
        apply_completion(it)
        if it.kind == "command" then return submit() end
        impl.update_menu()
        return layout()
      end
    end
    if key == "enter" then
      return submit()
    elseif key == "ctrl-j" or key == "shift-enter" or key == "alt-enter" then
      editor.insert(S.ed, "\n")
    elseif key == "tab" then
      complete()
    elseif key == "ctrl-c" then
      ctrl_c()
    elseif key == "esc" then
      -- Also a turn a command started (/goal, /skill:NAME, a Markdown command).
      if S.busy or api.turn.busy() then
        pcall(api.turn.cancel)
      elseif S.ed.text == "" then
        -- Esc Esc on an empty input: /rewind.
        local now = os.time()
        if S.last_esc and now - S.last_esc <= 1 then
          S.last_esc = nil
          run_task(function()
            local text, err = api.kernel.run_command("/rewind")
            if err then notice(err, style.error) elseif text and text ~= "" then notice(text, {}) end
            refresh()
          end)
        else
          S.last_esc = now
        end
      end
    elseif key == "ctrl-d" then
      if S.ed.text == "" then return quit() end
      editor.delete(S.ed)
    elseif key == "up" then
      history_step(-1)
    elseif key == "down" then
      history_step(1)
    elseif key == "pgup" then
      if not S.inline then term.scroll(-math.max(1, term.page() - 1)) end
    elseif key == "pgdn" then
      if not S.inline then term.scroll(math.max(1, term.page() - 1)) end
    elseif key == "home" then
      if S.ed.text == "" then
        if not S.inline then term.top() end
      else
        editor.home(S.ed)
      end
    elseif key == "end" then
      if S.ed.text == "" then term.bottom() else editor["end"](S.ed) end
    elseif key == "ctrl-o" then
      toggle_expand()
    elseif key == "ctrl-t" then
      toggle_thinking()
    elseif key == "ctrl-f" then
      if S.ed.text == "" then editor.set(S.ed, "/find ") else editor.right(S.ed) end
    elseif key == "ctrl-g" then
      impl.jump_last_user()
    elseif key == "ctrl-l" then
      term.redraw()
    elseif key == "ctrl-z" then
      term.suspend()
    elseif key == "alt-e" then
      local text, err = term.edit(S.ed.text)
      if text then
        editor.set(S.ed, (text:gsub("\n+$", "")))
      elseif err then
        notice(err, style.error)
      end
    elseif simple[key] then
      simple[key](S.ed)
    elseif utf8.len(key) == 1 then
      editor.insert(S.ed, key)
    else
      return
    end
    -- Typing opens, narrows or closes the menu.
    impl.update_menu()
    layout()
  end

  function impl.paste(text)
    if S.overlay then
      if S.overlay.input then editor.insert(S.overlay.input, (text:gsub("\n", " "))) end
      return layout()
    end
    local _, nl = text:gsub("\n", "")
    local lines = nl + 1
    if lines > 10 or #text > 1000 then
      S.paste_n = S.paste_n + 1
      S.pastes[S.paste_n] = text
      editor.insert(S.ed, string.format("[paste #%d +%d lines]", S.paste_n, lines))
    else
      editor.insert(S.ed, text)
    end
    impl.update_menu()
    layout()
  end

  function impl.input(ev)
    if ev.type == "key" then
      impl.key(ev.key)
    elseif ev.type == "paste" then
      impl.paste(ev.text)
    elseif ev.type == "wheel" then
      if not S.inline then term.scroll(ev.up and -ev.n or ev.n) end
    elseif ev.type == "resize" then
      layout()
    elseif ev.type == "background" then
      -- The terminal said its background (OSC 11): its palette, unless the user chose one.
      S.theme_base = style.apply(S.user_theme, ev.dark and "dark" or "light")
      sync_palette()
      refresh()
    elseif ev.type == "copied" then
      notice(string.format("copied %d characters", ev.chars), style.info)
    end
  end

  function impl.reinit()
    compute_controls()
    -- An extension may have restyled markdown or code (fen.lib.theme) before a /reload.
    sync_palette()
    refresh()
  end

  return { toggle_expand = toggle_expand }
end
