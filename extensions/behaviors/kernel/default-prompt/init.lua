-- default-prompt: the system prompt's fragments. `base` (the role; --system/--system-file
-- replace it), `tools` (how to use them), `environment` (working directory, date, platform) and
-- `project` (AGENTS.md or CLAUDE.md from ~/.config/fen/ and from the working directory up to
-- the filesystem root, outermost first).
local native = require("fen.native")

local BASE = [[You are fen, a coding agent working in the user's repository. You read, search, edit and run code to complete the task, then reply with a short summary of what you did and anything the user must know. Be direct and precise; do not invent files, APIs or results you did not see.]]

local TOOLS = [[Using tools:
- Look before you change: read files (batch them with `paths`) and search with grep/find rather than guessing.
- Edit with `edit`: old_string must match the file exactly once; batch all changes to a file (and across files) into one call. Use `write` only for new files or complete rewrites.
- Run commands with `bash` (non-interactive; stdin is closed). Prefer commands that finish; give a timeout for long ones.
- A tool result that starts with "error:" tells you what to fix; adjust the call instead of repeating it.
- Verify your work (build, tests) when the project has a way to.]]

local function read_file(path)
  local fh = io.open(path, "rb")
  if not fh then return nil end
  local text = fh:read("a")
  fh:close()
  return text
end

local function config_dir()
  local base = os.getenv("XDG_CONFIG_HOME")
  if not base or base == "" then base = (os.getenv("HOME") or "") .. "/.config" end
  return base .. "/fen"
end

--- Context files, outermost first: the user's global one, then each directory from the
--- filesystem root down to the working directory (AGENTS.md preferred over CLAUDE.md).
local function project_context()
  local found = {}
  local global = read_file(config_dir() .. "/AGENTS.md")
  if global then found[#found + 1] = { path = config_dir() .. "/AGENTS.md", text = global } end
  local dirs, dir = {}, native.fs.cwd()
  while dir and dir ~= "" do
    table.insert(dirs, 1, dir)
    local parent = dir:match("^(.*)/[^/]*$")
    if parent == dir then break end
    dir = parent
  end
  for _, d in ipairs(dirs) do
    local base = d == "" and "" or d
    for _, name in ipairs({ "AGENTS.md", "CLAUDE.md" }) do
      local path = base .. "/" .. name
      local text = read_file(path)
      if text then
        found[#found + 1] = { path = path, text = text }
        break
      end
    end
  end
  if #found == 0 then return nil end
  local parts = { "Project instructions (follow them):" }
  for _, f in ipairs(found) do
    parts[#parts + 1] = string.format("--- %s ---\n%s", f.path, f.text)
  end
  return table.concat(parts, "\n\n")
end

return function(api)
  api.prompt(BASE, { id = "base", title = "Role", order = 0 })
  api.prompt(TOOLS, { id = "tools", title = "Tools", order = 10 })
  api.prompt(function()
    return string.format("Working directory: %s\nDate: %s\nPlatform: %s %s",
      native.fs.cwd(), os.date("%Y-%m-%d"), native.platform.os, native.platform.arch)
  end, { id = "environment", title = "Environment", order = 20 })
  api.prompt(project_context, { id = "project", title = "Project context", order = 30 })
end
