-- cost: `/cost`, the session's tokens and dollars by model. The kernel prices every model
-- call (usage.cost, from the embedded catalog and models.json overrides); this extension
-- only adds them up. The tally lives in api.state(): it starts from the messages already in
-- the conversation (a resumed session) and grows with each `llm-end`, so a compaction that
-- drops old messages does not drop what they cost.
local M = {}

--- A fresh tally row.
local function row(provider, model)
  return { provider = provider, model = model, calls = 0, input = 0, output = 0,
    cache_read = 0, cache_write = 0, cost = 0, priced = 0, subs = 0 }
end

--- Adds one assistant message's usage to `tally` (keyed provider/model).
function M.add(tally, m)
  local u = m.usage
  if type(u) ~= "table" then return end
  local key = tostring(m.provider or "?") .. "/" .. tostring(m.model or "?")
  local r = tally.rows[key]
  if not r then
    r = row(m.provider or "?", m.model or "?")
    tally.rows[key] = r
    tally.order[#tally.order + 1] = key
  end
  r.calls = r.calls + 1
  for _, k in ipairs({ "input", "output", "cache_read", "cache_write" }) do
    local v = tonumber(u[k]) or 0
    if v > 0 then r[k] = r[k] + v end
  end
  if u.subscription then
    r.subs = r.subs + 1
  elseif type(u.cost) == "table" and tonumber(u.cost.total) then
    r.cost = r.cost + u.cost.total
    r.priced = r.priced + 1
  end
end

function M.new() return { rows = {}, order = {} } end

local function num(n)
  if n < 1000 then return tostring(math.floor(n)) end
  if n < 1000000 then return string.format("%.1fk", n / 1000) end
  return string.format("%.2fM", n / 1000000)
end

--- The `/cost` report.
function M.report(tally)
  if #tally.order == 0 then return "no model calls yet in this session" end
  local lines = { "Tokens and cost by model (this session):" }
  local total, all_priced, any_sub = 0, true, false
  local sum = row("", "")
  for _, key in ipairs(tally.order) do
    local r = tally.rows[key]
    local prompt = r.input + r.cache_read + r.cache_write
    local hit = prompt > 0 and math.floor(r.cache_read * 100 / prompt + 0.5) or 0
    -- Dollars for the priced calls; a subscription's calls show tokens only.
    local parts = {}
    if r.priced > 0 then
      parts[#parts + 1] = string.format("$%.4f", r.cost)
      total = total + r.cost
    end
    if r.subs > 0 then
      parts[#parts + 1] = "subscription (tokens only)"
      any_sub = true
    end
    local unpriced = r.calls - r.priced - r.subs
    if unpriced > 0 then
      all_priced = false
      parts[#parts + 1] = unpriced == r.calls and "price unknown (add it to models.json, docs/cost.md)"
        or string.format("%d call%s unpriced", unpriced, unpriced == 1 and "" or "s")
    end
    local money = table.concat(parts, " + ")
    lines[#lines + 1] = string.format("  %s  %d call%s  %s in · %s out · cache %s read, %s written (%d%% hit)  %s",
      key, r.calls, r.calls == 1 and "" or "s", num(r.input), num(r.output), num(r.cache_read),
      num(r.cache_write), hit, money)
    for _, k in ipairs({ "calls", "input", "output", "cache_read", "cache_write" }) do sum[k] = sum[k] + r[k] end
  end
  local prompt = sum.input + sum.cache_read + sum.cache_write
  local hit = prompt > 0 and math.floor(sum.cache_read * 100 / prompt + 0.5) or 0
  local money = string.format("$%.4f", total)
  if not all_priced then money = money .. " (some calls unpriced)" end
  if any_sub then money = money .. " + subscription calls" end
  lines[#lines + 1] = string.format("  total  %d call%s  %s in · %s out · cache %s read (%d%% hit)  %s",
    sum.calls, sum.calls == 1 and "" or "s", num(sum.input), num(sum.output), num(sum.cache_read), hit, money)
  return table.concat(lines, "\n")
end

return function(api)
  local S = api.state()

  local function seeded()
    if S.tally then return S.tally end
    S.tally = M.new()
    local ok, messages = pcall(api.turn.messages)
    for _, m in ipairs(ok and messages or {}) do
      if m.role == "assistant" then M.add(S.tally, m) end
    end
    return S.tally
  end

  api.on("llm-end", function(ev)
    local t = seeded()
    if ev.message then M.add(t, ev.message) end
  end)
  api.on("reset-conversation", function() S.tally = nil end)

  api.register("command", {
    name = "cost",
    description = "Show this session's tokens and cost by model, with cache hits.",
    handler = function() return M.report(seeded()) end,
  })
end
