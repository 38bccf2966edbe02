-- default-prompt: the system prompt's fragments. `base` (the role; --system/--system-file
-- replace it), `tools` (how to use them), `environment` (working directory, date, platform) and
-- `project` (AGENTS.md or CLAUDE.md from ~/.config/fen/ and from the working directory up to
-- the filesystem root, outermost first; each capped at 32 KiB, re-read only when it changed).
-- `/context` lists what was loaded.
local native = require("fen.native")

local BASE = [[You are fen, a coding agent working in the user's repository. You read, search, edit and run code to complete the task, then reply with a short summary of what you did and anything the user must know. Be direct and precise; do not invent files, APIs or results you did not see.]]

local TOOLS = [[Using tools:
- Look before you change: read files (batch them with `paths`) and search with grep/find rather than guessing.
- Edit with `edit`: old_string must match the file exactly once; batch all changes to a file (and across files) into one call. Use `write` only for new files or complete rewrites.
- Run commands with `bash` (non-interactive; stdin is closed). Prefer commands that finish; give a timeout for long ones.
- A tool result that starts with "error:" tells you what to fix; adjust the call instead of repeating it.
- Verify your work (build, tests) when the project has a way to.]]

--- Each context file is capped; the model is told when one was cut.
local MAX_CONTEXT_FILE = 32 * 1024

local text_lib = require("fen.lib.text")

--- Context files read so far, by path: {mtime_ms, size, text}. A file is read again only when
--- its mtime or size changed, so a step costs a few stat calls, not a re-read of every file.
local cache = {}

--- The file's text (capped), or nil when it is absent; `cut` tells whether it was capped.
local function read_context_file(path)
  local st = native.fs.stat(path)
  if not st or st.is_dir then
    cache[path] = nil
    return nil
  end
  local hit = cache[path]
  if hit and hit.mtime_ms == st.mtime_ms and hit.size == st.size then return hit.text, hit.cut end
  local text = native.fs.read_text(path, MAX_CONTEXT_FILE + 1, "head")
  if not text then return nil end
  local cut = #text > MAX_CONTEXT_FILE
  if cut then
    text = text_lib.prefix(text, MAX_CONTEXT_FILE)
      .. string.format("\n[fen: %s is %d bytes; only the first %d KiB are included]", path, st.size, MAX_CONTEXT_FILE // 1024)
  end
  cache[path] = { mtime_ms = st.mtime_ms, size = st.size, text = text, cut = cut }
  return text, cut
end

local function config_dir() return native.paths.config_dir end

--- The context files that apply now, outermost first: the user's global one, then each
--- directory from the filesystem root down to the working directory (AGENTS.md preferred
--- over CLAUDE.md): `{path, text, bytes, cut}`.
local function context_files()
  local found = {}
  local global_path = config_dir() .. "/AGENTS.md"
  local global, gcut = read_context_file(global_path)
  if global then found[#found + 1] = { path = global_path, text = global, cut = gcut } end
  local dirs, dir = {}, native.fs.cwd()
  while dir and dir ~= "" do
    table.insert(dirs, 1, dir)
    local parent = dir:match("^(.*)/[^/]*$")
    if parent == dir then break end
    dir = parent
  end
  for _, d in ipairs(dirs) do
    for _, name in ipairs({ "AGENTS.md", "CLAUDE.md" }) do
      local path = d .. "/" .. name
      local text, cut = read_context_file(path)
      if text then
        found[#found + 1] = { path = path, text = text, cut = cut }
        break
      end
    end
  end
  return found
end

local function project_context()
  local found = context_files()
  if #found == 0 then return nil end
  local parts = { "Project instructions (follow them):" }
  for _, f in ipairs(found) do
    parts[#parts + 1] = string.format("--- %s ---\n%s", f.path, f.text)
  end
  return table.concat(parts, "\n\n")
end

--- `/context`: the context files loaded and the system prompt's size by fragment.
local function context_report(api)
  local lines = { "Project context files (AGENTS.md / CLAUDE.md, each capped at 32 KiB):" }
  local files = context_files()
  if #files == 0 then lines[#lines + 1] = "  (none found)" end
  for _, f in ipairs(files) do
    lines[#lines + 1] = string.format("  %s (%d bytes%s)", f.path, #f.text, f.cut and ", cut" or "")
  end
  lines[#lines + 1] = "System prompt by fragment:"
  local total = 0
  for _, fr in ipairs(api.kernel.prompt_fragments()) do
    total = total + fr.bytes
    lines[#lines + 1] = string.format("  %-14s %-22s %7d bytes  (%s)", fr.id, fr.title or "", fr.bytes, fr.owner)
  end
  lines[#lines + 1] = string.format("  total %d bytes (about %d tokens)", total, total // 4)
  local ok, more = pcall(api.load("breakdown").lines, api)
  if ok then
    for _, l in ipairs(more) do lines[#lines + 1] = l end
  else
    lines[#lines + 1] = "(the breakdown by part failed: " .. tostring(more) .. ")"
  end
  return table.concat(lines, "\n")
end

return function(api)
  api.prompt(BASE, { id = "base", title = "Role", order = 0 })
  api.prompt(TOOLS, { id = "tools", title = "Tools", order = 10 })
  api.prompt(function()
    return string.format("Working directory: %s\nDate: %s\nPlatform: %s %s",
      native.fs.cwd(), os.date("%Y-%m-%d"), native.platform.os, native.platform.arch)
  end, { id = "environment", title = "Environment", order = 20 })
  api.prompt(project_context, { id = "project", title = "Project context", order = 30 })
  api.register("command", {
    name = "context",
    description = "Show what fills the context: the system prompt by fragment, tools' schemas, MCP tools, AGENTS.md files, skills, messages, and the largest items.",
    handler = function() return context_report(api) end,
  })
end
