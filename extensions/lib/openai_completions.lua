-- fen.lib.openai_completions: the OpenAI Chat Completions wire protocol (also spoken by
-- Ollama, vLLM, LM Studio, OpenRouter). `make(api, cfg)` returns a provider spec.
-- cfg: {name, base_url, key_env, max_tokens_field ("max_completion_tokens" | "max_tokens"),
--       api_key, headers}
local native = require("fen.native")
local kit = require("fen.lib.provider")
local json = native.json

local STOP = { stop = "stop", length = "length", tool_calls = "tool-use", function_call = "tool-use", content_filter = "error" }

local function convert_messages(messages, system)
  local out = {}
  if system and system ~= "" then out[#out + 1] = { role = "system", content = system } end
  -- A tool message carries text only: the images of a run of tool results follow it in one
  -- user message (tool messages must directly follow their assistant message).
  local pending = {}
  local function flush()
    if #pending == 0 then return end
    local parts = { { type = "text", text = "The images returned by the tool calls above:" } }
    for _, img in ipairs(pending) do
      parts[#parts + 1] = { type = "image_url", image_url = { url = kit.data_url(img) } }
    end
    out[#out + 1] = { role = "user", content = parts }
    pending = {}
  end
  for _, m in ipairs(messages) do
    if m.role ~= "tool-result" then flush() end
    if m.role == "user" then
      local images = kit.images_of(m.content)
      if #images == 0 then
        out[#out + 1] = { role = "user", content = kit.text_of(m.content) }
      else
        -- A prompt's images follow its text as image parts.
        local text = kit.text_of(m.content)
        local parts = text ~= "" and { { type = "text", text = text } } or {}
        for _, img in ipairs(images) do
          parts[#parts + 1] = { type = "image_url", image_url = { url = kit.data_url(img) } }
        end
        out[#out + 1] = { role = "user", content = parts }
      end
    elseif m.role == "assistant" then
      local text, calls = {}, {}
      for _, b in ipairs(m.content or {}) do
        if b.type == "text" then
          text[#text + 1] = b.text
        elseif b.type == "tool-call" then
          calls[#calls + 1] = { id = b.id, type = "function", ["function"] = { name = b.name, arguments = json.encode(b.arguments or {}) } }
        end
      end
      local msg = { role = "assistant" }
      if #text > 0 then msg.content = table.concat(text) end
      if #calls > 0 then msg.tool_calls = calls end
      if msg.content or msg.tool_calls then out[#out + 1] = msg end
    elseif m.role == "tool-result" then
      out[#out + 1] = { role = "tool", tool_call_id = m.tool_call_id, content = kit.text_of(m.content) }
      for _, img in ipairs(kit.images_of(m.content)) do pending[#pending + 1] = img end
    end
  end
  flush()
  return out
end

local function convert_tools(tools)
  local out = {}
  for _, t in ipairs(tools or {}) do
    out[#out + 1] = { type = "function", ["function"] = { name = t.name, description = t.description, parameters = kit.clean_schema(t.parameters) } }
  end
  return out
end

-- The text of a typed part's payload: a string, or a list of `{type = "text", text}`.
local function part_text(v)
  if type(v) == "string" then return v end
  if type(v) ~= "table" then return nil end
  local out = {}
  for _, p in ipairs(v) do
    if type(p) == "table" and type(p.text) == "string" then out[#out + 1] = p.text end
  end
  return table.concat(out)
end

--- `delta.content` as a list of typed parts (Mistral's Magistral: `{type = "thinking",
--- thinking = {{type = "text", text}}}` and `{type = "text", text}`).
local function content_parts(asm, parts)
  for _, p in ipairs(parts) do
    if type(p) == "table" then
      if p.type == "thinking" then
        asm:thinking(part_text(p.thinking))
      elseif p.type == "text" then
        asm:text(part_text(p.text))
      end
    end
  end
end

--- Handles one SSE event of the stream.
local function parse(asm, ev)
  if ev.data == "[DONE]" then return "done" end
  local chunk = json.decode(ev.data)
  if type(chunk) ~= "table" then return nil end
  if chunk.error then
    return { error = kit.error_text(ev.data), retryable = true }
  end
  if type(chunk.usage) == "table" then
    local u = chunk.usage
    asm.usage = {
      input = u.prompt_tokens, output = u.completion_tokens, total_tokens = u.total_tokens,
      cache_read = type(u.prompt_tokens_details) == "table" and u.prompt_tokens_details.cached_tokens or nil,
    }
  end
  local choice = type(chunk.choices) == "table" and chunk.choices[1]
  if type(choice) ~= "table" then return nil end
  local d = choice.delta
  if type(d) == "table" then
    if type(d.reasoning_content) == "string" then asm:thinking(d.reasoning_content) end
    if type(d.reasoning) == "string" then asm:thinking(d.reasoning) end
    if type(d.content) == "string" then
      asm:text(d.content)
    elseif type(d.content) == "table" then
      content_parts(asm, d.content)
    end
    if type(d.refusal) == "string" then asm:refusal(d.refusal) end
    if type(d.tool_calls) == "table" then
      for _, tc in ipairs(d.tool_calls) do
        local key = tc.index or 0
        local fn = type(tc["function"]) == "table" and tc["function"] or {}
        if tc.id and not asm.tools[key] then asm:tool_start(key, tc.id, fn.name) end
        if type(fn.arguments) == "string" then asm:tool_args(key, fn.arguments) end
      end
    end
  end
  if type(choice.finish_reason) == "string" then
    asm.stop_reason = STOP[choice.finish_reason] or "stop"
  end
  return nil
end

return function(api, cfg)
  local spec = { name = cfg.name, api = "openai-completions" }
  spec.convert_messages = convert_messages
  spec.convert_tools = convert_tools
  spec.map_stop_reason = function(reason) return STOP[reason] or "stop" end
  spec.build_body = function(model, ctx, options)
    local body = {
      model = model,
      messages = convert_messages(ctx.messages, ctx.system_prompt),
      stream = true,
      stream_options = { include_usage = true },
    }
    body[cfg.max_tokens_field or "max_completion_tokens"] = ctx.max_tokens
    if ctx.tools and #ctx.tools > 0 then body.tools = convert_tools(ctx.tools) end
    body.reasoning_effort = kit.reasoning_effort(options)
    return body
  end
  spec.parse_response = function(resp)
    local choice = resp.choices and resp.choices[1] or {}
    local asm = kit.assembler()
    local msg = choice.message or {}
    if type(msg.content) == "string" then asm:text(msg.content) elseif type(msg.content) == "table" then content_parts(asm, msg.content) end
    if type(msg.refusal) == "string" then asm:refusal(msg.refusal) end
    for i, tc in ipairs(msg.tool_calls or {}) do
      asm:tool_start(i, tc.id, tc["function"].name)
      asm:tool_args(i, tc["function"].arguments)
    end
    asm.stop_reason = STOP[choice.finish_reason] or "stop"
    return asm:finish({ provider = cfg.name, api = "openai-completions" })
  end
  spec.complete = kit.completer(api, cfg, spec, { api_name = "openai-completions", plain_deltas = "openai-completions", path = "/chat/completions", auth = kit.bearer, parse = parse })
  return spec
end
