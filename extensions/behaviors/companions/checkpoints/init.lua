-- checkpoints: before the first call of a user turn that can change files (a write tool, a
-- shell command the permission analyser does not call read-only, a subagent), the workspace is
-- recorded in a shadow git repository outside the user's .git (fen.native.checkpoint), and a
-- `checkpoint` record goes into the session file:
--   {"type":"checkpoint","id","turn","commit","files","skipped","prompt","workspace",...}
-- written when the turn starts (its position marks where the conversation before the turn
-- ends), when the snapshot is taken (`commit`) and when the turn ends (`files`, `end`).
-- /rewind lists the turns and restores code, conversation or both (see docs/checkpoints.md).
local native = require("fen.native")
local cp = native.checkpoint

--- An empty list that stays a JSON array (`[]`, not `{}`) in the session file.
local function array(items)
  local a = native.json.decode("[]")
  for i, v in ipairs(items or {}) do a[i] = v end
  return a
end

return function(api)
  local state = api.state()
  state.read_only = state.read_only or {}

  local function settings(workspace)
    if not state.settings or state.settings_for ~= workspace then
      local s = cp.settings(workspace)
      for _, p in ipairs(s.problems or {}) do api.log("warn", p) end
      state.settings, state.settings_for = s, workspace
    end
    return state.settings
  end

  -- A new turn: number it after the latest the session recorded, and mark where it starts.
  api.on("user", function(ev)
    state.cur = nil
    state.read_only = {}
    local last = api.session.latest_state("checkpoints")
    local n = ((type(last) == "table" and tonumber(last.turn)) or 0) + 1
    local workspace = cp.workspace_of(native.fs.cwd())
    local rec = { type = "checkpoint", id = native.session.new_id(), turn = n, prompt = ev.line,
      files = array(), skipped = array(), workspace = workspace }
    local ok, stored = pcall(api.session.append_record, rec)
    if not ok or not stored then return end
    local info = api.session.info() or {}
    if not info.path then return end
    rec.shadow_session = info.id
    state.cur = { id = rec.id, turn = n, prompt = ev.line, workspace = workspace, path = info.path, session = info.id }
  end)

  -- The permission analyser says which shell commands change nothing.
  api.on("permission-decision", function(ev)
    if ev.read_only and ev.tool_call_id then state.read_only[ev.tool_call_id] = true end
  end)

  local function can_change(name, ctx)
    if ctx.risk == "write" then return true end
    if name == "subagent" then return true end
    if ctx.risk == "shell" then return not state.read_only[ctx.call_id] end
    return false
  end

  local function record(cur, extra)
    local rec = { type = "checkpoint", id = cur.id, turn = cur.turn, commit = cur.commit,
      skipped = array(cur.skipped), workspace = cur.workspace, shadow_session = cur.session }
    for k, v in pairs(extra or {}) do rec[k] = v end
    pcall(api.session.append_record, rec)
  end

  local function before_tool(name, _, ctx)
    local cur = state.cur
    if not cur or cur.commit or cur.failed or not can_change(name, ctx) then return nil end
    -- Calls running side by side wait for the one snapshot of the turn.
    while cur.snapping do native.sleep(10) end
    if cur.commit or cur.failed then return nil end
    local s = settings(cur.workspace)
    if not s.enabled then cur.failed = true return nil end
    cur.snapping = true
    local snap, err = cp.snapshot({ workspace = cur.workspace, session = cur.session, session_path = cur.path,
      name = tostring(cur.turn), include = s.include, max_file_bytes = s.max_file_bytes })
    cur.snapping = false
    if not snap then
      cur.failed = true
      api.emit({ type = "info", info = "checkpoint not taken: " .. tostring(err) })
      return nil
    end
    cur.commit, cur.skipped = snap.commit, snap.skipped
    if #snap.skipped > 0 then
      api.emit({ type = "info", info = "checkpoint: files over the size cap are not captured: " .. table.concat(snap.skipped, ", ") })
    end
    record(cur, { files = array() })
    return nil
  end

  -- When the turn ends: what it changed, and the tree fen now knows (the baseline against
  -- which later hand edits are told apart).
  local function after_turn()
    local cur = state.cur
    state.cur = nil
    if not cur or not cur.commit then return end
    local s = settings(cur.workspace)
    local snap = cp.snapshot({ workspace = cur.workspace, session = cur.session, session_path = cur.path,
      name = cur.turn .. "-end", include = s.include, max_file_bytes = s.max_file_bytes,
      since = cur.commit, baseline = true })
    if not snap then return end
    local skipped = {}
    for _, p in ipairs(cur.skipped or {}) do skipped[#skipped + 1] = p end
    for _, p in ipairs(snap.skipped or {}) do skipped[#skipped + 1] = p end
    cur.skipped = skipped
    record(cur, { files = array(snap.files), ["end"] = snap.commit })
    -- Once a run: snapshots of deleted sessions go, and the total stays under its bound.
    if not state.pruned then
      state.pruned = true
      local _, perr = cp.prune(s.max_total_bytes)
      if perr then api.log("warn", "checkpoints: " .. perr) end
    end
  end

  api.register("hook", { name = "checkpoints", order = 50, before_tool = before_tool, after_turn = after_turn })

  local rewind = api.load("rewind")(api, state)
  api.register("command", {
    name = "rewind", order = 13, idle_only = true,
    description = "Undo turns: restore the code, the conversation or both to before a turn (newest first).",
    handler = rewind.command,
  })
end
