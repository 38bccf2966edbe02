-- mock: a scripted provider for tests and demos. The script is a JSON (or Lua) list of turns,
-- from --mock-script FILE or FEN_MOCK_SCRIPT. Turn N is played when the transcript holds N-1
-- assistant messages. A turn is one of:
--   {"text": "..."}                      plain answer
--   {"thinking": "...", "text": "..."}   reasoning, then answer
--   {"tool_calls": [{"name": "read", "arguments": {...}, "id": "optional"}], "text": "optional"}
--   {"error": "message"}                 the provider call fails
-- Any turn may carry "delay_ms" (a cancellable wait before streaming) and "chunk_delay_ms" (a
-- wait between the 16-byte text deltas, for tests that act while an answer streams), and "usage"
-- ({input, output, cache_read, cache_write, subscription}: what the call reports). A Lua script may return
-- a function(n, ctx) that returns the turn.
local native = require("fen.native")

local function load_script(options)
  local path = options.mock_script or os.getenv("FEN_MOCK_SCRIPT")
  if not path or path == "" then
    error("mock provider: no script; pass --mock-script FILE or set FEN_MOCK_SCRIPT", 0)
  end
  if path:match("%.lua$") then
    local chunk, err = loadfile(path)
    if not chunk then error("mock provider: " .. err, 0) end
    return chunk()
  end
  local text, err = native.fs.read_text(path, 64 << 20)
  if not text then error("mock provider: cannot read script: " .. err, 0) end
  local script, derr = native.json.decode(text)
  if not script then error("mock provider: " .. path .. ": " .. derr, 0) end
  if type(script) ~= "table" then error("mock provider: " .. path .. " must hold a JSON list of turns", 0) end
  return script
end

local function chunks(s, size)
  local out = {}
  for i = 1, #s, size do out[#out + 1] = s:sub(i, i + size - 1) end
  return out
end

return function(api)
  local function assistant_count()
    local n = 0
    for _, m in ipairs(api.turn.messages() or {}) do
      if m.role == "assistant" then n = n + 1 end
    end
    return n
  end

  api.register("provider", {
    name = "mock",
    api = "mock",
    -- The mock stands in for real providers, overflow errors included.
    context_overflow = require("fen.lib.wire").CONTEXT_OVERFLOW,
    -- FEN_MOCK_CONTEXT_WINDOW makes compaction testable with small conversations.
    models = { { id = "mock", context_window = tonumber(os.getenv("FEN_MOCK_CONTEXT_WINDOW") or "") or 128000 } },
    build_body = function(model, ctx) return { model = model, messages = ctx.messages, tools = ctx.tools } end,
    convert_messages = function(messages) return messages end,
    convert_tools = function(tools) return tools end,
    map_stop_reason = function(reason) return reason end,
    parse_response = function(response) return response end,
    complete = function(model, ctx, options, on_event)
      local script = load_script(options or {})
      local n = assistant_count() + 1
      local turn = type(script) == "function" and script(n, ctx) or script[n]
      if not turn then
        error(string.format("mock provider: the script has %d turns and turn %d was requested", #script, n), 0)
      end
      if turn.delay_ms then native.sleep(turn.delay_ms) end
      local emit = on_event or function() end
      if turn.error then
        return { role = "assistant", content = native.json.decode("[]"), stop_reason = "error", error_message = turn.error, model = model }
      end
      emit({ type = "start" })
      local content = native.json.decode("[]") -- encodes as [] when the turn is empty
      if turn.thinking then
        local i = #content
        emit({ type = "thinking-start", content_index = i })
        for _, c in ipairs(chunks(turn.thinking, 16)) do emit({ type = "thinking-delta", content_index = i, delta = c }) end
        emit({ type = "thinking-end", content_index = i, content = turn.thinking })
        content[#content + 1] = { type = "thinking", thinking = turn.thinking }
      end
      if turn.text then
        local i = #content
        emit({ type = "text-start", content_index = i })
        for _, c in ipairs(chunks(turn.text, 16)) do
          if turn.chunk_delay_ms then native.sleep(turn.chunk_delay_ms) end
          emit({ type = "text-delta", content_index = i, delta = c })
        end
        emit({ type = "text-end", content_index = i, content = turn.text })
        content[#content + 1] = { type = "text", text = turn.text }
      end
      for k, call in ipairs(turn.tool_calls or {}) do
        local i = #content
        local block = { type = "tool-call", id = call.id or string.format("mock_%d_%d", n, k), name = call.name, arguments = call.arguments or {} }
        emit({ type = "tool-call-start", content_index = i })
        emit({ type = "tool-call-delta", content_index = i, delta = native.json.encode(block.arguments) })
        emit({ type = "tool-call-end", content_index = i, tool_call = block })
        content[#content + 1] = block
      end
      local message = {
        role = "assistant", content = content, model = model, provider = "mock", api = nil,
        stop_reason = (turn.tool_calls and #turn.tool_calls > 0) and "tool-use" or "stop",
        usage = type(turn.usage) == "table" and turn.usage or { input = 0, output = 0 },
      }
      emit({ type = "done", message = message })
      return message
    end,
  })
end
