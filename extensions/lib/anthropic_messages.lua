-- fen.lib.anthropic_messages: the Anthropic Messages wire protocol (text, tool_use with
-- input_json_delta, thinking with signatures kept for the next turn, prompt caching of the
-- system prompt, the tools and the last message). `make(api, cfg)` returns a provider spec.
local native = require("fen.native")
local kit = require("fen.lib.provider")
local json = native.json

local STOP = { end_turn = "stop", stop_sequence = "stop", tool_use = "tool-use", max_tokens = "length", refusal = "refusal", pause_turn = "stop" }
local EPHEMERAL = { type = "ephemeral" }

local function convert_messages(messages)
  local out = {}
  local function push(role, blocks)
    if #blocks == 0 then return end
    local last = out[#out]
    -- Consecutive messages of one role merge: tool results and a following user line go
    -- back together, as the API expects turns to alternate.
    if last and last.role == role then
      for _, b in ipairs(blocks) do last.content[#last.content + 1] = b end
    else
      out[#out + 1] = { role = role, content = blocks }
    end
  end
  for _, m in ipairs(messages) do
    if m.role == "user" then
      -- A prompt's images (`fen --mode rpc`, `fen acp`) follow its text as image blocks.
      local images = kit.images_of(m.content)
      local text = kit.text_of(m.content)
      local blocks = (text ~= "" or #images == 0) and { { type = "text", text = text } } or {}
      for _, img in ipairs(images) do
        blocks[#blocks + 1] = { type = "image", source = { type = "base64", media_type = img.mime_type, data = img.data } }
      end
      push("user", blocks)
    elseif m.role == "assistant" then
      local blocks = {}
      for _, b in ipairs(m.content or {}) do
        if b.type == "thinking" and b.redacted and b.thinking_signature then
          blocks[#blocks + 1] = { type = "redacted_thinking", data = b.thinking_signature }
        elseif b.type == "thinking" and b.thinking_signature then
          blocks[#blocks + 1] = { type = "thinking", thinking = b.thinking, signature = b.thinking_signature }
        elseif b.type == "text" and b.text ~= "" then
          blocks[#blocks + 1] = { type = "text", text = b.text }
        elseif b.type == "tool-call" then
          local input = b.arguments
          if type(input) ~= "table" or next(input) == nil then input = json.decode("{}") end
          blocks[#blocks + 1] = { type = "tool_use", id = b.id, name = b.name, input = input }
        end
      end
      push("assistant", blocks)
    elseif m.role == "tool-result" then
      -- Images go inside the tool result, as image blocks next to its text.
      local images = kit.images_of(m.content)
      local content = kit.text_of(m.content)
      if #images > 0 then
        content = { { type = "text", text = content } }
        for _, img in ipairs(images) do
          content[#content + 1] = { type = "image", source = { type = "base64", media_type = img.mime_type, data = img.data } }
        end
      end
      push("user", { { type = "tool_result", tool_use_id = m.tool_call_id, content = content, is_error = m.is_error or false } })
    end
  end
  -- Cache the conversation up to its last block.
  local last = out[#out]
  if last and #last.content > 0 then last.content[#last.content].cache_control = EPHEMERAL end
  return out
end

local function convert_tools(tools)
  local out = {}
  for _, t in ipairs(tools or {}) do
    out[#out + 1] = { name = t.name, description = t.description, input_schema = kit.clean_schema(t.parameters) }
  end
  if #out > 0 then out[#out].cache_control = EPHEMERAL end
  return out
end

-- Usage fields of message_start and message_delta (both cumulative): the last value of each
-- field wins.
local USAGE_FIELDS = {
  input = "input_tokens", output = "output_tokens",
  cache_read = "cache_read_input_tokens", cache_write = "cache_creation_input_tokens",
}

local function take_usage(asm, u)
  if type(u) ~= "table" then return end
  asm.usage = asm.usage or {}
  for mine, theirs in pairs(USAGE_FIELDS) do
    if math.type(u[theirs]) then asm.usage[mine] = u[theirs] end
  end
end

local function parse(asm, ev)
  local d = json.decode(ev.data)
  if type(d) ~= "table" then return nil end
  local t = d.type or ev.event
  if t == "content_block_delta" and type(d.delta) == "table" then
    local delta = d.delta
    if delta.type == "text_delta" then
      asm:text(delta.text)
    elseif delta.type == "thinking_delta" then
      asm:thinking(delta.thinking)
    elseif delta.type == "signature_delta" then
      asm:signature(delta.signature)
    elseif delta.type == "input_json_delta" then
      asm:tool_args(d.index, delta.partial_json)
    end
  elseif t == "content_block_start" and type(d.content_block) == "table" then
    local b = d.content_block
    if b.type == "text" then
      asm:begin_text()
      if b.text and b.text ~= "" then asm:text(b.text) end
    elseif b.type == "thinking" then
      asm:begin_thinking()
    elseif b.type == "redacted_thinking" then
      asm:redacted_thinking(b.data)
    elseif b.type == "tool_use" then
      asm:tool_start(d.index, b.id, b.name)
    end
  elseif t == "message_start" and type(d.message) == "table" then
    take_usage(asm, d.message.usage)
  elseif t == "message_delta" then
    if type(d.delta) == "table" and d.delta.stop_reason then asm.stop_reason = STOP[d.delta.stop_reason] or "stop" end
    -- Cumulative: when server-side tools ran, the final counts exceed message_start's.
    take_usage(asm, d.usage)
  elseif t == "message_stop" then
    if asm.usage then
      asm.usage.total_tokens = (asm.usage.input or 0) + (asm.usage.output or 0) + (asm.usage.cache_read or 0) + (asm.usage.cache_write or 0)
    end
    return "done"
  elseif t == "error" then
    local e = type(d.error) == "table" and d.error or {}
    local kind = e.type or "error"
    return { error = kind .. ": " .. tostring(e.message or ev.data), retryable = kind == "overloaded_error" or kind == "api_error" }
  end
  return nil
end

return function(api, cfg)
  local spec = { name = cfg.name, api = "anthropic-messages" }
  spec.convert_messages = convert_messages
  spec.convert_tools = convert_tools
  spec.map_stop_reason = function(reason) return STOP[reason] or "stop" end
  spec.build_body = function(model, ctx, options)
    local body = { model = model, max_tokens = ctx.max_tokens, messages = convert_messages(ctx.messages), stream = true }
    if ctx.system_prompt and ctx.system_prompt ~= "" then
      body.system = { { type = "text", text = ctx.system_prompt, cache_control = EPHEMERAL } }
    end
    if ctx.tools and #ctx.tools > 0 then body.tools = convert_tools(ctx.tools) end
    local budget = options.thinking_budget or kit.THINKING_BUDGET[options.thinking or "off"]
    if budget then
      body.thinking = { type = "enabled", budget_tokens = budget }
      -- The API wants room for the answer beyond the thinking budget.
      if body.max_tokens <= budget then body.max_tokens = budget + ctx.max_tokens end
    end
    return body
  end
  spec.parse_response = function(resp)
    local asm = kit.assembler()
    for i, b in ipairs(resp.content or {}) do
      if b.type == "text" then asm:text(b.text)
      elseif b.type == "tool_use" then
        asm:tool_start(i, b.id, b.name)
        asm:tool_args(i, json.encode(b.input or {}))
      end
    end
    asm.stop_reason = STOP[resp.stop_reason] or "stop"
    return asm:finish({ provider = cfg.name, api = "anthropic-messages" })
  end
  spec.complete = kit.completer(api, cfg, spec, { api_name = "anthropic-messages", plain_deltas = "anthropic-messages", path = "/messages", auth = function(h, key) h["x-api-key"] = key end, headers = { ["anthropic-version"] = "2023-06-01" }, parse = parse })
  return spec
end
