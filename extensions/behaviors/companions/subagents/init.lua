-- subagents: delegate a task to a child `fen` (headless, `--mode json`) and get its final
-- answer back (the native side is `fen.native.subagent`).
--   subagent{agent | prompt, task, cwd?, model?, provider?, background?, timeout_s?, max_turns?}
--   subagent_ctl{action = list | wait | cancel | show, run_id?, timeout_s?}
--   /agents                  lists the definitions; panel `subagents`; status item `agents:N`
-- Definitions are markdown files with YAML front matter (`name`, `description`; optional
-- `model`, `provider`, `tools`, `max_turns`, `timeout_s`), the body being the child's system
-- prompt. Discovery, first name wins: `.fen/agents/` (working directory up to the repository
-- root; trusted folders only), `~/.config/fen/agents/`, `.claude/agents/` (trusted folders
-- only), `~/.claude/agents/`, then the first-party scout, reviewer and planner.
-- Limits: 4 children running at once; a child's tools are the definition's tools within the
-- parent's (never `subagent` unless the definition names it); the parent's permission mode
-- and trust pass to the child, and the child's permission asks come back to the parent
-- (`--on-ask parent`). Cancelling the turn kills foreground children; background ones are
-- announced once when they finish and are stopped when fen exits.
local native = require("fen.native")

local DEFAULT_WAIT_S, MAX_WAIT_S = 30, 600
local DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S = 1800, 24 * 3600
local DEFAULT_MAX_TURNS = 100
local MAX_ANSWER_BYTES = 60 * 1024
local CONTROL_TOOLS = { subagent = true, subagent_ctl = true }
-- Claude Code's tool names, for `.claude/agents` definitions.
local PEER_TOOLS = { glob = "find", ls = "ls", read = "read", grep = "grep", bash = "bash", edit = "edit",
  write = "write", multiedit = "edit" }

local function result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

local project_dirs = require("fen.lib.project").dirs

--- A definition's tools as a list of names (a YAML list or a comma-separated string); nil
--- when it names none (all of the parent's).
local function tool_list(v, peer)
  local names = {}
  if type(v) == "string" then
    for n in v:gmatch("[^,%s]+") do names[#names + 1] = n end
  elseif type(v) == "table" then
    for _, n in ipairs(v) do if type(n) == "string" then names[#names + 1] = n end end
  else
    return nil
  end
  if peer then
    local mapped = {}
    for _, n in ipairs(names) do mapped[#mapped + 1] = PEER_TOOLS[n:lower()] or n:lower() end
    names = mapped
  end
  return names
end

--- Why a definition is not valid, or nil.
local function invalid(f)
  if type(f.name) ~= "string" or f.name == "" then return "front matter has no `name`" end
  if #f.name > 64 or not f.name:match("^[%w][%w_.-]*$") then
    return "`name` must be at most 64 letters, digits, -, _ or ."
  end
  if type(f.description) ~= "string" or f.description:match("^%s*$") then return "front matter has no `description`" end
  for _, k in ipairs({ "max_turns", "timeout_s" }) do
    if f[k] ~= nil and (type(f[k]) ~= "number" or f[k] < 1) then return "`" .. k .. "` must be a number of at least 1" end
  end
  for _, k in ipairs({ "model", "provider" }) do
    if f[k] ~= nil and type(f[k]) ~= "string" then return "`" .. k .. "` must be a string" end
  end
  if f.session ~= nil and type(f.session) ~= "boolean" then return "`session` must be true or false" end
  if f.tools ~= nil and type(f.tools) ~= "string" and type(f.tools) ~= "table" then
    return "`tools` must be a list or a comma-separated string"
  end
  return nil
end

return function(api)
  local state = api.state()
  state.seen = state.seen or {}       -- run id -> true once the model knows it finished
  state.runs = state.runs or {}       -- run id -> {agent, task, background}
  state.seq = state.seq or 0

  -- The parent's effective permission mode, as its policy reports it on every decision.
  api.on("permission-decision", function(ev)
    if type(ev.mode) == "string" then state.mode = ev.mode end
  end)

  local function trusted() return api.kernel.run_options().trusted == true end

  --- Definition roots in precedence order: `{path, scope, peer}`.
  local function roots()
    local out, home = {}, os.getenv("HOME") or ""
    local project = project_dirs()
    for _, d in ipairs(project) do out[#out + 1] = { path = d .. "/.fen/agents", scope = "project" } end
    out[#out + 1] = { path = native.paths.config_dir .. "/agents", scope = "user" }
    for _, d in ipairs(project) do out[#out + 1] = { path = d .. "/.claude/agents", scope = "project", peer = true } end
    out[#out + 1] = { path = home .. "/.claude/agents", scope = "user", peer = true }
    return out
  end

  local function definition(f, body, scope, location, peer)
    local model = f.model
    -- Claude Code's model aliases mean nothing to other providers: the parent's model is used.
    if peer and (model == "inherit" or model == "sonnet" or model == "opus" or model == "haiku") then model = nil end
    return {
      name = f.name, description = (f.description:gsub("%s+$", "")), model = model, provider = f.provider,
      tools = tool_list(f.tools, peer), max_turns = f.max_turns, timeout_s = f.timeout_s,
      system = (body or ""):gsub("^%s+", ""), scope = scope, location = location, session = f.session == true,
      -- `isolation: worktree` (Claude Code's key): each run works in its own git worktree.
      isolation = f.isolation,
    }
  end

  --- Every definition: `{agents (winners by name), rows (for `fen list agents`)}`.
  local function discover()
    local rs = roots()
    local paths = {}
    for i, r in ipairs(rs) do paths[i] = r.path end
    local by_name, rows, order = {}, {}, {}
    local function add(def)
      local winner = by_name[def.name]
      local row = { name = def.name, description = def.description, scope = def.scope, location = def.location,
        status = "ok", model = def.model, provider = def.provider, tools = def.tools,
        max_turns = def.max_turns, timeout_s = def.timeout_s }
      if winner then
        row.shadowed_by = winner.location
      else
        by_name[def.name] = def
        order[#order + 1] = def.name
      end
      rows[#rows + 1] = row
    end
    local trust = trusted()
    for _, doc in ipairs(native.markup.scan_files(paths, ".md")) do
      local r = rs[doc.root]
      local why = doc.error or invalid(doc.fields)
      if not why and r.scope == "project" and not trust then
        why = "this folder is not trusted (run with --trust, or trust it at the interactive prompt)"
      end
      if why then
        rows[#rows + 1] = { status = "invalid", location = doc.file, message = why, scope = r.scope }
      else
        add(definition(doc.fields, doc.body, r.scope, doc.file, r.peer))
      end
    end
    local builtin = api.load("agents")
    for _, name in ipairs({ "scout", "reviewer", "planner" }) do
      local fm = native.markup.front_matter(builtin[name])
      if fm then add(definition(fm.fields, fm.body, "builtin", "builtin:" .. name, false)) end
    end
    return { by_name = by_name, rows = rows, order = order }
  end

  --- The provider's key variable, so the child (fen itself) can call the model.
  local function key_env(provider)
    for _, p in ipairs(api.list("provider")) do
      if p.name == provider and type(p.key_env) == "string" then return { p.key_env } end
    end
    return {}
  end

  --- The child's tools: the definition's (or all) within the parent's allowed ones; the
  --- subagent tools only when the definition names them. nil, message when none is left.
  local function child_tools(def)
    local parent = {}
    for _, n in ipairs(api.kernel.run_options().allowed_tools or {}) do parent[n] = true end
    local out, wanted = {}, def.tools
    if wanted then
      for _, n in ipairs(wanted) do
        if parent[n] then out[#out + 1] = n end
      end
    else
      for n in pairs(parent) do
        if not CONTROL_TOOLS[n] then out[#out + 1] = n end
      end
      table.sort(out)
    end
    if #out == 0 then
      local have = {}
      for n in pairs(parent) do have[#have + 1] = n end
      table.sort(have)
      return nil, string.format("error: agent %s would have no tools: it asks for [%s], this session offers [%s]; nothing was started",
        def.name, table.concat(wanted or {}, ", "), table.concat(have, ", "))
    end
    return out
  end

  --- Answers a child's permission ask with the parent's resolver: headless parents by their
  --- own `--on-ask`, interactive ones by asking the person, naming the child.
  local function resolver(label)
    return function(req)
      local o = api.kernel.run_options()
      if o.headless then
        if o.on_ask == "allow" then return "y" end
        -- A child that itself runs children: the grandchild's ask goes further up.
        if o.on_ask == "parent" and type(req) == "table" then
          local q = {}
          for k, v in pairs(req) do q[k] = v end
          q.title = "[subagent " .. label .. "] " .. tostring(req.title or "permission")
          q.question = "[subagent " .. label .. "] " .. tostring(req.question or "")
          q.text = "[subagent " .. label .. "] " .. tostring(req.text or req.question or "")
          return require("fen.lib.parent_ask").ask(q) or "n: the parent fen is gone"
        end
        return "n: the parent fen runs headless (--on-ask " .. tostring(o.on_ask or "deny") .. ") and no one approved it"
      end
      if type(req) ~= "table" then return "n" end
      local prefix = "[subagent " .. label .. "] "
      local q = {}
      for k, v in pairs(req) do q[k] = v end
      q.title = prefix .. tostring(req.title or "permission")
      q.question = prefix .. tostring(req.question or "")
      q.text = prefix .. tostring(req.text or req.question or "")
      q.subagent = label
      local answer = api.ui.ask(q)
      return type(answer) == "string" and answer or "n"
    end
  end

  local function redraw() pcall(api.emit, { type = "redraw" }) end

  --- The model-facing report of a finished run and whether it is an error.
  local report_inner

  --- For a run in its own worktree: its branch and diff stat, or that it was removed.
  local function worktree_note(info)
    local wt = (state.runs[info.id] or {}).worktree
    if not wt then return nil end
    if not native.fs.stat(wt.path) then
      return string.format("[worktree %s: no changes; removed]", wt.branch)
    end
    local r = native.process.run({ command = "git status --short | head -n 30; git diff --stat HEAD | tail -n 1", cwd = wt.path, timeout_ms = 20000 })
    local stat = r and r.text and r.text:gsub("%s+$", "") or "?"
    return string.format("[worktree: branch %s in %s; merge with `git merge %s`, remove with `fen worktree remove %s`]\n%s",
      wt.branch, wt.path, wt.branch, wt.name, stat)
  end

  local function report(info)
    local text, is_error, details = report_inner(info)
    local note = worktree_note(info)
    if note then
      text = text .. "\n" .. note
      details.worktree = (state.runs[info.id] or {}).worktree
    end
    return text, is_error, details
  end

  function report_inner(info)
    local r = info.result or {}
    local details = { run_id = info.id, agent = info.label, status = r.status or info.status,
      exit_status = info.status, exit_code = info.exit_code, signal = info.signal, turns = info.turns,
      usage = r.usage, transcript = info.transcript, elapsed_ms = info.elapsed_ms }
    if info.killed then
      details.status = "cancelled"
      return "[cancelled] subagent " .. info.id .. " (" .. info.label .. ") was stopped", true, details
    end
    if info.result and r.status == "ok" and info.exit_code == 0 then
      local text = native.truncate.head(r.final_text or "", 100000, MAX_ANSWER_BYTES).rendered
      if text == "" then text = "(the subagent gave no final text)" end
      return text, false, details
    end
    local parts = { string.format("error: subagent %s (%s) failed: %s", info.id, info.label, info.status) }
    if r.status and r.status ~= "ok" then
      parts[#parts + 1] = "its run ended " .. tostring(r.status) .. (r.error and (": " .. tostring(r.error)) or "")
    end
    if info.bad_lines > 0 then parts[#parts + 1] = string.format("%d output line(s) were not JSON", info.bad_lines) end
    if not info.result then parts[#parts + 1] = "it printed no result line" end
    local tail = native.sanitize(info.tail or "")
    if tail ~= "" then parts[#parts + 1] = "output tail:\n" .. tail end
    if info.transcript then parts[#parts + 1] = "transcript: " .. info.transcript end
    return table.concat(parts, "\n"), true, details
  end

  --- Announces a background run's end once, before the parent's next model call.
  local function announce(info)
    redraw()
    if state.seen[info.id] or info.killed then return end
    state.seen[info.id] = true
    local text, is_error = report(info)
    pcall(api.enqueue, "steering", string.format(
      "[fen: background subagent %s (%s) has finished%s]\n%s", info.id, info.label,
      is_error and " with an error" or "", native.truncate.head(text, 200, 8192).rendered))
  end

  local function start(args, ctx)
    local agents = discover()
    local def
    if type(args.agent) == "string" and args.agent ~= "" then
      def = agents.by_name[args.agent]
      if not def then
        return nil, "error: no agent named " .. args.agent .. "; known: " .. table.concat(agents.order, ", ")
      end
    elseif type(args.prompt) == "string" and args.prompt ~= "" then
      def = { name = "adhoc", description = "", system = args.prompt }
    else
      return nil, "error: pass `agent` (one of " .. table.concat(agents.order, ", ") .. ") or `prompt` (a system prompt)"
    end
    local tools, err = child_tools(def)
    if not tools then return nil, err end
    local o = api.kernel.run_options()
    local current = api.turn.model() or {}
    local provider = args.provider or def.provider or current.provider
    local model = args.model or def.model or (provider == current.provider and current.model) or nil
    local max_turns = math.floor(tonumber(args.max_turns) or def.max_turns or DEFAULT_MAX_TURNS)
    state.seq = state.seq + 1
    local transcript = string.format("%s/subagents/%d-%d-%s.jsonl", native.paths.state_dir,
      os.time(), state.seq, def.name)
    -- No session file unless the definition asks for one (`session: true`).
    local argv = { "--mode", "json", "--on-ask", "parent",
      "--max-turns", tostring(math.max(1, max_turns)), "--tools", table.concat(tools, ",") }
    local function add(...) for _, a in ipairs({ ... }) do argv[#argv + 1] = a end end
    if not def.session then add("--no-session") end
    if provider and provider ~= "" then add("--provider", provider) end
    if model and model ~= "" then add("--model", model) end
    if def.system and def.system ~= "" then add("--system", def.system) end
    -- The mode the parent's policy used for this very call (its `permission-decision`):
    -- `--permission-mode`, `/permissions MODE`, or the settings' mode.
    local mode = state.mode or o.permission_mode
    if mode then add("--permission-mode", mode) end
    if o.trusted then add("--trust") end
    -- The parent's --base-url belongs to the parent's provider.
    if o.base_url and provider == current.provider then add("--base-url", o.base_url) end
    if o.mock_script then add("--mock-script", o.mock_script) end
    if o.extension_root then add("--extension-root", o.extension_root) end
    for _, e in ipairs(o.extensions or {}) do add("--extension", e) end
    if o.session_backend and o.session_backend ~= "jsonl" then add("--session-backend", o.session_backend) end
    local worktree
    if def.isolation == "worktree" then
      -- The child runs `fen --worktree NAME`: branch fen/NAME under .fen/worktrees/NAME/ of the
      -- repository, removed by the child when it made no changes.
      local root = native.checkpoint.workspace_of(args.cwd or native.fs.cwd())
      local name = string.format("sa-%d-%d", os.time(), state.seq)
      worktree = { name = name, branch = "fen/" .. name, path = root .. "/.fen/worktrees/" .. name }
      add("--worktree", name)
    end
    add("--", args.task)
    local depth = tonumber(os.getenv("FEN_SUBAGENT_DEPTH") or "0") or 0
    local label = def.name
    local info, why = native.subagent.start({
      args = argv, cwd = args.cwd, label = label, background = args.background == true,
      transcript = transcript, keep_env = key_env(provider),
      env = { FEN_SUBAGENT_DEPTH = tostring(depth + 1) },
    }, { on_ask = resolver(label), on_exit = args.background and announce or redraw })
    if not info then return nil, "error: " .. why end
    -- Why the child runs where it runs, with which environment (`sandbox::plan`).
    api.log("info", string.format("subagent %s (%s): %s", info.id, label, tostring(info.plan)))
    state.runs[info.id] = { agent = label, task = args.task, background = args.background == true,
      timeout_s = tonumber(args.timeout_s) or def.timeout_s, worktree = worktree }
    redraw()
    return info
  end

  -- The model learns which agents exist (a user's own ones included) from the prompt, when
  -- it may call `subagent` at all. Found at load and on /reload, like skills.
  local listed = discover()
  api.prompt(function()
    local offered = false
    for _, n in ipairs(api.kernel.run_options().allowed_tools or {}) do
      if n == "subagent" then offered = true end
    end
    if not offered or #listed.order == 0 then return nil end
    local lines = { "Agents for the `subagent` tool (name: what it is for):" }
    for _, name in ipairs(listed.order) do
      local d = listed.by_name[name].description:gsub("%s+", " ")
      if #d > 300 then d = d:sub(1, 297) .. "..." end
      lines[#lines + 1] = "- " .. name .. ": " .. d
    end
    return table.concat(lines, "\n")
  end, { id = "subagents", title = "Available subagents", order = 82 })

  api.register("tool", {
    name = "subagent",
    label = "subagent",
    description = "Delegate a task to a subagent: a separate fen process with its own context that works on the task with a subset of your tools and returns its final answer. Use `agent` for a defined agent (scout: read-only exploration; reviewer: reviews a diff; planner: writes a plan; `/agents` lists all) or `prompt` for an ad-hoc system prompt. The task must be self-contained: the subagent sees nothing of this conversation. At most 4 run at once. background = true returns a run id at once; its answer is announced when it finishes (subagent_ctl waits, lists, shows or cancels runs).",
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        agent = { type = "string", description = "Name of an agent definition (see /agents)." },
        prompt = { type = "string", description = "An ad-hoc system prompt, instead of agent." },
        task = { type = "string", description = "The complete, self-contained task for the subagent." },
        cwd = { type = "string", description = "Working directory of the child (default: this one)." },
        model = { type = "string", description = "Model id (or provider/model) for the child (default: the definition's, else yours)." },
        provider = { type = "string", description = "Provider for the child (default: the definition's, else yours)." },
        background = { type = "boolean", description = "Return a run id at once instead of waiting for the answer." },
        timeout_s = { type = "number", minimum = 1, description = "Seconds before a foreground child is stopped (default: the definition's, else 1800)." },
        max_turns = { type = "integer", minimum = 1, description = "Most model calls of the child (default: the definition's, else 100)." },
      },
      required = { "task" },
    },
    execute = function(args, _, ctx)
      local info, err = start(args, ctx)
      if not info then return result(err, true) end
      if args.background then
        return result(string.format("started subagent %s (%s) in the background; its answer is announced when it finishes (or subagent_ctl{action = \"wait\", run_id = %q})", info.id, info.label, info.id),
          false, { run_id = info.id, agent = info.label, status = "running", transcript = info.transcript, background = true })
      end
      local timeout = math.min(state.runs[info.id].timeout_s or DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
      local done = native.subagent.wait(info.id, { wait_ms = math.floor(timeout * 1000) })
      state.seen[info.id] = true
      if done.cancelled then error("cancelled", 0) end
      if not done.finished then
        local killed = native.subagent.kill(info.id) or done
        redraw()
        return result(string.format("error: subagent %s (%s) timed out after %d s and was stopped (%d turns); transcript: %s",
          info.id, info.label, timeout, killed.turns or 0, tostring(killed.transcript)), true,
          { run_id = info.id, agent = info.label, status = "timeout", turns = killed.turns, transcript = killed.transcript })
      end
      redraw()
      return result(report(done))
    end,
  })

  local function describe(info)
    local meta = state.runs[info.id] or {}
    local status = info.finished and (info.result and info.result.status or info.status) or "running"
    if info.killed then status = "cancelled" end
    return string.format("%-5s %-10s %-9s %3d turns %5.0fs  %s%s", info.id, info.label, status, info.turns,
      info.elapsed_ms / 1000, meta.background and "[bg] " or "", (meta.task or ""):gsub("%s+", " "):sub(1, 60))
  end

  api.register("tool", {
    name = "subagent_ctl",
    label = "subagent ctl",
    description = "Manage subagent runs: list (every run and its status), wait (until run_id finishes, at most timeout_s: default 30, max 600; never stops it; returns its answer, or `running`), cancel (stop run_id's process group), show (a run's status, answer or output tail, and transcript path).",
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        action = { type = "string", enum = { "list", "wait", "cancel", "show" } },
        run_id = { type = "string", description = "The run id, e.g. sa1 (wait, cancel, show)." },
        timeout_s = { type = "number", minimum = 0, maximum = MAX_WAIT_S, description = "wait: seconds to wait at most (default 30)." },
      },
      required = { "action" },
    },
    execute = function(args)
      if args.action == "list" then
        local lines = {}
        for _, info in ipairs(native.subagent.list()) do lines[#lines + 1] = describe(info) end
        if #lines == 0 then return result("no subagent runs", false, { runs = {} }) end
        return result(table.concat(lines, "\n"), false, { count = #lines })
      end
      if type(args.run_id) ~= "string" then return result("error: " .. args.action .. " needs run_id", true) end
      local id = args.run_id
      if args.action == "wait" then
        local wait_s = math.max(0, math.min(tonumber(args.timeout_s) or DEFAULT_WAIT_S, MAX_WAIT_S))
        local info, err = native.subagent.wait(id, { wait_ms = math.floor(wait_s * 1000) })
        if not info then return result("error: " .. err, true) end
        if info.cancelled then error("cancelled", 0) end
        if not info.finished then
          return result(string.format("running: subagent %s (%s) has not finished after %g s (%d turns so far); it goes on", id, info.label, wait_s, info.turns),
            false, { run_id = id, status = "running", turns = info.turns, transcript = info.transcript })
        end
        state.seen[id] = true
        return result(report(info))
      elseif args.action == "cancel" then
        local info, err = native.subagent.kill(id)
        if not info then return result("error: " .. err, true) end
        state.seen[id] = true
        redraw()
        return result(string.format("subagent %s (%s) stopped (%s)", id, info.label, info.status), false,
          { run_id = id, status = info.status })
      elseif args.action == "show" then
        local info, err = native.subagent.info(id)
        if not info then return result("error: " .. err, true) end
        local head = describe(info)
        if not info.finished then
          return result(head .. "\ntranscript: " .. tostring(info.transcript), false,
            { run_id = id, status = "running", turns = info.turns, transcript = info.transcript })
        end
        state.seen[id] = true
        local text, is_error, details = report(info)
        return result(head .. "\n" .. text, is_error, details)
      end
      return result("error: unknown action " .. tostring(args.action) .. "; use list, wait, cancel or show", true)
    end,
  })

  api.register("command", {
    name = "agents", order = 58, description = "List the subagent definitions and the runs.",
    handler = function()
      local d = discover()
      local lines = {}
      for _, row in ipairs(d.rows) do
        if row.status == "invalid" then
          lines[#lines + 1] = string.format("  skipped %s: %s", row.location, row.message)
        else
          lines[#lines + 1] = string.format("  %-12s %-8s %s%s", row.name, row.scope, row.description:gsub("\n.*", ""):sub(1, 80),
            row.shadowed_by and ("  [shadowed by " .. row.shadowed_by .. "]") or "")
        end
      end
      local runs = native.subagent.list()
      if #runs > 0 then
        lines[#lines + 1] = "runs:"
        for _, info in ipairs(runs) do lines[#lines + 1] = "  " .. describe(info) end
      end
      return "agents:\n" .. table.concat(lines, "\n")
    end,
  })

  api.register("panel", {
    name = "subagents", title = "Subagents",
    enabled = function() return native.subagent.running() > 0 end,
    render = function()
      local rows = {}
      for _, info in ipairs(native.subagent.list()) do
        if info.running then rows[#rows + 1] = describe(info) end
      end
      return rows
    end,
  })

  api.register("status", {
    name = "subagents", order = 41,
    render = function()
      local n = native.subagent.running()
      if n == 0 then return nil end
      return "agents:" .. n
    end,
  })

  api.register("introspect", {
    name = "agents", description = "Subagent definitions (valid, shadowed and invalid) and runs.",
    snapshot = function()
      local d = discover()
      return { rows = d.rows, runs = native.subagent.list() }
    end,
  })
end
