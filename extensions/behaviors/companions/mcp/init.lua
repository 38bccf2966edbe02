-- mcp: tools from MCP servers (the client itself is native: `fen.native.mcp`).
-- Servers come from `~/.config/fen/mcp.json`, a project's `.mcp.json` and `.fen/mcp.json`
-- (`{"mcpServers": {NAME: {command, args, env, cwd} | {url, headers}}}`); project servers only
-- in a trusted folder. They connect in the background once the agent starts (never delaying
-- a prompt or a request), and their tools register as they arrive, as `mcp__SERVER__TOOL`.
--   /mcp                  lists the servers: status, tools, transport, log
--   /mcp reconnect NAME   restarts one
--   /mcp login NAME       the OAuth login of a server that answered 401 (offered at once in
--                         a session; headless runs name `fen mcp login NAME`), then reconnects
-- When all MCP schemas together would take more than 10% of the context window, the tools are
-- registered with `exposure = "search"` (callable, not offered) and one `mcp_search{query}`
-- tool returns matching schemas, offering those tools from then on.
local native = require("fen.native")
local project = require("fen.lib.project")

local SEARCH_SHARE = 0.10   -- of the context window, for all MCP schemas together
local CHARS_PER_TOKEN = 4
local MAX_MATCHES = 8

local function text_result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

return function(api)
  local state = api.state()
  -- A reload runs this entry again: the watcher of an older instance stops at its next call.
  state.gen = (state.gen or 0) + 1
  local gen = state.gen
  state.noticed = state.noticed or {}

  local registered = {}   -- fen tool name -> {spec, server, epoch, found}
  local seen_epoch = {}   -- server name -> the epoch whose tools are registered
  local search_mode = false
  local search_registered = false
  local configured, watching = false, false

  local pending = {}   -- notices not shown yet
  local offers = {}    -- servers that answered 401: a login is offered (interactive runs)

  --- Nobody watches a screen: one-shot commands, `-p`, `--mode json`.
  local function headless()
    return (api.kernel.run_options() or {}).headless ~= false
  end

  --- Shows what waits: on stderr when nobody watches a screen, else through the presenter
  --- (which may wait, so only from a coroutine).
  local function flush()
    if #pending == 0 then return end
    if headless() then
      for _, text in ipairs(pending) do io.stderr:write("fen: " .. text .. "\n") end
      pending = {}
    elseif coroutine.isyieldable() then
      local list = pending
      pending = {}
      for _, text in ipairs(list) do pcall(api.ui.notify, text) end
    end
  end

  local function notify(text)
    api.log("warn", text)
    pending[#pending + 1] = text
  end

  --- Reads the config files (once per load); reports problems and untrusted servers.
  local function configure(trusted)
    if configured then return end
    configured = true
    local report = native.mcp.configure({ trusted = trusted })
    for _, e in ipairs(report.errors) do notify("mcp config: " .. e) end
    local text = project.untrusted_notice("mcp", report.untrusted)
    if text and not state.untrusted_noticed then
      state.untrusted_noticed = true
      notify(text)
    end
  end

  local function budget_bytes()
    local ok, window = pcall(api.turn.context_window)
    if not ok or type(window) ~= "number" then window = 128000 end
    return window * SEARCH_SHARE * CHARS_PER_TOKEN
  end

  local function call(server, tool, args)
    local r, err = native.mcp.call(server, tool, args)
    local details = { server = server, tool = tool }
    if not r then return text_result("error: " .. err, true, details) end
    local content = r.content
    if #content == 0 then
      content = { { type = "text", text = r.is_error and "error: the tool failed without a message" or "(no output)" } }
    end
    return { content = content, is_error = r.is_error, details = details }
  end

  local function register_tool(s, t)
    local params = t.parameters
    if type(params) ~= "table" then params = {} end
    if params.type == nil then params.type = "object" end
    local desc = t.description ~= "" and t.description or ("The " .. t.mcp_name .. " tool.")
    local spec = {
      name = t.name,
      label = s.name .. " " .. t.mcp_name,
      description = desc .. "\n(MCP server " .. s.name .. ", tool " .. t.mcp_name .. ")",
      parameters = params,
      -- Permissions ask for MCP tools unless the server says the tool only reads.
      risk = t.read_only and "read" or "shell",
      concurrency = t.read_only and "parallel_safe" or "exclusive",
      exposure = search_mode and "search" or "direct",
      execute = function(args) return call(s.name, t.mcp_name, args) end,
    }
    local old = registered[t.name]
    if old and old.found then spec.exposure = "direct" end
    api.register("tool", spec)
    registered[t.name] = { spec = spec, server = s.name, epoch = s.epoch, found = old and old.found,
      size = #t.name + #desc + #t.schema_json, schema_json = t.schema_json, desc = desc }
  end

  local register_search

  --- Brings the registry up to date with the servers: new tools registered, the exposure
  --- mode switched when the schemas outgrow their share, failures announced once.
  local function sync()
    if state.gen ~= gen then return false end
    -- The cheap poll (no schemas); a server's tools are read only when its epoch is new.
    local servers = native.mcp.servers({ tools = false })
    local total = 0
    for _, s in ipairs(servers) do
      if s.status == "connected" and seen_epoch[s.name] ~= s.epoch then
        seen_epoch[s.name] = s.epoch
        local full = native.mcp.servers({ name = s.name })[1]
        for _, t in ipairs(full and full.tools or {}) do register_tool(full, t) end
      end
      total = total + s.schema_bytes
      local key = s.name .. "#" .. s.epoch
      if s.status == "failed" and not state.noticed[key] then
        state.noticed[key] = true
        if (s.error or ""):find("needs login", 1, true) then
          -- An OAuth server answered 401: a person is asked whether to log in now (see
          -- `offer_logins`); a headless run says which command logs in.
          if headless() then
            notify(string.format("mcp: server %s needs login: run `fen mcp login %s`", s.name, s.name))
          else
            offers[#offers + 1] = s.name
          end
        else
          notify(string.format("mcp: server %s failed: %s (log %s; /mcp reconnect %s)",
            s.name, s.error or "?", s.log, s.name))
        end
      end
    end
    local want = total > budget_bytes()
    if want ~= search_mode then
      search_mode = want
      for _, r in pairs(registered) do
        r.spec.exposure = (want and not r.found) and "search" or "direct"
      end
    end
    if want and not search_registered then register_search() end
    flush()
    return true
  end

  --- `mcp_search{query}`: the MCP tools whose name or description holds every word of the
  --- query (case-insensitive), best first; each found tool is offered from then on.
  register_search = function()
    search_registered = true
    api.register("tool", {
      name = "mcp_search",
      label = "mcp search",
      description = "Find tools of the connected MCP servers (there are too many to list them all). Returns the matching tools' names, descriptions and parameter schemas; the tools found become callable by name right after. Query: words from the tool or server name or what it does.",
      risk = "read",
      concurrency = "parallel_safe",
      parameters = {
        type = "object",
        properties = { query = { type = "string", description = "Words to look for, e.g. \"github issue\"." } },
        required = { "query" },
      },
      execute = function(args)
        sync()
        local words = {}
        for w in tostring(args.query or ""):lower():gmatch("[%w]+") do words[#words + 1] = w end
        local hits = {}
        for name, r in pairs(registered) do
          local hay = (name .. " " .. r.desc):lower()
          local score = 0
          for _, w in ipairs(words) do
            if hay:find(w, 1, true) then score = score + (name:lower():find(w, 1, true) and 2 or 1) end
          end
          if score > 0 then hits[#hits + 1] = { name = name, r = r, score = score } end
        end
        table.sort(hits, function(a, b)
          if a.score ~= b.score then return a.score > b.score end
          return a.name < b.name
        end)
        if #hits == 0 then
          return text_result("no MCP tool matches \"" .. tostring(args.query) .. "\"", false, { matches = {} })
        end
        local out, names = {}, {}
        for i = 1, math.min(#hits, MAX_MATCHES) do
          local h = hits[i]
          h.r.found = true
          h.r.spec.exposure = "direct"
          names[#names + 1] = h.name
          out[#out + 1] = string.format("## %s\n%s\nparameters: %s", h.name, h.r.desc, h.r.schema_json)
        end
        local more = #hits > MAX_MATCHES and string.format("\n\n(%d more match; refine the query)", #hits - MAX_MATCHES) or ""
        return text_result(table.concat(out, "\n\n") .. more .. "\n\nThese tools can be called now.", false, { matches = names })
      end,
    })
  end

  --- What `/mcp reconnect NAME` says: the server's state once it settled.
  local function reconnect(name)
    configure((api.kernel.run_options() or {}).trusted == true)
    local ok, err = native.mcp.reconnect(name)
    if not ok then return "error: " .. err end
    native.mcp.wait({ name })
    sync()
    for _, s in ipairs(native.mcp.servers({ tools = false })) do
      if s.name == name then
        if s.status == "connected" then
          return string.format("mcp: %s connected (%d tools)", s.name, s.tool_count)
        end
        return string.format("mcp: %s %s: %s (log %s)", s.name, s.status, s.error or "?", s.log)
      end
    end
    return "mcp: " .. name .. " is gone"
  end

  --- The OAuth login of server `name` (browser and loopback, as `fen mcp login`), then a
  --- reconnect with the new token.
  local function login(name, no_browser)
    local trusted = (api.kernel.run_options() or {}).trusted == true
    local ok, err = native.auth.mcp_login(name, {
      trusted = trusted, no_browser = no_browser,
      on_prompt = function(p)
        api.ui.notify((p.opened and "Your browser was opened; if not, open this URL to sign in to "
          or "Open this URL to sign in to ") .. name .. ":\n" .. p.url)
      end,
    })
    if not ok then return "mcp: login to " .. name .. " failed: " .. tostring(err) end
    return reconnect(name)
  end

  --- Asks whether to log in to each server that answered 401, and does it when told to.
  --- Runs from the watcher (a coroutine of its own), never inside a turn's request.
  local function offer_logins()
    while #offers > 0 and state.gen == gen do
      local name = table.remove(offers, 1)
      local choice = api.ui.select(string.format("MCP server %s needs login (it answered 401). Log in now?", name),
        { "Log in now (opens the browser)", "Not now" })
      local text
      if choice == 1 then
        text = login(name, false)
      else
        text = string.format("mcp: server %s needs login: type /mcp login %s when you want its tools", name, name)
      end
      pcall(api.ui.notify, text)
    end
  end

  local function watch()
    if watching then return end
    watching = true
    native.mcp.watch(function()
      local going = sync()
      if going then offer_logins() end
      return going
    end)
  end

  --- Whether a `--tools` pattern can match some name that starts with `prefix`: its literal
  --- head agrees with the prefix up to the first wildcard.
  local function pattern_may_match_prefix(pattern, prefix)
    for i = 1, #prefix do
      local c = pattern:sub(i, i)
      if c == "" then return false end
      if c == "*" or c == "?" or c == "[" or c == "{" or c == "\\" then return true end
      if c ~= prefix:sub(i, i) then return false end
    end
    return true
  end

  --- Whether this run could offer any MCP tool (`--no-tools`, or `--tools` without a pattern
  --- that can match `mcp__...`, as subagent children usually run, means no server is started).
  local function mcp_tools_possible(opts)
    if opts.no_tools then return false end
    if type(opts.tool_patterns) ~= "table" then return true end
    for _, p in ipairs(opts.tool_patterns) do
      if pattern_may_match_prefix(p, "mcp__") then return true end
    end
    return false
  end

  -- Sessions: connect in the background once the agent exists (the folder's trust is known).
  local function begin()
    local opts = api.kernel.run_options() or {}
    if not mcp_tools_possible(opts) then return end
    configure(opts.trusted == true)
    watch()
    native.mcp.start()
    sync()
  end
  api.on("agent-started", function()
    state.started = true
    begin()
  end)
  -- A /reload inside a session: pick up the config again and keep registering.
  if state.started then begin() end

  -- Whatever connected by now is offered in this request (the watcher usually did it already).
  api.register("hook", {
    name = "mcp-sync",
    before_request = function() sync() end,
  })

  local function status_lines()
    local servers = native.mcp.servers({ tools = false })
    if #servers == 0 then
      return "no MCP servers configured (~/.config/fen/mcp.json, .mcp.json, .fen/mcp.json; see docs/mcp.md)"
    end
    local lines = {}
    for _, s in ipairs(servers) do
      lines[#lines + 1] = string.format("%-16s %-10s %3d tools  %-5s log %s%s", s.name, s.status, s.tool_count,
        s.transport, s.log, s.error and ("\n    " .. s.error) or "")
    end
    return table.concat(lines, "\n")
  end

  api.register("command", {
    name = "mcp", order = 58,
    description = "MCP servers: `/mcp` lists them (status, tools, log); `/mcp reconnect NAME` restarts one; `/mcp login NAME` / `/mcp logout NAME` for servers that need OAuth.",
    handler = function(args)
      local sub, rest = (args or ""):match("^%s*(%S*)%s*(.-)%s*$")
      if sub == "" or sub == "list" then return status_lines() end
      local trusted = (api.kernel.run_options() or {}).trusted == true
      if sub == "login" or sub == "logout" then
        local no_browser = rest:find("--no-browser", 1, true) ~= nil
        rest = rest:gsub("%s*%-%-no%-browser%s*", " "):match("^%s*(.-)%s*$")
        if rest == "" then return "usage: /mcp " .. sub .. " NAME [--no-browser]" end
        if sub == "logout" then
          local had, err = native.auth.mcp_logout(rest, { trusted = trusted })
          if had == nil then return "error: " .. tostring(err) end
          return had and ("mcp: logged out of " .. rest) or ("mcp: not logged in to " .. rest)
        end
        watch()
        return login(rest, no_browser)
      end
      if sub == "reconnect" then
        if rest == "" then return "usage: /mcp reconnect NAME" end
        watch()
        return reconnect(rest)
      end
      return "usage: /mcp [list] | /mcp reconnect NAME | /mcp login NAME | /mcp logout NAME"
    end,
  })

  api.register("introspect", {
    name = "mcp",
    description = "MCP servers and their tools.",
    snapshot = function()
      local rows = {}
      for _, s in ipairs(native.mcp.servers()) do
        local tools = {}
        for _, t in ipairs(s.tools) do tools[#tools + 1] = { name = t.name, mcp_name = t.mcp_name, read_only = t.read_only } end
        rows[#rows + 1] = { name = s.name, status = s.status, error = s.error, transport = s.transport,
          log = s.log, source = s.source, tools = tools }
      end
      return { servers = rows }
    end,
    -- One-shot commands: connect (every server, or the one a tool name belongs to), wait
    -- within the start-up timeouts, register what connected.
    settle = function(opts)
      opts = opts or {}
      configure(opts.trusted == true)
      if opts.tool then
        local server = native.mcp.server_for_tool(opts.tool)
        if not server then return end
        native.mcp.start(server)
        native.mcp.wait({ server })
      else
        native.mcp.start()
        native.mcp.wait()
      end
      sync()
    end,
  })
end
