-- auth: the first-party auth backends (ChatGPT sign-in and GitHub Copilot, their flows and
-- token store in native.auth), the providers that use them, and /login, /logout.
-- Tokens stay in native code and in the request headers of the provider that owns them: this
-- file never logs, stores or shows one.
local native = require("fen.native")
local wire = require("fen.lib.wire")

local BACKENDS = {
  ["openai-chatgpt"] = "ChatGPT Plus/Pro/Team sign-in (the Codex backend)",
  ["github-copilot"] = "GitHub Copilot subscription (github.com or GitHub Enterprise)",
}
local ORDER = { "openai-chatgpt", "github-copilot" }

-- Used when the plan's model list cannot be read (not logged in yet, offline).
local CHATGPT_MODELS = {
  { id = "gpt-5-codex", context_window = 400000, max_output_tokens = 128000, reasoning = true },
  { id = "gpt-5", context_window = 400000, max_output_tokens = 128000, reasoning = true },
}
local COPILOT_MODELS = {
  { id = "gpt-4.1", context_window = 128000, max_output_tokens = 16384, reasoning = false },
  { id = "gpt-5-mini", context_window = 128000, max_output_tokens = 64000, reasoning = true },
}

local function describe(st)
  local parts = { st.provider }
  if st.user then parts[#parts + 1] = "user " .. st.user end
  if st.email then parts[#parts + 1] = st.email end
  if st.host and st.host ~= "github.com" then parts[#parts + 1] = "host " .. st.host end
  if st.plan then parts[#parts + 1] = "plan " .. st.plan end
  if st.expires_at then parts[#parts + 1] = "token expires " .. os.date("!%Y-%m-%d %H:%M UTC", st.expires_at) end
  return table.concat(parts, "  ")
end

local function prompt_text(p)
  if p.kind == "code" then
    return string.format("Open %s and enter the code %s", p.url, p.code)
  end
  return string.format("%s this URL to sign in:\n%s", p.opened and "Your browser was opened; if not, open" or "Open", p.url)
end

return function(api)
  for _, name in ipairs(ORDER) do
    api.register("auth-backend", {
      name = name,
      description = BACKENDS[name],
      credential = function()
        local c, err = native.auth.credential(name)
        if not c then error(err, 0) end
        return c
      end,
      refresh = function(ctx)
        -- The refused token forces a refresh, unless another process already replaced it.
        local c, err = native.auth.credential(name, (ctx and ctx.token) or "")
        if not c then error(err, 0) end
        return c
      end,
      login = function(opts) return native.auth.login(name, opts) end,
      logout = function() return native.auth.logout(name) end,
      status = function()
        local rows, err = native.auth.status()
        if not rows then error(err, 0) end
        for _, r in ipairs(rows) do
          if r.provider == name then return r end
        end
        return nil
      end,
    })
  end

  local chatgpt_cfg = {
    name = "openai-chatgpt", base_url = "https://chatgpt.com/backend-api/codex", auth = "openai-chatgpt",
    -- The Codex backend takes no output cap and wants instructions in every request.
    adjust_body = function(body)
      body.max_output_tokens = nil
      body.instructions = body.instructions or ""
    end,
  }
  local chatgpt = wire.spec(api, "openai-responses", chatgpt_cfg)
  chatgpt.auth = "openai-chatgpt"
  chatgpt.models = CHATGPT_MODELS
  chatgpt.list_models = function() return native.auth.models("openai-chatgpt") end
  api.register("provider", chatgpt)

  local copilot = wire.spec(api, "openai-completions", {
    name = "github-copilot", base_url = "https://api.githubcopilot.com", auth = "github-copilot",
    max_tokens_field = "max_tokens",
  })
  copilot.auth = "github-copilot"
  copilot.models = COPILOT_MODELS
  copilot.list_models = function() return native.auth.models("github-copilot") end
  api.register("provider", copilot)

  local function backend(name)
    for _, b in ipairs(api.kernel.contributions("auth-backend")) do
      if b.name == name then return b.spec end
    end
  end

  local function names()
    local out = {}
    for _, b in ipairs(api.list("auth-backend")) do
      if not b.shadowed_by and b.login then out[#out + 1] = b.name end
    end
    table.sort(out)
    return out
  end

  -- /login [PROVIDER] [--device] [--host HOST]; /logout [PROVIDER].
  local function parse(args)
    local words = {}
    for w in (args or ""):gmatch("%S+") do words[#words + 1] = w end
    local o = { }
    local i = 1
    while i <= #words do
      local w = words[i]
      if w == "--device" then o.device = true
      elseif w == "--no-browser" then o.no_browser = true
      elseif w == "--host" then i = i + 1; o.host = words[i]
      else o.name = o.name or w end
      i = i + 1
    end
    return o
  end

  local function pick(title)
    local list = names()
    local choice = api.ui.select(title, list)
    return choice and list[choice]
  end

  api.register("command", {
    name = "login",
    description = "Log in with a subscription: /login openai-chatgpt | github-copilot [--host HOST] [--device].",
    idle_only = true,
    complete = function(prefix)
      local out = {}
      for _, n in ipairs(names()) do
        if n:sub(1, #prefix) == prefix then out[#out + 1] = n end
      end
      return out
    end,
    handler = function(args)
      local o = parse(args)
      local name = o.name or pick("Log in to")
      if not name then return "usage: /login " .. table.concat(names(), " | ") end
      local refused = native.auth.refusal(name)
      if refused then return refused end
      local b = backend(name)
      if not b or not b.login then
        return string.format("no login named %q (known: %s)", name, table.concat(names(), ", "))
      end
      local st, err = b.login({
        device = o.device, no_browser = o.no_browser, host = o.host,
        on_prompt = function(p) api.ui.notify(prompt_text(p)) end,
      })
      if not st then return "login failed: " .. tostring(err) end
      return "Logged in: " .. describe(st)
    end,
  })

  api.register("command", {
    name = "logout",
    description = "Forget a subscription login: /logout openai-chatgpt | github-copilot.",
    idle_only = true,
    handler = function(args)
      local o = parse(args)
      local name = o.name or pick("Log out of")
      if not name then return "usage: /logout " .. table.concat(names(), " | ") end
      local b = backend(name)
      if not b or not b.logout then return string.format("no login named %q", name) end
      local done, err = b.logout()
      if done == nil and err then return "logout failed: " .. tostring(err) end
      return done and ("Logged out of " .. name) or ("Not logged in to " .. name)
    end,
  })
end
