-- fen.lib.rows: one-line summaries of tool calls and results, shared by the line presenters.
local M = {}

local function human(n)
  if n < 1024 then return string.format("%dB", n) end
  if n < 1024 * 1024 then return string.format("%.1fKB", n / 1024) end
  return string.format("%.1fMB", n / 1024 / 1024)
end

--- `read README.md:1-20`, `$ make test (timeout 60s)`, `grep /pat/ in src`.
function M.call_summary(call)
  local a = call.arguments or {}
  local name = call.name or "?"
  if call.parse_error then
    return name .. " (arguments are not valid JSON)"
  end
  if name == "bash" then
    return "$ " .. (a.command and tostring(a.command) or "(no command)") .. (a.timeout and string.format(" (timeout %ds)", a.timeout) or "")
  elseif name == "read" then
    if a.paths then return string.format("read %d files", #a.paths) end
    local range = a.offset and string.format(":%d-%d", a.offset, a.offset + (a.limit or 2000) - 1) or ""
    return "read " .. tostring(a.path) .. range
  elseif name == "grep" then
    return string.format("grep /%s/ in %s", tostring(a.pattern), a.path or ".")
  elseif name == "find" then
    return string.format("find %s in %s", tostring(a.pattern), a.path or ".")
  elseif name == "edit" and a.files then
    return string.format("edit %d files", #a.files)
  elseif a.path then
    return name .. " " .. tostring(a.path)
  end
  return name
end

--- `tool> ok read README.md (42 lines, 3.1KB)` / `tool> err read missing.txt (1 line, 24B)`.
--- `call` (optional) names the path or command when the result's details do not (errors).
function M.result_row(result, call)
  local text = ""
  for _, block in ipairs(result.content or {}) do text = text .. (block.text or "") end
  local lines = select(2, text:gsub("\n", "\n")) + (text == "" and 0 or 1)
  local what = result.tool_name or "?"
  local d = result.details or {}
  if d.path then
    what = what .. " " .. d.path
  elseif d.command then
    what = what .. " $ " .. d.command
  elseif d.files and #d.files == 1 and d.files[1].path then
    what = what .. " " .. d.files[1].path
  elseif call and call.arguments then
    local a = call.arguments
    if a.path then
      what = what .. " " .. tostring(a.path)
    elseif a.command then
      what = what .. " $ " .. tostring(a.command)
    end
  end
  local row = string.format("tool> %s %s (%d line%s, %s)", result.is_error and "err" or "ok", what, lines, lines == 1 and "" or "s", human(#text))
  if result.is_error then
    -- The first line of the error says what went wrong (bash's is its output's first line),
    -- unless the sandbox stopped the command: then its boundary and the way out, whole (the
    -- output's own first line is only "Permission denied" or a traceback).
    local first = text:match("^[^\n]*") or ""
    local chars = utf8.len(first)
    if chars and chars > 160 then first = first:sub(1, utf8.offset(first, 158) - 1) .. "..." end
    if type(d.sandbox_blocked) == "string" then first = d.sandbox_blocked end
    if first ~= "" then row = row .. ": " .. first end
  end
  return row
end

return M
