-- openai: Chat Completions (`openai`) and the Responses API (`openai-responses`), keyed by
-- OPENAI_API_KEY. --base-url points either at any compatible server.
local wire = require("fen.lib.wire")

local MODELS = {
  { id = "gpt-5", context_window = 400000, max_output_tokens = 128000, reasoning = true },
  { id = "gpt-5-mini", context_window = 400000, max_output_tokens = 128000, reasoning = true },
  { id = "gpt-4.1", context_window = 1047576, max_output_tokens = 32768, reasoning = false },
}

local models = require("fen.lib.models")

return function(api)
  local chat = wire.spec(api, "openai-completions", {
    name = "openai", base_url = "https://api.openai.com/v1", key_env = "OPENAI_API_KEY",
    max_tokens_field = "max_completion_tokens",
  })
  chat.models = MODELS
  if not models.defines("openai") then api.register("provider", chat) end
  local resp = wire.spec(api, "openai-responses", {
    name = "openai-responses", base_url = "https://api.openai.com/v1", key_env = "OPENAI_API_KEY",
  })
  resp.models = MODELS
  if not models.defines("openai-responses") then api.register("provider", resp) end
end
