-- fen.lib.provider: what the HTTP providers share.
--   M.assembler(on_event)   turns wire deltas into canonical stream events and content blocks
--   M.stream(p)             one streamed request with retries (429, 5xx, 529, dropped or cut
--                           streams; Retry-After honoured; only while nothing was delivered)
--   M.config(opts, defaults) base URL and key from options, models.json and the environment
--   M.credential(api, name, ctx) an auth backend's credential (cached; refreshed on a 401)
--   M.text_of(content), M.clean_schema(schema), M.error_message(...)
local native = require("fen.native")
local json = native.json

local M = {}

---------------------------------------------------------------------------------------------
-- Stream assembler. Text and thinking blocks are sequential (a new block closes the open one);
-- tool calls are keyed (by the wire's index) and closed at the end, when their JSON arguments
-- are complete. Deltas are collected in parts and joined once: a 100,000-delta answer must not
-- cost 100,000 string copies.
---------------------------------------------------------------------------------------------
local Asm = {}
Asm.__index = Asm

--- An empty table that encodes as a JSON array (`[]`, not `{}`): content is always an array.
function M.array() return json.decode("[]") end

function M.assembler(on_event)
  return setmetatable({
    emit = on_event or function() end,
    content = M.array(), open = nil, tools = {}, tool_order = {},
    delivered = false, usage = nil, stop_reason = nil, started = false,
  }, Asm)
end

function Asm:_start()
  if not self.started then
    self.started = true
    self.emit({ type = "start" })
  end
end

function Asm:_close_open()
  local b = self.open
  if not b then return end
  self.open = nil
  local text = table.concat(b.parts)
  if b.kind == "text" then
    b.block.text = text
    self.emit({ type = "text-end", content_index = b.index, content = text })
  else
    b.block.thinking = text
    self.emit({ type = "thinking-end", content_index = b.index, content = text })
  end
end

function Asm:_open_block(kind, block)
  self:_start()
  self:_close_open()
  self.content[#self.content + 1] = block
  local b = { kind = kind, block = block, index = #self.content - 1, parts = {} }
  self.open = b
  self.emit({ type = kind .. "-start", content_index = b.index })
  return b
end

--- Starts a text block explicitly (Anthropic announces blocks before their deltas).
function Asm:begin_text() return self:_open_block("text", { type = "text", text = "" }) end
function Asm:begin_thinking() return self:_open_block("thinking", { type = "thinking", thinking = "" }) end

function Asm:text(delta)
  if delta == nil or delta == "" then return end
  local b = self.open
  if not b or b.kind ~= "text" then b = self:begin_text() end
  b.parts[#b.parts + 1] = delta
  self.delivered = true
  self.emit({ type = "text-delta", content_index = b.index, delta = delta })
end

function Asm:thinking(delta)
  if delta == nil or delta == "" then return end
  local b = self.open
  if not b or b.kind ~= "thinking" then b = self:begin_thinking() end
  b.parts[#b.parts + 1] = delta
  self.delivered = true
  self.emit({ type = "thinking-delta", content_index = b.index, delta = delta })
end

--- Opaque reasoning signature (Anthropic) or encrypted content (Responses) for the open or
--- last thinking block; `item_id` keeps the Responses reasoning item id for replay.
function Asm:signature(sig, item_id)
  local target = self.open and self.open.kind == "thinking" and self.open.block
  if not target then
    for i = #self.content, 1, -1 do
      if self.content[i].type == "thinking" then target = self.content[i] break end
    end
  end
  if not target then
    target = self:begin_thinking().block
  end
  if sig then target.thinking_signature = (target.thinking_signature or "") .. sig end
  if item_id then target.item_id = item_id end
end

function Asm:redacted_thinking(data)
  local b = self:begin_thinking()
  b.block.redacted = true
  b.block.thinking_signature = data
end

function Asm:tool_start(key, id, name)
  self:_start()
  self:_close_open()
  local block = { type = "tool-call", id = id, name = name, arguments = {} }
  self.content[#self.content + 1] = block
  local t = { block = block, index = #self.content - 1, parts = {} }
  self.tools[key] = t
  self.tool_order[#self.tool_order + 1] = t
  self.emit({ type = "tool-call-start", content_index = t.index })
  return t
end

function Asm:tool_args(key, delta)
  local t = self.tools[key]
  if not t or delta == nil or delta == "" then return end
  t.parts[#t.parts + 1] = delta
  self.delivered = true
  self.emit({ type = "tool-call-delta", content_index = t.index, delta = delta })
end

--- Sets the complete arguments text when the wire sends it whole (and no deltas came).
function Asm:tool_args_final(key, text)
  local t = self.tools[key]
  if t and #t.parts == 0 and text and text ~= "" then t.parts[1] = text end
end

function Asm:has_tool_calls() return #self.tool_order > 0 end

--- Refusal text (OpenAI's `refusal` deltas and content parts): shown as the answer, and the
--- message ends with `stop_reason = "refusal"`.
function Asm:refusal(delta)
  if delta == nil or delta == "" then return end
  self.refused = true
  self:text(delta)
end

--- The content so far, for a message that ends early (an error mid-stream): the open block
--- keeps the deltas that were shown.
function Asm:partial()
  self:_close_open()
  return self.content
end

--- Closes every block, decodes tool arguments, emits `done` and returns the message.
function Asm:finish(fields)
  self:_start()
  self:_close_open()
  for _, t in ipairs(self.tool_order) do
    local raw = table.concat(t.parts)
    if raw ~= "" then
      local args, err = json.decode(raw)
      if type(args) == "table" then
        t.block.arguments = args
      else
        t.block.arguments = {}
        -- The agent loop answers the call with this instead of running the tool (cut on a
        -- character boundary).
        t.block.parse_error = string.format("%s; the first 200 bytes were: %s",
          err or "the arguments must be a JSON object", require("fen.lib.text").prefix(raw, 200))
      end
    end
    self.emit({ type = "tool-call-end", content_index = t.index, tool_call = t.block })
  end
  local message = {
    role = "assistant", content = self.content, usage = self.usage,
    stop_reason = self.stop_reason or (self:has_tool_calls() and "tool-use" or "stop"),
    timestamp = nil,
  }
  for k, v in pairs(fields or {}) do message[k] = v end
  if message.stop_reason == "stop" and self:has_tool_calls() then message.stop_reason = "tool-use" end
  if self.refused and not self:has_tool_calls() then message.stop_reason = "refusal" end
  self.emit({ type = "done", message = message })
  return message
end

---------------------------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------------------------

--- The visible text of a user message or tool result (string or text blocks).
function M.text_of(content)
  if type(content) == "string" then return content end
  local parts = {}
  for _, b in ipairs(content or {}) do
    if b.type == "text" and b.text then parts[#parts + 1] = b.text end
  end
  return table.concat(parts, "\n")
end

--- The image blocks of a message's content (`{type = "image", data, mime_type}`), in order.
function M.images_of(content)
  local out = {}
  if type(content) ~= "table" then return out end
  for _, b in ipairs(content) do
    if b.type == "image" and b.data then out[#out + 1] = b end
  end
  return out
end

--- `data:` URL of an image block (what the OpenAI APIs take).
function M.data_url(image)
  return string.format("data:%s;base64,%s", image.mime_type, image.data)
end

--- Whether `model` takes images: false only when its declared entry (models.json, pi's key)
--- has an `input` list without "image".
function M.accepts_images(models, model)
  for _, m in ipairs(models or {}) do
    if m.id == model and type(m.input) == "table" then
      for _, kind in ipairs(m.input) do
        if kind == "image" then return true end
      end
      return false
    end
  end
  return true
end

--- The messages with every image block replaced by a text note, for a model without image
--- input. Messages without images are shared, not copied.
function M.without_images(messages, model)
  local out = {}
  for i, m in ipairs(messages) do
    local images = M.images_of(m.content)
    if #images == 0 then
      out[i] = m
    else
      local copy, content = {}, {}
      for k, v in pairs(m) do copy[k] = v end
      for _, b in ipairs(m.content) do
        if b.type == "image" then
          content[#content + 1] = { type = "text", text = string.format(
            "[fen: an image (%s) was left out: model %s does not take image input]", tostring(b.mime_type), tostring(model)) }
        else
          content[#content + 1] = b
        end
      end
      copy.content = content
      out[i] = copy
    end
  end
  return out
end

--- A JSON schema with the Lua-empty-table ambiguity resolved: `required = {}` and empty
--- `properties` would encode as `{}`; providers want them absent or an object.
function M.clean_schema(schema)
  local s = {}
  for k, v in pairs(schema or {}) do s[k] = v end
  s.type = s.type or "object"
  if type(s.required) == "table" and next(s.required) == nil then s.required = nil end
  if s.type == "object" and (s.properties == nil or next(s.properties) == nil) then
    s.properties = json.decode("{}")
  end
  return s
end

--- An assistant message that reports a failed call (the loop ends the turn with it).
function M.error_message(p, text, partial)
  return {
    role = "assistant", content = partial or M.array(), stop_reason = "error", error_message = text,
    provider = p.name, model = p.model, api = p.api_name,
  }
end

--- The readable message of a provider's error body (OpenAI `error.message`, Anthropic
--- `error.message`, or the raw text, capped).
function M.error_text(body)
  local decoded = body and json.decode(body)
  if type(decoded) == "table" then
    local e = decoded.error
    if type(e) == "table" and e.message then
      return (e.type and (e.type .. ": ") or "") .. e.message
    elseif type(e) == "string" then
      return e
    elseif decoded.message then
      return decoded.message
    end
  end
  body = body or ""
  if #body > 500 then body = require("fen.lib.text").prefix(body, 500) .. "..." end
  return body ~= "" and body or "(no error body)"
end

-- A server asking for a longer wait than this gets an error the user can act on, not a hang.
local MAX_RETRY_AFTER_MS = 60000

local RETRY_STATUS = { [408] = true, [409] = true, [425] = true, [429] = true, [529] = true }

local function retryable_status(status)
  return RETRY_STATUS[status] or (status >= 500 and status <= 599)
end

--- One streamed call with retries. `p`: {api (the extension api, for events), name, model,
--- url, headers, body (table), parse = function(asm, ev) -> nil | "done" | {error, retryable},
--- plain_deltas (the wire's API name: plain text deltas skip `parse`), on_event,
--- max_attempts (default 4), finish_fields}.
function M.stream(p)
  local max_attempts = p.max_attempts or 4
  -- Written out off the Lua thread when large (a long conversation is megabytes).
  local body = json.encode_async(p.body)
  local attempt = 0
  while true do
    attempt = attempt + 1
    local asm = M.assembler(p.on_event)
    local terminal, stream_error = false, nil
    local res, err = native.http.request({
      method = "POST", url = p.url, headers = p.headers, body = body, sse = true,
      -- One call per network read; runs of plain text/thinking deltas arrive joined (the
      -- native side recognises them for `p.plain_deltas`), everything else as raw events.
      plain_deltas = p.plain_deltas,
      on_events = function(batch)
        for i = 1, batch.n do
          local ev = batch[i]
          if ev.text then
            asm:text(ev.text)
          elseif ev.thinking then
            asm:thinking(ev.thinking)
          else
            local r = p.parse(asm, ev)
            if r == "done" then
              terminal = true
              return false
            elseif type(r) == "table" and r.error then
              stream_error = r
              return false
            end
          end
        end
      end,
    })
    local reason, retry_after
    if not res then
      if err.kind == "cancelled" then error("cancelled", 0) end
      if err.retryable and not asm.delivered then
        reason = err.message
      else
        return M.error_message(p, err.message, asm:partial())
      end
    elseif res.status == 401 and p.reauth and not p.reauthed then
      -- A refused credential: ask the auth backend to refresh it, then try once more.
      p.reauthed = true
      local ok, rerr = p.reauth()
      if not ok then return M.error_message(p, rerr) end
      reason, retry_after = string.format("HTTP 401 from %s: credentials refreshed", p.name), 0
    elseif res.status < 200 or res.status > 299 then
      local text = string.format("HTTP %d from %s: %s", res.status, p.name, M.error_text(res.body))
      if not retryable_status(res.status) then return M.error_message(p, text) end
      reason, retry_after = text, res.retry_after_ms
    elseif stream_error then
      if stream_error.retryable and not asm.delivered then
        reason = stream_error.error
      else
        return M.error_message(p, stream_error.error, asm:partial())
      end
    elseif not terminal then
      local text = "the stream ended before its final event"
      if asm.delivered then return M.error_message(p, text, asm:partial()) end
      reason = text
    else
      return asm:finish(p.finish_fields)
    end
    if attempt >= max_attempts then
      return M.error_message(p, string.format("%s (gave up after %d attempts)", reason, attempt))
    end
    if retry_after and retry_after > MAX_RETRY_AFTER_MS then
      return M.error_message(p, string.format("%s (the server asks to wait %ds; try again later)", reason, retry_after // 1000))
    end
    local delay = retry_after or native.http.backoff_ms(attempt)
    p.api.emit({ type = "provider-retry", attempt = attempt, max_attempts = max_attempts, delay_ms = delay, reason = reason })
    native.sleep(delay)
  end
end

--- Base URL and key. `defaults`: {base_url, key_env}. Options may carry `base_url`, `api_key`
--- (a literal, or the name of an environment variable) and `headers`.
function M.config(options, defaults)
  local base = (options.base_url or defaults.base_url):gsub("/+$", "")
  local key = options.api_key
  if key and key:match("^[A-Z][A-Z0-9_]*$") and os.getenv(key) then key = os.getenv(key) end
  -- With --base-url the provider's key variable is still used (a proxy or compatible gateway
  -- usually wants it); unset it, or use models.json, for servers that must not see it.
  key = key or (defaults.key_env and os.getenv(defaults.key_env))
  if key == "" then key = nil end
  return base, key
end

--- The `complete` of an HTTP provider spec: configuration, the key check, headers, the body
--- from `spec.build_body`, and the streamed call with retries. `wire`: {api_name, path (e.g.
--- "/messages"), auth = function(headers, key), headers (fixed extra headers), parse,
--- plain_deltas (the wire format whose plain text deltas the native side may join)}.
function M.completer(api, cfg, spec, wire)
  return function(model, ctx, options, on_event)
    options = options or {}
    local p = { api = api, name = cfg.name, model = model, api_name = wire.api_name }
    local base, key = M.config({ base_url = options.base_url or cfg.base_url_override, api_key = options.api_key or cfg.api_key }, cfg)
    local cred
    if cfg.auth then
      local err
      cred, err = M.credential(api, cfg.auth, { provider = cfg.name, model = model })
      if not cred then return M.error_message(p, err) end
      -- A backend that names its API base gets its token sent there only (--base-url cannot
      -- redirect a subscription's token to another host).
      if cred.base_url then base = cred.base_url:gsub("/+$", "") end
    elseif not key and not options.base_url and not cfg.base_url_override then
      return M.no_key(p, cfg.key_env)
    end
    local function headers_with(c)
      local headers = { ["content-type"] = "application/json" }
      for k, v in pairs(wire.headers or {}) do headers[k] = v end
      if c then
        M.bearer(headers, c.token)
        for k, v in pairs(c.headers or {}) do headers[k] = v end
      elseif key then
        wire.auth(headers, key)
      end
      for k, v in pairs(cfg.headers or {}) do headers[k] = v end
      return headers
    end
    p.url = base .. wire.path
    p.headers = headers_with(cred)
    if cred then
      p.reauth = function()
        local fresh, err = M.refresh_credential(api, cfg.auth, { provider = cfg.name, model = model, token = cred.token })
        if not fresh then return nil, err end
        p.headers = headers_with(fresh)
        return true
      end
    end
    if not M.accepts_images(cfg.models, model) then
      local stripped = {}
      for k, v in pairs(ctx) do stripped[k] = v end
      stripped.messages = M.without_images(ctx.messages or {}, model)
      ctx = stripped
    end
    p.body = spec.build_body(model, ctx, options)
    if cfg.adjust_body then cfg.adjust_body(p.body, ctx) end
    p.parse = wire.parse
    p.plain_deltas = wire.plain_deltas
    p.on_event = on_event
    p.finish_fields = { provider = cfg.name, model = model, api = wire.api_name }
    return M.stream(p)
  end
end

---------------------------------------------------------------------------------------------
-- Auth backends: a provider whose cfg names one (`auth`, models.json's "auth") asks it for a
-- credential before each request (cached until it nears its expiry) and, on a 401, for a
-- refreshed one, once.
---------------------------------------------------------------------------------------------
local CREDENTIALS = {}
-- A cached credential is handed back to its backend this long before it expires, so the
-- backend can refresh it first.
local CACHE_MARGIN_SECS = 300

local function auth_backend(api, name)
  -- Live specs are a first-party view (api.kernel); a third-party provider cannot reach them.
  if not api.kernel then return nil end
  for _, b in ipairs(api.kernel.contributions("auth-backend")) do
    if b.name == name then return b.spec end
  end
  return nil
end

local function call_backend(api, name, method, ctx)
  local b = auth_backend(api, name)
  if not b then
    return nil, string.format("%s: no auth backend named %q is registered (see `fen list auth-backends`)", ctx.provider, name)
  end
  if type(b[method]) ~= "function" then
    return nil, string.format("%s refused the credential of auth backend %q, which cannot %s it", ctx.provider, name, method)
  end
  local ok, cred, err = pcall(b[method], ctx)
  if not ok then return nil, tostring(cred) end
  if type(cred) ~= "table" or type(cred.token) ~= "string" or cred.token == "" then
    return nil, err or string.format("auth backend %q returned no token", name)
  end
  if cred.expires_at ~= nil and type(cred.expires_at) ~= "number" then cred.expires_at = nil end
  CREDENTIALS[name] = cred
  return cred
end

--- The credential of auth backend `name`: `{token, expires_at?, headers?, base_url?}`, or nil
--- and a message.
function M.credential(api, name, ctx)
  local c = CREDENTIALS[name]
  if c and (c.expires_at == nil or c.expires_at - os.time() > CACHE_MARGIN_SECS) then return c end
  return call_backend(api, name, "credential", ctx)
end

--- A refreshed credential after a 401 (`ctx.token` is the refused one).
function M.refresh_credential(api, name, ctx)
  CREDENTIALS[name] = nil
  return call_backend(api, name, "refresh", ctx)
end

--- Anthropic thinking budgets (tokens) of the `--thinking` levels; OpenAI takes the level's
--- name as its reasoning effort. "off" sends nothing.
M.THINKING_BUDGET = { minimal = 1024, low = 4096, medium = 10240, high = 32768 }

--- The OpenAI reasoning effort of the options (`reasoning_effort`, else the `thinking` level).
function M.reasoning_effort(options)
  if options.reasoning_effort then return options.reasoning_effort end
  if options.thinking and options.thinking ~= "off" then return options.thinking end
  return nil
end

--- Bearer-token authentication (the OpenAI APIs and most compatible servers).
function M.bearer(headers, key) headers.authorization = "Bearer " .. key end

--- The error message for a missing key, listing the ways to configure one.
function M.no_key(p, env)
  return M.error_message(p, string.format(
    "%s needs an API key: set %s, put an api_key for it in ~/.config/fen/models.json, or pass --base-url for a local server",
    p.name, env))
end

return M
