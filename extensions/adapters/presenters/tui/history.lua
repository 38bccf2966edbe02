-- tui/history: the input history, one file per project directory under
-- $XDG_STATE_HOME/fen/history/ (JSON lines; the last 1000 entries are kept in memory). Up and
-- Down walk it; a submitted line is appended.
local native = require("fen.native")

---@param tui table what tui/init.lua shares with its parts
return function(tui)
  local S, editor = tui.S, tui.editor

  local function history_path()
    local base = os.getenv("XDG_STATE_HOME")
    if not base or base == "" then base = (os.getenv("HOME") or ".") .. "/.local/state" end
    -- fen's real working directory: $PWD is stale under `env -C DIR fen` and unset in some
    -- launchers (all projects would share one file).
    local cwd = S.cwd or native.fs.cwd()
    local name = cwd:gsub("[^%w%-_.]", "_")
    return base .. "/fen/history", base .. "/fen/history/" .. name .. ".jsonl"
  end

  local function load_history()
    if S.history then return end
    S.history = {}
    local _, path = history_path()
    -- The last MiB holds well over the 1000 entries kept (a cut first line fails to decode).
    local text = native.fs.read_text(path, 1 << 20, "tail")
    if not text then return end
    for line in text:gmatch("[^\n]+") do
      local ok, v = pcall(native.json.decode, line)
      if ok and type(v) == "string" then S.history[#S.history + 1] = v end
    end
    while #S.history > 1000 do table.remove(S.history, 1) end
  end

  local function add_history(line)
    load_history()
    if S.history[#S.history] == line then return end
    S.history[#S.history + 1] = line
    local _, path = history_path()
    native.fs.append(path, native.json.encode(line) .. "\n")
  end

  local function history_step(delta)
    load_history()
    local n = #S.history
    if n == 0 then return end
    if not S.hist_i then
      if delta > 0 then return end
      S.hist_draft = S.ed.text
      S.hist_i = n + 1
    end
    local i = S.hist_i + delta
    if i < 1 then i = 1 end
    if i > n then
      S.hist_i = nil
      editor.set(S.ed, S.hist_draft or "")
      return
    end
    S.hist_i = i
    editor.set(S.ed, S.history[i])
  end

  return { add = add_history, step = history_step }
end
