-- compact: keeps long conversations inside the model's context window.
--   /compact [guidance]   summarise older messages now
--   automatically         before a request whose estimated size (messages + reserved output)
--                         would exceed the context window, and after a provider's
--                         context-overflow error (the loop retries the request once)
-- Recent messages are kept verbatim (the cut is made only before a user message); the older
-- ones are replaced by a summary written by the current model. The compaction is written to
-- the session before the context is replaced, and the original messages stay on disk.
-- A transcript too big for one summary request is summarised in chunks. A todo list with
-- pending or in-progress items is appended to the summary verbatim. A `before_compact` hook
-- (the settings hooks' PreCompact) may refuse a compaction; then nothing changes.

local KEEP_TOKENS = 20000          -- recent context kept verbatim (at most 30% of the window)
local SUMMARY_TOKENS = 4096        -- output budget of a summary request

local SYSTEM = [[You compact a coding agent's conversation so the work can continue after older messages are dropped. Write a concise but complete summary in Markdown with these sections: Task (what the user asked, verbatim where it matters), Decisions (and why), Work done (files created or changed, commands run and their outcome), Pending (what is left, next steps), Facts (paths, names, values, errors that the rest of the work needs). Do not invent anything.]]

local function text_of(m)
  if type(m.content) == "string" then return m.content end
  local parts = {}
  for _, b in ipairs(m.content or {}) do
    if b.type == "text" then parts[#parts + 1] = b.text
    elseif b.type == "tool-call" then
      local ok, args = pcall(require("fen.native").json.encode, b.arguments or {})
      parts[#parts + 1] = string.format("[calls %s %s]", b.name, ok and args or "")
    end
  end
  return table.concat(parts, "\n")
end

--- Rough size in tokens (4 bytes a token, as the original fen and pi estimate).
local function estimate(messages)
  local bytes = 0
  for _, m in ipairs(messages) do bytes = bytes + #text_of(m) + 16 end
  return bytes // 4
end

local function render(messages, max_result)
  local lines = {}
  for _, m in ipairs(messages) do
    local t = text_of(m)
    if m.role == "tool-result" and #t > max_result then t = require("fen.lib.text").prefix(t, max_result) .. " [...]" end
    lines[#lines + 1] = string.format("%s: %s", m.role == "tool-result" and ("tool " .. (m.tool_name or "")) or m.role, t)
  end
  return table.concat(lines, "\n\n")
end

return function(api)
  local function summarise(transcript, guidance, previous)
    local prompt = (previous and ("Summary so far:\n" .. previous .. "\n\nMore of the conversation:\n") or "Conversation:\n") .. transcript
    if guidance and guidance ~= "" then prompt = prompt .. "\n\nFocus: " .. guidance end
    local reply = api.turn.complete({ system_prompt = SYSTEM, messages = { { role = "user", content = prompt, timestamp = 0 } }, max_tokens = SUMMARY_TOKENS })
    if reply.stop_reason == "error" then return nil, reply.error_message end
    local text = text_of(reply)
    if text == "" then return nil, "the model returned an empty summary" end
    return text
  end

  --- Compacts now. Returns a one-line report, or nil and why not.
  local function compact(trigger, guidance)
    local messages = api.turn.messages() or {}
    local window = api.turn.context_window()
    -- Keep at most 30% of the window and of the conversation itself, so /compact always has
    -- something to summarise.
    local keep = math.min(KEEP_TOKENS, window * 3 // 10, estimate(messages) * 3 // 10)
    -- Walk back from the end until `keep` tokens are kept, then move the cut to a user message.
    local cut, kept_tokens = #messages + 1, 0
    while cut > 1 and kept_tokens < keep do
      cut = cut - 1
      kept_tokens = kept_tokens + estimate({ messages[cut] })
    end
    while cut <= #messages and messages[cut].role ~= "user" do cut = cut + 1 end
    if cut <= 2 then return nil, "nothing to compact yet" end
    -- A `before_compact` hook (a settings PreCompact hook) may refuse this compaction.
    local blocked = api.turn.before_compact({ trigger = trigger == "manual" and "manual" or "auto",
      custom_instructions = guidance or "" })
    if blocked then return nil, "blocked by a hook: " .. blocked, true end
    local older, kept = {}, {}
    for i = 1, cut - 1 do older[#older + 1] = messages[i] end
    for i = cut, #messages do kept[#kept + 1] = messages[i] end
    -- Chunks small enough for one request each.
    local chunk_tokens = math.max(2000, window // 2 - SUMMARY_TOKENS)
    local summary, chunk = nil, {}
    local function flush()
      if #chunk == 0 then return true end
      local s, err = summarise(render(chunk, 2000), guidance, summary)
      chunk = {}
      if not s then return nil, err end
      summary = s
      return true
    end
    for _, m in ipairs(older) do
      chunk[#chunk + 1] = m
      if estimate(chunk) > chunk_tokens then
        local ok, err = flush()
        if not ok then return nil, err end
      end
    end
    local ok, err = flush()
    if not ok then return nil, err end
    -- An open todo list survives verbatim (a finished one would make the model resume stale
    -- work, so it is left out).
    local todos = require("fen.lib.todos")
    if todos.open() then summary = summary .. "\n\nTodo list (still open):\n" .. todos.lines() end
    local before = estimate(messages)
    local summary_message = { role = "user", timestamp = os.time() * 1000,
      content = "[Summary of the earlier conversation, which was compacted]\n" .. summary }
    local after = estimate({ summary_message }) + estimate(kept)
    api.session.append_compaction({ summary = summary, tokens_before = before, tokens_after = after, guidance = guidance, trigger = trigger }, kept[1])
    local context = { summary_message }
    for _, m in ipairs(kept) do context[#context + 1] = m end
    api.turn.replace_messages(context)
    api.emit({ type = "compaction-summary", summary = summary, guidance = guidance, trigger = trigger,
      messages_kept = #kept, messages_summarized = #older, tokens_before = before, tokens_after = after })
    return string.format("compacted %d messages into a summary (~%d -> ~%d tokens); kept the last %d", #older, before, after, #kept)
  end

  api.register("command", {
    name = "compact", description = "Summarise older messages to free context: /compact [what to focus on].", order = 20, idle_only = true,
    handler = function(args)
      local report, err = compact("manual", args)
      return report or ("nothing compacted: " .. err)
    end,
  })

  api.register("hook", {
    name = "auto-compact",
    before_request = function(ctx)
      local messages = api.turn.messages() or {}
      -- The reserved output counts, but never more than a quarter of the window.
      local reserve = math.min(ctx.max_tokens or 0, ctx.context_window // 4)
      local needed = estimate(messages) + reserve
      if ctx.trigger == "overflow" or needed > ctx.context_window then
        local report, err, blocked = compact(ctx.trigger, nil)
        -- "Nothing to compact" is not news before every request of a short conversation.
        if report or blocked or ctx.trigger == "overflow" then
          api.emit({ type = "info", info = report or ("compaction failed: " .. tostring(err)) })
        end
      end
    end,
  })
end
