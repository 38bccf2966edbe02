-- anthropic: the Messages API, keyed by ANTHROPIC_API_KEY.
local messages = require("fen.lib.anthropic_messages")

return function(api)
  api.register("provider", messages(api, {
    name = "anthropic", base_url = "https://api.anthropic.com/v1", key_env = "ANTHROPIC_API_KEY",
  }))
end
