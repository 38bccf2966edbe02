-- fen.lib.openai_responses: the OpenAI Responses API wire protocol (streaming events, function
-- calls, reasoning items with summaries, store = false). `make(api, cfg)` returns a provider spec.
local native = require("fen.native")
local kit = require("fen.lib.provider")
local json = native.json

local function convert_messages(messages)
  local out = {}
  -- A function_call_output carries text: the images of a run of them follow in one user
  -- message.
  local pending = {}
  local function flush()
    if #pending == 0 then return end
    local parts = { { type = "input_text", text = "The images returned by the tool calls above:" } }
    for _, img in ipairs(pending) do
      parts[#parts + 1] = { type = "input_image", image_url = kit.data_url(img) }
    end
    out[#out + 1] = { role = "user", content = parts }
    pending = {}
  end
  for _, m in ipairs(messages) do
    if m.role ~= "tool-result" then flush() end
    if m.role == "user" then
      local images = kit.images_of(m.content)
      local text = kit.text_of(m.content)
      local parts = (text ~= "" or #images == 0) and { { type = "input_text", text = text } } or {}
      for _, img in ipairs(images) do
        parts[#parts + 1] = { type = "input_image", image_url = kit.data_url(img) }
      end
      out[#out + 1] = { role = "user", content = parts }
    elseif m.role == "assistant" then
      for _, b in ipairs(m.content or {}) do
        if b.type == "text" and b.text ~= "" then
          out[#out + 1] = { type = "message", role = "assistant", content = { { type = "output_text", text = b.text } } }
        elseif b.type == "thinking" and b.item_id and b.thinking_signature then
          out[#out + 1] = {
            type = "reasoning", id = b.item_id, encrypted_content = b.thinking_signature,
            summary = { { type = "summary_text", text = b.thinking or "" } },
          }
        elseif b.type == "tool-call" then
          out[#out + 1] = { type = "function_call", call_id = b.id, name = b.name, arguments = json.encode(b.arguments or {}) }
        end
      end
    elseif m.role == "tool-result" then
      out[#out + 1] = { type = "function_call_output", call_id = m.tool_call_id, output = kit.text_of(m.content) }
      for _, img in ipairs(kit.images_of(m.content)) do pending[#pending + 1] = img end
    end
  end
  flush()
  return out
end

local function convert_tools(tools)
  local out = {}
  for _, t in ipairs(tools or {}) do
    out[#out + 1] = { type = "function", name = t.name, description = t.description, parameters = kit.clean_schema(t.parameters) }
  end
  return out
end

local function parse(asm, ev)
  local d = json.decode(ev.data)
  if type(d) ~= "table" then return nil end
  local t = d.type or ev.event
  if t == "response.output_text.delta" then
    asm:text(d.delta)
  elseif t == "response.refusal.delta" then
    asm:refusal(d.delta)
  elseif t == "response.refusal.done" then
    -- The whole refusal, when no deltas carried it.
    if not asm.refused then asm:refusal(d.refusal) end
  elseif t == "response.reasoning_summary_text.delta" or t == "response.reasoning_text.delta" then
    asm:thinking(d.delta)
  elseif t == "response.output_item.added" and type(d.item) == "table" and d.item.type == "function_call" then
    asm:tool_start(d.output_index, d.item.call_id, d.item.name)
  elseif t == "response.function_call_arguments.delta" then
    asm:tool_args(d.output_index, d.delta)
  elseif t == "response.output_item.done" and type(d.item) == "table" then
    if d.item.type == "reasoning" then
      asm:signature(d.item.encrypted_content, d.item.id)
    elseif d.item.type == "function_call" then
      asm:tool_args_final(d.output_index, d.item.arguments)
    end
  elseif t == "response.completed" or t == "response.incomplete" then
    local r = d.response or {}
    local u = r.usage
    if type(u) == "table" then
      asm.usage = {
        input = u.input_tokens, output = u.output_tokens, total_tokens = u.total_tokens,
        cache_read = type(u.input_tokens_details) == "table" and u.input_tokens_details.cached_tokens or nil,
      }
    end
    if t == "response.incomplete" then asm.stop_reason = "length" end
    return "done"
  elseif t == "response.failed" then
    local r = d.response or {}
    local e = type(r.error) == "table" and r.error or {}
    return { error = "response failed: " .. tostring(e.message or "unknown error"), retryable = false }
  elseif t == "error" then
    return { error = tostring(d.message or (d.error and d.error.message) or ev.data), retryable = true }
  end
  return nil
end

return function(api, cfg)
  local spec = { name = cfg.name, api = "openai-responses" }
  spec.convert_messages = convert_messages
  spec.convert_tools = convert_tools
  spec.map_stop_reason = function(status)
    return ({ completed = "stop", incomplete = "length", failed = "error" })[status] or "stop"
  end
  spec.build_body = function(model, ctx, options)
    local body = {
      model = model, input = convert_messages(ctx.messages), stream = true, store = false,
      max_output_tokens = ctx.max_tokens,
    }
    if ctx.system_prompt and ctx.system_prompt ~= "" then body.instructions = ctx.system_prompt end
    if ctx.tools and #ctx.tools > 0 then body.tools = convert_tools(ctx.tools) end
    local effort = kit.reasoning_effort(options)
    if effort then
      body.reasoning = { effort = effort, summary = "auto" }
      body.include = { "reasoning.encrypted_content" }
    end
    return body
  end
  spec.parse_response = function(resp)
    local asm = kit.assembler()
    for i, item in ipairs(resp.output or {}) do
      if item.type == "message" then
        for _, c in ipairs(item.content or {}) do
          if c.type == "output_text" then asm:text(c.text) elseif c.type == "refusal" then asm:refusal(c.refusal) end
        end
      elseif item.type == "function_call" then
        asm:tool_start(i, item.call_id, item.name)
        asm:tool_args(i, item.arguments)
      end
    end
    return asm:finish({ provider = cfg.name, api = "openai-responses" })
  end
  spec.complete = kit.completer(api, cfg, spec, { api_name = "openai-responses", plain_deltas = "openai-responses", path = "/responses", auth = kit.bearer, parse = parse })
  return spec
end
