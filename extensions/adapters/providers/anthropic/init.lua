-- anthropic: the Messages API, keyed by ANTHROPIC_API_KEY.
local wire = require("fen.lib.wire")

local models = require("fen.lib.models")

return function(api)
  local spec = wire.spec(api, "anthropic-messages", {
    name = "anthropic", base_url = "https://api.anthropic.com/v1", key_env = "ANTHROPIC_API_KEY",
  })
  spec.models = {
    { id = "claude-sonnet-4-5", context_window = 200000, max_output_tokens = 64000, reasoning = true },
    { id = "claude-opus-4-1", context_window = 200000, max_output_tokens = 32000, reasoning = true },
    { id = "claude-haiku-4-5", context_window = 200000, max_output_tokens = 64000, reasoning = true },
  }
  if not models.defines("anthropic") then api.register("provider", spec) end
end
