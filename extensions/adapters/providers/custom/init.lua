-- custom: providers declared in ~/.config/fen/models.json (Ollama, vLLM, LM Studio,
-- OpenRouter, any OpenAI- or Anthropic-compatible endpoint):
--   {"providers": {"NAME": {"api": "openai-completions" | "openai-responses" | "anthropic-messages",
--     "base_url": "http://127.0.0.1:11434/v1", "api_key": "LITERAL or ENV_NAME", "headers": {...},
--     "models": [{"id": "...", "context_window": N, "max_output_tokens": N, "reasoning": bool,
--                 "input": ["text", "image"]}],
--     "auth": "BACKEND"}}}  (`input` without "image": images become a note; `auth` names an
--     auth-backend that supplies the bearer token instead of api_key)
-- pi's and the original fen's camelCase spellings (baseUrl, apiKey) are read too. A name that
-- matches a built-in provider replaces it (the built-ins check fen.lib.models and stand back).

local wire = require("fen.lib.wire")

return function(api)
  local models = require("fen.lib.models")
  local path = models.path()
  local config = models.load()
  local state = api.state()
  state.models = {}
  for name, p in pairs(config.providers or {}) do
    local kind = p.api or "openai-completions"
    if not wire.known(kind) then
      error(string.format("%s: provider %s has unknown api %q (use openai-completions, openai-responses or anthropic-messages)", path, name, kind), 0)
    end
    local base = p.base_url or p.baseUrl
    local compat = p.compat or {}
    local spec = wire.spec(api, kind, {
      name = name, base_url = base, base_url_override = base, api_key = p.api_key or p.apiKey,
      headers = p.headers, key_env = nil, models = p.models, auth = p.auth,
      max_tokens_field = compat.max_tokens_field or compat.maxTokensField or "max_tokens",
    })
    spec.models = p.models
    spec.auth = p.auth
    api.register("provider", spec)
    state.models[name] = p.models or {}
  end
end
