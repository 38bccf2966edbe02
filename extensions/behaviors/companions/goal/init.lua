-- goal: one persisted goal per session that fen keeps working on by itself.
--   /goal OBJECTIVE [--budget TOKENS] [--time 30m]   sets it and starts working
--   /goal                                              shows it
--   /goal pause | resume | clear
--   fen -p --goal "..." [--goal-budget N] [--goal-time 30m]   headless; exit 0 only when complete
-- While the goal is active, a turn the model ends goes on with a short continuation prompt,
-- until the model calls `update_goal {status = "complete" | "blocked", reason}`, the token or
-- time budget runs out (`budget_limited`), or three continuation rounds in a row make no tool
-- call (`blocked`). Esc (cancelling the turn) pauses it. Each change of status is a `goal`
-- event (streamed by `--mode json`) and a state record of the session.
local function trim(s) return (tostring(s or "")):match("^%s*(.-)%s*$") end

local STALL_LIMIT = 3

--- `30m`, `2h`, `90s`, `45` (minutes) -> seconds, or nil.
local function parse_duration(s)
  if type(s) ~= "string" then return nil end
  local n, unit = s:match("^%s*(%d+%.?%d*)%s*([smhd]?)%s*$")
  n = tonumber(n)
  if not n then return nil end
  local mult = ({ s = 1, m = 60, h = 3600, d = 86400 })[unit ~= "" and unit or "m"]
  return math.floor(n * mult)
end

local function human_tokens(n)
  n = n or 0
  if n >= 1000000 then return string.format("%.1fM", n / 1000000) end
  if n >= 1000 then return string.format("%.1fk", n / 1000) end
  return tostring(math.floor(n))
end

local function human_time(s)
  s = math.floor(s or 0)
  if s >= 3600 then return string.format("%dh%02dm", s // 3600, (s % 3600) // 60) end
  if s >= 60 then return string.format("%dm%02ds", s // 60, s % 60) end
  return s .. "s"
end

return function(api)
  local state = api.state()

  local function goal()
    if state.goal == nil and not state.loaded then
      state.loaded = true
      local ok, s = pcall(api.session.latest_state)
      if ok and type(s) == "table" and type(s.goal) == "table" then
        state.goal = s.goal
        -- A goal left active by an earlier run waits for /goal resume.
        if state.goal.status == "active" then state.goal.status = "paused" end
      end
    end
    return state.goal
  end

  --- Time used: what earlier active stretches used plus the current one.
  local function time_used(g)
    local t = g.time_used or 0
    if g.status == "active" and g.active_since then t = t + (os.time() - g.active_since) end
    return t
  end

  local function line(g)
    local parts = { string.format("goal %s: %s", g.status, g.objective) }
    local used = string.format("tokens %s%s, time %s%s", human_tokens(g.tokens_used),
      g.budget_tokens and ("/" .. human_tokens(g.budget_tokens)) or "", human_time(time_used(g)),
      g.budget_time and ("/" .. human_time(g.budget_time)) or "")
    parts[#parts + 1] = "(" .. used .. ")"
    if g.reason and g.reason ~= "" then parts[#parts + 1] = "— " .. g.reason end
    return table.concat(parts, " ")
  end

  local function save(g)
    pcall(api.session.append_state, { goal = g })
  end

  local function set_status(status, reason)
    local g = goal()
    if not g then return end
    if g.status == "active" and status ~= "active" and g.active_since then
      g.time_used = (g.time_used or 0) + (os.time() - g.active_since)
      g.active_since = nil
    elseif status == "active" and g.status ~= "active" then
      g.active_since = os.time()
    end
    local changed = g.status ~= status
    g.status, g.reason = status, reason
    save(g)
    if changed then
      api.emit({ type = "goal", objective = g.objective, status = status, reason = reason,
        tokens_used = g.tokens_used or 0, time_used = time_used(g), budget_tokens = g.budget_tokens,
        budget_time = g.budget_time, line = line(g) })
      -- The status row shows the goal.
      api.emit({ type = "redraw" })
    end
  end

  local function start(objective, budget_tokens, budget_time)
    state.goal = { objective = objective, status = "new", tokens_used = 0, time_used = 0,
      budget_tokens = budget_tokens, budget_time = budget_time, continuations = 0, stalls = 0 }
    state.loaded = true
    state.round_calls, state.in_round = 0, false
    set_status("active", nil)
  end

  local function framing(g)
    return string.format(
      "Goal: %s\n\nWork toward this goal on your own, step by step, using the tools. When it is fully achieved, call update_goal with status \"complete\" and a one-line reason; if you cannot make progress without help, call update_goal with status \"blocked\" and say why.",
      g.objective)
  end

  local function continuation(g)
    return string.format(
      "Continue working toward the goal: %s\nIf it is achieved, call update_goal {status: \"complete\", reason}; if you are stuck, call update_goal {status: \"blocked\", reason}.",
      g.objective)
  end

  --- Over a budget? Returns the reason, or nil.
  local function over_budget(g)
    if g.budget_tokens and (g.tokens_used or 0) >= g.budget_tokens then
      return string.format("token budget used (%s of %s)", human_tokens(g.tokens_used), human_tokens(g.budget_tokens))
    end
    if g.budget_time and time_used(g) >= g.budget_time then
      return string.format("time budget used (%s of %s)", human_time(time_used(g)), human_time(g.budget_time))
    end
  end

  api.on("llm-end", function(ev)
    local g = state.goal
    if not g or g.status ~= "active" then return end
    local u = ev.message and ev.message.usage
    if type(u) == "table" then
      g.tokens_used = (g.tokens_used or 0) + (tonumber(u.input) or 0) + (tonumber(u.output) or 0)
        + (tonumber(u.cache_read) or 0) + (tonumber(u.cache_write) or 0)
    end
  end)

  api.on("tool-call", function()
    state.round_calls = (state.round_calls or 0) + 1
  end)

  -- Esc / Ctrl-C stops the turn and pauses the goal.
  api.on("agent-turn-complete", function(ev)
    local g = state.goal
    if g and g.status == "active" and ev.status == "cancelled" then set_status("paused", "the turn was stopped") end
    if g and g.status == "active" and ev.status == "error" then set_status("paused", "the turn failed: " .. tostring(ev.error)) end
  end)

  api.register("hook", {
    name = "goal",
    before_turn = function(text)
      -- `fen -p --goal`: the goal starts with the first prompt.
      local o = api.kernel.run_options() or {}
      if type(o.goal) == "string" and not state.cli_started then
        state.cli_started = true
        start(trim(o.goal), tonumber(o.goal_budget), parse_duration(o.goal_time))
        local g = state.goal
        state.round_calls, state.in_round = 0, false
        if trim(text) == trim(o.goal) then return { text = framing(g) } end
        return { text = text .. "\n\n" .. framing(g) }
      end
      return nil
    end,
    before_stop = function()
      local g = state.goal
      if not g or g.status ~= "active" then return nil end
      local why = over_budget(g)
      if why then
        set_status("budget_limited", why)
        return nil
      end
      if state.in_round then
        if (state.round_calls or 0) == 0 then g.stalls = (g.stalls or 0) + 1 else g.stalls = 0 end
        if g.stalls >= STALL_LIMIT then
          set_status("blocked", string.format("%d continuation turns in a row made no tool call", STALL_LIMIT))
          return nil
        end
      end
      g.continuations = (g.continuations or 0) + 1
      state.round_calls, state.in_round = 0, true
      save(g)
      return { continue_with = continuation(g) }
    end,
  })

  api.register("tool", {
    name = "update_goal",
    label = "goal",
    description = "Report the state of the current goal: status \"complete\" once it is fully achieved, or \"blocked\" when you cannot make progress without the user (say why in reason). Only while a goal is active.",
    risk = "read",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = {
        status = { type = "string", enum = { "complete", "blocked" } },
        reason = { type = "string", description = "One line: what was achieved, or what blocks you." },
      },
      required = { "status" },
    },
    execute = function(args)
      local g = goal()
      if not g or g.status ~= "active" then
        return { content = { { type = "text", text = "error: no goal is active" } }, is_error = true }
      end
      set_status(args.status, trim(args.reason))
      return { content = { { type = "text", text = "Goal marked " .. args.status .. ". Stop here; summarise briefly." } }, is_error = false }
    end,
  })

  api.register("command", {
    name = "goal",
    description = "Work on a goal turn after turn: `/goal OBJECTIVE [--budget TOKENS] [--time 30m]`; `/goal` shows it; `/goal pause|resume|clear`.",
    handler = function(args)
      args = trim(args)
      local g = goal()
      if args == "" then return g and line(g) or "no goal; set one with /goal OBJECTIVE [--budget TOKENS] [--time 30m]" end
      if args == "pause" then
        if not g or g.status ~= "active" then return "no active goal to pause" end
        set_status("paused", "paused by the user")
        return line(g)
      elseif args == "clear" then
        if not g then return "no goal" end
        state.goal = nil
        pcall(api.session.append_state, { goal = false })
        api.emit({ type = "goal", objective = g.objective, status = "cleared", tokens_used = g.tokens_used or 0,
          time_used = time_used(g), line = "goal cleared" })
        api.emit({ type = "redraw" })
        return "goal cleared"
      elseif args == "resume" then
        if not g then return "no goal to resume" end
        if g.status == "complete" then return "the goal is complete; set a new one with /goal OBJECTIVE" end
        g.stalls = 0
        state.round_calls, state.in_round = 0, false
        set_status("active", nil)
        local r = api.turn.submit(continuation(g), { when_busy = "steering" })
        if r and r.status == "error" then return "goal: " .. tostring(r.error) end
        return nil
      end
      -- A new goal: the objective, then options.
      local budget, time
      local objective = args:gsub("%s%-%-budget%s+(%S+)", function(v) budget = v return "" end)
      objective = objective:gsub("%s%-%-time%s+(%S+)", function(v) time = v return "" end)
      objective = trim(objective)
      if budget and not tonumber(budget) then return "--budget takes a number of tokens, not " .. budget end
      if time and not parse_duration(time) then return "--time takes a duration such as 30m, 2h or 90s, not " .. time end
      if objective == "" then return "usage: /goal OBJECTIVE [--budget TOKENS] [--time 30m]" end
      start(objective, tonumber(budget), parse_duration(time))
      local r = api.turn.submit(framing(state.goal), { when_busy = "steering" })
      if r and r.status == "error" then return "goal: " .. tostring(r.error) end
      return nil
    end,
  })

  api.register("status", {
    name = "goal",
    order = 6,
    render = function()
      local g = state.goal
      if not g then return nil end
      local used = human_time(time_used(g))
      if g.budget_tokens then used = used .. " " .. human_tokens(g.tokens_used) .. "/" .. human_tokens(g.budget_tokens) end
      return string.format("goal %s %s", g.status, used)
    end,
  })
end
