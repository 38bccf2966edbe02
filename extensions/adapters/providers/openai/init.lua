-- openai: Chat Completions (`openai`) and the Responses API (`openai-responses`), keyed by
-- OPENAI_API_KEY. --base-url points either at any compatible server.
local completions = require("fen.lib.openai_completions")
local responses = require("fen.lib.openai_responses")

return function(api)
  api.register("provider", completions(api, {
    name = "openai", base_url = "https://api.openai.com/v1", key_env = "OPENAI_API_KEY",
    max_tokens_field = "max_completion_tokens",
  }))
  api.register("provider", responses(api, {
    name = "openai-responses", base_url = "https://api.openai.com/v1", key_env = "OPENAI_API_KEY",
  }))
end
