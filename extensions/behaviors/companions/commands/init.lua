-- commands: slash commands written as Markdown files, as Claude Code and opencode keep them.
-- Roots, first name wins: the project's .fen/commands/, .claude/commands/, .opencode/command/
-- and .opencode/commands/ (the working directory up to the repository root; only once the
-- folder is trusted, since a command can run `!` shell), then ~/.config/fen/commands/ and
-- ~/.claude/commands/. `review.md` is `/review`, `git/commit.md` is `/git:commit`.
-- Front matter (optional): `description`, `argument-hint`, `allowed-tools` (allow rules for
-- the turn the command starts), `model` (`provider/id`, or an id of the current provider, for
-- that turn). The body is the prompt, with `$ARGUMENTS` (all arguments), `$1`...`$9` (one
-- each, quotes group words), `@path` (the file's contents) and !`cmd` (the command's output:
-- it goes as the model's bash call would, through the permission policy, which may ask or
-- refuse, and runs in the OS sandbox; a refused one is left out with the reason).
local native = require("fen.native")

local MAX_FILE = 256 * 1024
local CMD_TIMEOUT = 30


--- A small file read at load time (discovery reads a few small files, as skills do).
local function read_text_sync(path)
  return native.fs.read_text(path, MAX_FILE)
end

--- A text file's contents (async), or nil and why.
local function read_text(path)
  local r, err = native.fs.read(path, { limit = 1000000, max_bytes = MAX_FILE, max_columns = MAX_FILE })
  if not r then return nil, err end
  if r.kind ~= "text" then return nil, path .. " is not a text file" end
  local text = r.text or ""
  if r.truncated_by then text = text .. "\n[... cut by fen]" end
  return text
end

local project_dirs = require("fen.lib.project").dirs

--- Splits arguments as a shell would for `$1`...: words, with "..." or '...' grouping.
local function split_args(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c == '"' or c == "'" then
      local j = s:find(c, i + 1, true) or (n + 1)
      out[#out + 1] = s:sub(i + 1, j - 1)
      i = j + 1
    else
      local j = s:find("%s", i) or (n + 1)
      out[#out + 1] = s:sub(i, j - 1)
      i = j
    end
  end
  return out
end

--- `allowed-tools` as a list of rule texts (a list, or one comma-separated string).
local function tool_rules(v)
  local out = {}
  if type(v) == "string" then
    -- Commas inside parentheses belong to the rule.
    local depth, cur = 0, {}
    for ch in v:gmatch(".") do
      if ch == "(" then depth = depth + 1 elseif ch == ")" then depth = depth - 1 end
      if ch == "," and depth == 0 then
        out[#out + 1] = table.concat(cur)
        cur = {}
      else
        cur[#cur + 1] = ch
      end
    end
    out[#out + 1] = table.concat(cur)
  elseif type(v) == "table" then
    for _, x in ipairs(v) do out[#out + 1] = tostring(x) end
  end
  local clean = {}
  for _, r in ipairs(out) do
    r = r:match("^%s*(.-)%s*$")
    if r ~= "" then clean[#clean + 1] = r end
  end
  return clean
end

--- Front matter when YAML cannot read it (Claude Code's `argument-hint: [a] [b]` is not valid
--- YAML): each `key: value` line as a string.
local function loose_front_matter(text)
  local head, body = text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-\r?\n?(.*)$")
  if not head then return nil end
  local fields = {}
  for line in (head .. "\n"):gmatch("(.-)\r?\n") do
    local k, v = line:match("^([%w_%-]+):%s*(.-)%s*$")
    if k then fields[k] = v end
  end
  return { fields = fields, body = body }
end

--- `{fields, body}` of a command file (no front matter: the whole text is the body).
local function parse(text)
  local fm = native.markup.front_matter(text)
  if fm then
    -- A flow list (`[message]`) read as YAML is a list: keep the text the author wrote.
    local loose = loose_front_matter(text)
    for k, v in pairs(fm.fields) do
      if type(v) == "table" and loose and loose.fields[k] and k ~= "allowed-tools" then fm.fields[k] = loose.fields[k] end
    end
    return fm
  end
  return loose_front_matter(text) or { fields = {}, body = text }
end

return function(api)
  --- Roots in precedence order: `{path, scope}`.
  local function roots()
    local out, home = {}, os.getenv("HOME") or ""
    local opts = api.kernel.run_options() or {}
    if opts.trusted then
      for _, d in ipairs(project_dirs()) do
        for _, sub in ipairs({ "/.fen/commands", "/.claude/commands", "/.opencode/command", "/.opencode/commands" }) do
          out[#out + 1] = { path = d .. sub, scope = "project" }
        end
      end
    end
    out[#out + 1] = { path = native.paths.config_dir .. "/commands", scope = "user" }
    out[#out + 1] = { path = home .. "/.claude/commands", scope = "user" }
    return out
  end

  local taken = {}
  for _, c in ipairs(api.list("command")) do
    if c.name then taken[c.name] = true end
  end

  --- Every command file: `{name, file, description, hint, fields}`, first name winning.
  local function discover()
    local rs = roots()
    local paths = {}
    for i, r in ipairs(rs) do paths[i] = r.path end
    local found, by_name, list = native.markup.scan_tree(paths, ".md"), {}, {}
    for _, doc in ipairs(found) do
      local root = rs[doc.root].path
      local rel = doc.file:sub(#root + 2):gsub("%.md$", "")
      local name = rel:gsub("/", ":")
      local raw = read_text_sync(doc.file)
      local fm = raw and parse(raw) or { fields = {}, body = "" }
      local fields = fm.fields
      doc.body = fm.body
      local desc = type(fields.description) == "string" and fields.description or nil
      if not desc then
        -- Claude Code's fallback: the first line of the body.
        local body = doc.body or ""
        desc = body:match("^%s*([^\n]+)") or ""
        if #desc > 80 then desc = desc:sub(1, 77) .. "..." end
      end
      if name:match("^[%w_%-:%.]+$") and not by_name[name] and not taken[name] then
        local c = { name = name, file = doc.file, description = desc, scope = rs[doc.root].scope,
          hint = type(fields["argument-hint"]) == "string" and fields["argument-hint"] or nil,
          fields = fields }
        by_name[name] = c
        list[#list + 1] = c
      end
    end
    return list
  end

  --- !`cmd`: a bash call made on the person's behalf (`api.turn.run_tool`), so it goes as
  --- the model's would: `--tools`, the settings PreToolUse hooks, the permission policy (a
  --- read-only command runs; another is asked, or refused headless; floors, deny rules and
  --- secret files hold), then the bash tool in the OS sandbox. A refused one leaves a line
  --- saying why.
  local function run_bang(cmd)
    local ok, r = pcall(api.turn.run_tool, "bash", { command = cmd, timeout = CMD_TIMEOUT })
    if not ok then return "[fen: `" .. cmd .. "` not run: " .. tostring(r) .. "]" end
    local text = tostring(r.text or "")
    if not r.ran then return "[fen: `" .. cmd .. "` not run: " .. text .. "]" end
    -- The bash tool's status line says nothing for a command that succeeded.
    return (text:gsub("\n?%[exit 0%]$", ""))
  end

  --- The prompt a command file makes with `args`.
  local function expand(body, args)
    local words = split_args(args)
    local has_placeholder = body:find("$ARGUMENTS", 1, true) or body:find("%$%d")
    local text = body:gsub("%$ARGUMENTS", function() return args end)
    text = text:gsub("%$(%d)", function(d) return words[tonumber(d)] or "" end)
    -- !`cmd`: each runs once, in order.
    local parts, pos = {}, 1
    while true do
      local s, e, cmd = text:find("!`([^`\n]+)`", pos)
      if not s then break end
      parts[#parts + 1] = text:sub(pos, s - 1)
      parts[#parts + 1] = run_bang(cmd)
      pos = e + 1
    end
    parts[#parts + 1] = text:sub(pos)
    text = table.concat(parts)
    -- @path at the start or after a space: the file's contents follow the prompt.
    local files = {}
    for path in (" " .. text):gmatch("%s@([%w_%./%-]+[%w_/%-])") do
      if not files[path] then
        files[path] = true
        local full = path:sub(1, 1) == "/" and path or (native.fs.cwd() .. "/" .. path)
        local content = read_text(full)
        if content then
          files[#files + 1] = string.format("<file path=%q>\n%s\n</file>", path, content)
        end
      end
    end
    if #files > 0 then text = text .. "\n\n" .. table.concat(files, "\n") end
    if not has_placeholder and args ~= "" then text = text .. "\n\nArguments: " .. args end
    return text
  end

  local function run_command(c, args)
    local raw, err = read_text(c.file)
    if not raw then return "cannot read " .. c.file .. ": " .. tostring(err) end
    local fm = parse(raw)
    local body, fields = fm.body, fm.fields
    -- `allowed-tools` covers the command's own !`cmd` lines too, as in Claude Code.
    local rules = tool_rules(fields["allowed-tools"])
    if #rules > 0 then api.emit({ type = "turn-rules", rules = rules, source = c.file }) end
    local text = expand(body, args or "")
    local restore
    if type(fields.model) == "string" and fields.model ~= "" then
      local cur = api.turn.model() or {}
      local provider, id = fields.model:match("^([^/]+)/(.+)$")
      if not provider then provider, id = cur.provider, fields.model end
      local ok, e = pcall(api.turn.set_model, provider, id)
      if not ok then return string.format("%s: model %s: %s", c.name, fields.model, tostring(e)) end
      restore = cur
    end
    local r = api.turn.submit(text, { when_busy = "steering" })
    if restore and restore.provider then pcall(api.turn.set_model, restore.provider, restore.model) end
    if r.status == "error" then return "/" .. c.name .. ": " .. tostring(r.error) end
  end

  for _, c in ipairs(discover()) do
    api.register("command", {
      name = c.name,
      order = 80,
      description = c.description .. (c.hint and (" " .. c.hint) or "") .. " (" .. c.scope .. ": " .. c.file .. ")",
      handler = function(args) return run_command(c, args) end,
    })
  end
end
