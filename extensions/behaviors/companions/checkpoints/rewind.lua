-- /rewind [TURN [code|conversation|both]]: this session's turns newest first with the files
-- each changed; restore code and conversation, conversation only, or code only. A diff summary
-- comes first; files changed by hand since fen last recorded them need a second yes.
local native = require("fen.native")
local cp = native.checkpoint

local CHOICES = {
  { label = "restore code and conversation", code = true, conversation = true },
  { label = "restore conversation only", code = false, conversation = true },
  { label = "restore code only", code = true, conversation = false },
  { label = "cancel" },
}
local BY_WORD = { both = 1, conversation = 2, code = 3 }

local function one_line(s, max)
  s = tostring(s or ""):gsub("%s+", " ")
  if #s > max then s = s:sub(1, max - 1) .. "…" end
  return s
end

--- "turn 3: fix the parser  [2 files: a.rs, b.rs]"
local function describe(t)
  local files = t.files or {}
  local what
  if #files == 0 then
    what = t.commit and (t.ended and "no files changed" or "files not recorded") or "no files changed"
  else
    local shown = {}
    for i = 1, math.min(#files, 4) do shown[i] = files[i] end
    what = string.format("%d file%s: %s%s", #files, #files == 1 and "" or "s", table.concat(shown, ", "), #files > 4 and ", …" or "")
  end
  return string.format("turn %d: %s  [%s]", t.turn, one_line(t.prompt, 60), what)
end

--- The diff summary of a plan: one line a file.
local function summary(plan)
  local lines = {}
  for _, c in ipairs(plan.changes or {}) do
    local counts = ""
    if c.added or c.removed then counts = string.format(" (+%d -%d)", c.added or 0, c.removed or 0) end
    local verb = ({ restore = "restore", recreate = "recreate", remove = "remove" })[c.action] or c.action
    lines[#lines + 1] = string.format("  %-8s %s%s", verb, c.path, counts)
  end
  return lines
end

return function(api, state)
  local M = {}

  local function settings(workspace)
    local ok, s = pcall(cp.settings, workspace)
    return ok and s or {}
  end

  --- Runs the rewind itself; returns the message for the transcript.
  local function run(info, turn, choice)
    local t
    for _, x in ipairs(turn.all) do if x.turn == turn.turn then t = x end end
    local s = settings(t and t.workspace or cp.workspace_of(native.fs.cwd()))
    local base = { session_path = info.path, turn = turn.turn, include = s.include, max_file_bytes = s.max_file_bytes }
    local force = false
    if choice.code then
      local opts = {}
      for k, v in pairs(base) do opts[k] = v end
      opts.code = true
      local plan, err = cp.rewind(opts)
      if not plan then return "error: " .. err end
      local p = plan.plan
      if p and #p.changes > 0 then
        local lines = { string.format("rewind to before turn %d changes %d file(s):", turn.turn, #p.changes) }
        for _, l in ipairs(summary(p)) do lines[#lines + 1] = l end
        pcall(api.ui.notify, table.concat(lines, "\n"))
        local yes = api.ui.select(string.format("restore %d file(s) to before turn %d?", #p.changes, turn.turn), { "yes, restore", "no" })
        if yes ~= 1 then return "rewind: nothing changed" end
        if #p.hand_changed > 0 then
          local again = api.ui.select("changed by hand since fen last recorded them: " .. table.concat(p.hand_changed, ", ") .. " — overwrite them too?",
            { "yes, overwrite", "no" })
          if again ~= 1 then return "rewind: nothing changed (files changed by hand: " .. table.concat(p.hand_changed, ", ") .. ")" end
          force = true
        end
      elseif not choice.conversation then
        return string.format("rewind: the files are already as they were before turn %d", turn.turn)
      end
    end
    local opts = {}
    for k, v in pairs(base) do opts[k] = v end
    opts.code, opts.conversation, opts.apply, opts.force = choice.code, choice.conversation, true, force
    local out, err = cp.rewind(opts)
    if not out then return "error: " .. err end
    if out.refused then return "rewind refused: " .. out.refused end
    local msg = {}
    if choice.code then
      msg[#msg + 1] = string.format("restored %d file(s) to before turn %d", #(out.restored or {}), turn.turn)
    end
    if out.branch then
      -- The branch lives in this session's file: its records go through this session's writer,
      -- then the session is opened again on the new branch.
      for _, rec in ipairs(out.branch_records or {}) do
        local aok, stored = pcall(api.session.append_record, rec)
        if not aok or not stored then
          return "error: cannot write the branch: " .. (aok and "the session backend keeps no records" or tostring(stored))
        end
      end
      local ok, rerr = api.session.resume(info.path)
      if not ok then return "error: the branch was written but the session could not be opened again: " .. tostring(rerr) end
      msg[#msg + 1] = string.format("conversation rewound to before turn %d (a new branch of this session; /sessions lists the old one)%s", turn.turn,
        out.prompt and ("; its prompt was: " .. one_line(out.prompt, 200)) or "")
      if out.prompt then
        api.emit({ type = "input-prefill", text = out.prompt })
      end
    end
    return table.concat(msg, "; ")
  end

  function M.command(args)
    local info = api.session.info()
    if not info or not info.path then return "nothing to rewind: this session has no turns yet" end
    local turns, err = cp.turns(info.path)
    if not turns then return "error: " .. err end
    local list = {}
    for i = #turns.turns, 1, -1 do list[#list + 1] = turns.turns[i] end
    if #list == 0 then return "nothing to rewind: this session has no turns yet" end
    local n, word = (args or ""):match("^%s*(%d+)%s*(%a*)%s*$")
    local turn
    if n then
      turn = tonumber(n)
      local known = false
      for _, t in ipairs(list) do if t.turn == turn then known = true end end
      if not known then return string.format("no turn %d in this session (/rewind lists them)", turn) end
    elseif args and args:match("%S") then
      return "usage: /rewind [TURN [code|conversation|both]]"
    else
      local items = {}
      for i, t in ipairs(list) do items[i] = describe(t) end
      local idx = api.ui.select("rewind to before which turn?", items)
      if not idx then return "rewind: nothing changed" end
      turn = list[idx].turn
    end
    local k = word and word ~= "" and BY_WORD[word]
    if word and word ~= "" and not k then return "usage: /rewind [TURN [code|conversation|both]]" end
    if not k then
      local labels = {}
      for i, c in ipairs(CHOICES) do labels[i] = c.label end
      k = api.ui.select(string.format("rewind to before turn %d", turn), labels)
      if not k or k == #CHOICES then return "rewind: nothing changed" end
    end
    return run(info, { turn = turn, all = turns.turns }, CHOICES[k])
  end

  M.describe = describe
  M.summary = summary
  return M
end
