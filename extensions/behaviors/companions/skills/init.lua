-- skills: Agent Skills (a directory with SKILL.md: YAML front matter, then instructions).
-- Discovery, first name wins: `.fen/skills/` in the working directory and each parent up to
-- the repository root, `~/.config/fen/skills/`, then the peers' folders so an existing setup
-- just works: `.agents/skills/`, `.claude/skills/`, `.codex/skills/` (working directory up to
-- the root), `~/.agents/skills/`, `~/.claude/skills/`, `~/.codex/skills/`.
-- Offered both ways: an `<available_skills>` listing in the system prompt (budgeted to
-- min(2% of the context window at 4 chars a token, 8000 chars): descriptions shortened
-- first, then skills omitted and counted) and a `skill{name}` tool that returns the body.
--   /skills            lists them, with the invalid ones and why
--   /skill:NAME args   runs a turn with the skill's instructions and the arguments
local native = require("fen.native")

local MAX_LISTING = 8000
local SHORT_DESCRIPTION = 200

local INTRO = [[Skills hold instructions for specific kinds of tasks. When a task matches a skill's description, call the `skill` tool with its name to load the instructions before you start (files the skill mentions are relative to its directory).]]

local function config_dir() return native.paths.config_dir end

local project_dirs = require("fen.lib.project").dirs

--- Skill roots in precedence order: `{path, scope}`.
local function roots()
  local out, home = {}, os.getenv("HOME") or ""
  local project = project_dirs()
  for _, d in ipairs(project) do out[#out + 1] = { path = d .. "/.fen/skills", scope = "project" } end
  out[#out + 1] = { path = config_dir() .. "/skills", scope = "user" }
  for _, d in ipairs(project) do
    for _, peer in ipairs({ ".agents", ".claude", ".codex" }) do
      out[#out + 1] = { path = d .. "/" .. peer .. "/skills", scope = "project" }
    end
  end
  for _, peer in ipairs({ ".agents", ".claude", ".codex" }) do
    out[#out + 1] = { path = home .. "/" .. peer .. "/skills", scope = "user" }
  end
  return out
end

--- Why a skill's front matter is not valid, or nil.
local function invalid(fields, dirname)
  local name, desc = fields.name, fields.description
  if type(name) ~= "string" or name == "" then return "front matter has no `name`" end
  if #name > 64 then return "`name` is longer than 64 characters" end
  if not name:match("^[a-z0-9-]+$") then return "`name` may only hold a-z, 0-9 and -" end
  if name:match("^%-") or name:match("%-$") or name:find("--", 1, true) then
    return "`name` may not start or end with - nor hold --"
  end
  if name ~= dirname then return string.format("`name` %q differs from the directory name %q", name, dirname) end
  if type(desc) ~= "string" or desc:match("^%s*$") then return "front matter has no `description`" end
  if (utf8.len(desc) or #desc) > 1024 then return "`description` is longer than 1024 characters" end
  if fields.compatibility ~= nil and (type(fields.compatibility) ~= "string" or (utf8.len(fields.compatibility) or 0) > 500) then
    return "`compatibility` must be a string of at most 500 characters"
  end
  if fields.license ~= nil and type(fields.license) ~= "string" then return "`license` must be a string" end
  if fields.metadata ~= nil and type(fields.metadata) ~= "table" then return "`metadata` must be a mapping" end
  local dmi = fields["disable-model-invocation"]
  if dmi ~= nil and type(dmi) ~= "boolean" then return "`disable-model-invocation` must be true or false" end
  return nil
end

--- Scans every root. Returns `{skills (winners, in precedence order), all (every valid copy,
--- shadowed ones marked), warnings = {{path, message}}}`.
local function discover()
  local rs = roots()
  local paths = {}
  for i, r in ipairs(rs) do paths[i] = r.path end
  local found = native.markup.scan(paths, "SKILL.md")
  local skills, all, warnings, by_name = {}, {}, {}, {}
  for _, doc in ipairs(found) do
    local dirname = doc.dir:match("([^/]+)$")
    local why = doc.error or invalid(doc.fields, dirname)
    if why then
      warnings[#warnings + 1] = { path = doc.file, message = why }
    else
      local f = doc.fields
      local s = {
        name = f.name, description = (f.description:gsub("%s+$", "")), dir = doc.dir, location = doc.file,
        scope = rs[doc.root].scope, root = rs[doc.root].path, license = f.license,
        compatibility = f.compatibility, metadata = f.metadata, allowed_tools = f["allowed-tools"],
        disable_model_invocation = f["disable-model-invocation"] == true,
      }
      local winner = by_name[s.name]
      if winner then
        s.shadowed_by = winner.location
      else
        by_name[s.name] = s
        skills[#skills + 1] = s
      end
      all[#all + 1] = s
    end
  end
  return { skills = skills, all = all, warnings = warnings, by_name = by_name }
end

local function xml_escape(s)
  return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"))
end

local function shorten(s, n)
  if (utf8.len(s) or #s) <= n then return s end
  local cut = utf8.offset(s, n) or (n + 1)
  return s:sub(1, cut - 1):gsub("%s+%S*$", "") .. "…"
end

--- The `<available_skills>` block within `budget` characters (bytes): full descriptions if
--- they fit, else descriptions shortened, else as many skills as fit with the rest counted.
--- Returns the text (nil when nothing is listed) and the number of skills omitted.
local function listing(skills, budget)
  local offered = {}
  for _, s in ipairs(skills) do
    if not s.disable_model_invocation then offered[#offered + 1] = s end
  end
  if #offered == 0 then return nil, 0 end
  local function entry(s, short)
    local d = short and shorten(s.description, SHORT_DESCRIPTION) or s.description
    return string.format("<skill>\n<name>%s</name>\n<description>%s</description>\n<location>%s</location>\n</skill>",
      xml_escape(s.name), xml_escape(d), xml_escape(s.location))
  end
  local head, tail = INTRO .. "\n\n<available_skills>", "</available_skills>"
  local function build(short, limit)
    local parts = { head }
    for i = 1, limit do parts[#parts + 1] = entry(offered[i], short) end
    local omitted = #offered - limit
    if omitted > 0 then
      parts[#parts + 1] = string.format("<!-- %d more skill%s omitted to save context; /skills lists them and the skill tool loads any by name -->", omitted, omitted == 1 and "" or "s")
    end
    parts[#parts + 1] = tail
    return table.concat(parts, "\n"), omitted
  end
  for _, short in ipairs({ false, true }) do
    local text, omitted = build(short, #offered)
    if #text <= budget then return text, omitted end
  end
  -- Drop skills from the end (lowest precedence) until the listing fits.
  local lo, hi = 0, #offered
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    if #build(true, mid) <= budget then lo = mid else hi = mid - 1 end
  end
  local text, omitted = build(true, lo)
  if #text > budget then return nil, #offered end
  return text, omitted
end

local function budget_for(window)
  return math.min(MAX_LISTING, math.floor((window or 0) * 4 * 0.02))
end

local function read_body(s)
  local text, err = native.fs.read_text(s.location)
  if not text then return nil, err end
  local fm, ferr = native.markup.front_matter(text)
  if not fm then return nil, ferr end
  return fm.body
end

local function loaded_text(s, body)
  return string.format("Skill: %s\nDirectory: %s\n\n%s", s.name, s.dir, body)
end

return function(api)
  local found = discover()
  local last_omitted = 0

  -- The fragment is assembled before every model call; the listing only changes with the
  -- budget (the model's context window), so it is built once per budget.
  local cache = {}
  api.prompt(function()
    local ok, window = pcall(api.turn.context_window)
    local budget = budget_for(ok and window or 128000)
    if cache.budget ~= budget then
      cache.text, cache.omitted = listing(found.skills, budget)
      cache.budget = budget
    end
    last_omitted = cache.omitted
    return cache.text
  end, { id = "skills", title = "Available skills", order = 80 })

  local offered = 0
  for _, s in ipairs(found.skills) do
    if not s.disable_model_invocation then offered = offered + 1 end
  end
  if offered > 0 then
    api.register("tool", {
      name = "skill",
      label = "skill",
      description = "Load a skill's instructions by name (see <available_skills> in the system prompt). Returns the skill's directory and its SKILL.md body; follow the instructions, resolving relative paths against that directory.",
      risk = "read",
      concurrency = "parallel_safe",
      parameters = {
        type = "object",
        properties = { name = { type = "string", description = "The skill's name." } },
        required = { "name" },
      },
      execute = function(args)
        local s = found.by_name[args.name or ""]
        local function fail(text) return { content = { { type = "text", text = text } }, is_error = true } end
        if not s then
          local names = {}
          for _, k in ipairs(found.skills) do
            if not k.disable_model_invocation then names[#names + 1] = k.name end
          end
          return fail(string.format("error: no skill named %q; available: %s", tostring(args.name), table.concat(names, ", ")))
        end
        if s.disable_model_invocation then
          return fail(string.format("error: skill %q can only be started by the user; ask them to run /skill:%s", s.name, s.name))
        end
        local body, err = read_body(s)
        if not body then return fail("error: cannot read " .. s.location .. ": " .. tostring(err)) end
        return { content = { { type = "text", text = loaded_text(s, body) } }, is_error = false,
          details = { name = s.name, location = s.location } }
      end,
    })
  end

  for _, s in ipairs(found.skills) do
    api.register("command", {
      name = "skill:" .. s.name, order = 90,
      description = "Skill: " .. shorten(s.description, 80),
      handler = function(args)
        local body, err = read_body(s)
        if not body then return "cannot read " .. s.location .. ": " .. tostring(err) end
        local text = loaded_text(s, body)
        if args and args ~= "" then text = text .. "\n\nArguments: " .. args end
        local r = api.turn.submit(text, { when_busy = "steering" })
        if r.status == "error" then return "skill " .. s.name .. ": " .. tostring(r.error) end
      end,
    })
  end

  --- Rows for `/skills` and `fen list skills`.
  local function rows()
    local out = {}
    for _, s in ipairs(found.all) do
      out[#out + 1] = { name = s.name, description = s.description, location = s.location, dir = s.dir,
        scope = s.scope, root = s.root, shadowed_by = s.shadowed_by,
        disable_model_invocation = s.disable_model_invocation, status = s.shadowed_by and "shadowed" or "ok" }
    end
    for _, w in ipairs(found.warnings) do
      out[#out + 1] = { location = w.path, status = "invalid", message = w.message }
    end
    return out
  end

  api.register("introspect", {
    name = "skills", description = "Discovered skills (shadowed and invalid ones included).",
    snapshot = function() return { rows = rows(), omitted = last_omitted } end,
  })

  api.register("command", {
    name = "skills", order = 56, description = "List the skills, the invalid ones and why.",
    handler = function()
      local lines = {}
      for _, r in ipairs(rows()) do
        if r.status == "invalid" then
          lines[#lines + 1] = string.format("warning: skipped %s: %s", r.location, r.message)
        else
          lines[#lines + 1] = string.format("%-24s %-8s %s%s%s", r.name, r.scope, shorten(r.description, 60),
            r.disable_model_invocation and "  [user only]" or "",
            r.shadowed_by and ("  [shadowed by " .. r.shadowed_by .. "]") or "")
        end
      end
      if #lines == 0 then return "no skills found (see docs/companions.md for where fen looks)" end
      local _, window = pcall(api.turn.context_window)
      local _, omitted = listing(found.skills, budget_for(tonumber(window) or 128000))
      if omitted > 0 then
        lines[#lines + 1] = string.format("%d skill(s) omitted from the system prompt listing to save context", omitted)
      end
      return table.concat(lines, "\n")
    end,
  })
end
