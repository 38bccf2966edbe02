-- builtin-tools: registers the seven tools. Each file returns a tool spec; this file only
-- registers them, so a user extension can shadow any one tool by registering the same name.
return function(api)
  for _, name in ipairs({ "read", "write", "edit", "ls", "grep", "find", "bash" }) do
    local make = require("tools." .. name)
    api.register("tool", make(api))
  end
end
