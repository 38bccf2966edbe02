-- fen.lib.wire: a provider spec whose wire protocol module is loaded on first use. Boot
-- registers every built-in provider, while a run talks to one: the protocol modules (and
-- fen.lib.provider under them) are a third of the Lua fen would otherwise load at start-up.
-- `spec(api, kind, cfg)` stands for `require(MODULES[kind])(api, cfg)`: the same fields, its
-- functions calling that spec's (made once, on the first call).
local MODULES = {
  ["openai-completions"] = "fen.lib.openai_completions",
  ["openai-responses"] = "fen.lib.openai_responses",
  ["anthropic-messages"] = "fen.lib.anthropic_messages",
}
local FUNCTIONS = { "convert_messages", "convert_tools", "map_stop_reason", "build_body", "parse_response", "complete" }

local M = {}

--- Whether `kind` names a protocol this module knows.
function M.known(kind)
  return MODULES[kind] ~= nil
end

--- The provider spec for protocol `kind` (an error when it is not one of MODULES).
--- Phrases (lower case) in a provider's error text that mean "the request is larger than the
--- model's context window": the loop then compacts and retries once. Spelled by OpenAI,
--- Anthropic and the common compatible servers.
M.CONTEXT_OVERFLOW = {
  "context_length_exceeded", "context length", "context window", "prompt is too long",
  "too many tokens", "maximum context",
}

function M.spec(api, kind, cfg)
  local module = MODULES[kind]
  if not module then error(string.format("unknown provider api %q", tostring(kind)), 2) end
  local real
  -- key_env: the variable holding this provider's key, hidden from tool children.
  local key_env = cfg.key_env
  if not key_env and type(cfg.api_key) == "string" and cfg.api_key:match("^[A-Z_][A-Z0-9_]*$") then
    key_env = cfg.api_key
  end
  local spec = { name = cfg.name, api = kind, context_overflow = M.CONTEXT_OVERFLOW, key_env = key_env }
  for _, f in ipairs(FUNCTIONS) do
    spec[f] = function(...)
      real = real or require(module)(api, cfg)
      return real[f](...)
    end
  end
  return spec
end

return M
