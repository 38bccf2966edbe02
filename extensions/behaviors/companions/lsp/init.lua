-- lsp: language servers in the loop (the client itself is native: `fen.native.lsp`).
-- After `edit` or `write` touches files of a language with a server, the result gets the
-- diagnostics that change introduced (not the ones the file had before), or says they are
-- pending when the server did not answer within `lsp.diagnostics_wait_ms`. Files a shell
-- command changed are sent to their servers too (a stat scan of the open documents).
--   lsp {operation, path, line, column | query}   code navigation (risk read)
--   /lsp                                          the servers and their state
-- Servers: built-in definitions (rust-analyzer, pyright, pylsp, typescript, gopls, clangd)
-- used when on PATH; settings.json `lsp.NAME = {command, args, extensions, root_markers, env,
-- initialization_options, disabled}`; a project's entries only in a trusted folder.
local native = require("fen.native")
local project = require("fen.lib.project")

local OPERATIONS = { "definition", "references", "hover", "document_symbols", "workspace_symbols",
  "implementation", "incoming_calls", "outgoing_calls" }
local NEEDS_POSITION = { definition = true, references = true, hover = true, implementation = true,
  incoming_calls = true, outgoing_calls = true }

local function text_result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

return function(api)
  local state = api.state()
  local configured = false

  local function notify(text)
    api.log("warn", text)
    local headless = (api.kernel.run_options() or {}).headless ~= false
    if headless then
      io.stderr:write("fen: " .. text .. "\n")
    elseif coroutine.isyieldable() then
      pcall(api.ui.notify, text)
    end
  end

  --- Reads the settings once per load (after the folder's trust is known).
  local function configure()
    if configured then return end
    configured = true
    local opts = api.kernel.run_options() or {}
    local r = native.lsp.configure({ trusted = opts.trusted == true })
    for _, e in ipairs(r.errors) do notify("lsp settings: " .. e) end
    local text = project.untrusted_notice("lsp", r.untrusted)
    if text and not state.untrusted_noticed then
      state.untrusted_noticed = true
      notify(text)
    end
  end

  --- The files an edit or write call changes.
  local function edited_paths(tool, args)
    if (tool ~= "edit" and tool ~= "write") or type(args) ~= "table" then return nil end
    local out = {}
    if type(args.path) == "string" and args.path ~= "" then out[#out + 1] = args.path end
    if type(args.files) == "table" then
      for _, f in ipairs(args.files) do
        if type(f) == "table" and type(f.path) == "string" and f.path ~= "" then out[#out + 1] = f.path end
      end
    end
    if #out == 0 then return nil end
    return out
  end

  --- What is appended to an edit's result: per file, the diagnostics it introduced.
  local function format_reports(reports)
    local parts = {}
    for _, r in ipairs(reports) do
      if r.pending then
        parts[#parts + 1] = string.format("lsp: diagnostics pending for %s (%s)", r.path, r.pending)
      elseif r.introduced > 0 then
        local head
        if r.baseline then
          head = string.format("lsp (%s): this edit introduced %d diagnostic%s in %s:", r.server, r.introduced,
            r.introduced == 1 and "" or "s", r.path)
        else
          head = string.format("lsp (%s): %s was not open before this edit; its diagnostics:", r.server, r.path)
        end
        local lines = { head }
        for _, l in ipairs(r.lines) do lines[#lines + 1] = l end
        if r.introduced > #r.lines then
          lines[#lines + 1] = string.format("... and %d more", r.introduced - #r.lines)
        end
        parts[#parts + 1] = table.concat(lines, "\n")
      end
    end
    if #parts == 0 then return nil end
    return table.concat(parts, "\n\n")
  end

  api.register("hook", {
    name = "lsp",
    -- After the permission policy and the user's hooks: only calls that will run get here.
    order = 1000,
    before_tool = function(tool, args)
      local paths = edited_paths(tool, args)
      if paths then
        configure()
        -- Opens the files on their servers now, so the diagnostics before the change are
        -- known (or on their way) when it is done.
        native.lsp.prepare(paths)
      end
      return nil
    end,
    after_tool = function(tool, args, result)
      if tool == "bash" then
        if configured then native.lsp.sync() end
        return nil
      end
      if tool == "read" then
        -- A file read is usually edited next: open it now, so its server is warm and its
        -- diagnostics before the edit are known by then.
        if not result.is_error and type(args.path) == "string" then
          configure()
          native.lsp.prepare({ args.path })
        end
        return nil
      end
      local paths = edited_paths(tool, args)
      if not paths or result.is_error then return nil end
      configure()
      return format_reports(native.lsp.after_change(paths))
    end,
  })

  --- `path:line:col: context` per location (symbols with their kind and name, indented by depth).
  local function format_items(op, r)
    if op == "hover" then
      local t = r.text or ""
      if t == "" then return "no hover information at this position" end
      return t
    end
    if #r.items == 0 then return "no results (" .. r.server .. ")" end
    local lines = {}
    for _, it in ipairs(r.items) do
      local where = string.format("%s:%d:%d", it.path, it.line, it.column)
      if it.name then
        lines[#lines + 1] = string.format("%s%s %s  %s: %s", string.rep("  ", it.depth or 0), it.kind or "symbol",
          it.name, where, it.context)
      else
        lines[#lines + 1] = where .. ": " .. it.context
      end
    end
    return table.concat(lines, "\n")
  end

  api.register("tool", {
    name = "lsp",
    label = "lsp",
    description = [[Ask the language server of a file: definition, references, hover (type and docs), document_symbols, workspace_symbols (by query), implementation, incoming_calls, outgoing_calls. line and column are 1-based, as read shows them (put the column on the symbol's name). Returns path:line:col locations (relative to the working directory) with their line of text. For workspace_symbols give `query` and any file of the language as `path`.]],
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        operation = { type = "string", enum = OPERATIONS, description = "What to ask." },
        path = { type = "string", description = "The file (relative to the working directory)." },
        line = { type = "integer", minimum = 1, description = "1-based line of the symbol." },
        column = { type = "integer", minimum = 1, description = "1-based column (characters) within the symbol." },
        query = { type = "string", description = "workspace_symbols: the name (or part) to look for." },
      },
      required = { "operation", "path" },
    },
    execute = function(args)
      configure()
      local op = args.operation
      if NEEDS_POSITION[op] and (type(args.line) ~= "number" or type(args.column) ~= "number") then
        return text_result("error: " .. op .. " needs line and column (1-based, as read shows them)", true)
      end
      if op == "workspace_symbols" and (type(args.query) ~= "string" or args.query == "") then
        return text_result("error: workspace_symbols needs a query", true)
      end
      local r, err = native.lsp.query({ operation = op, path = args.path, line = args.line, column = args.column,
        query = args.query })
      if not r then return text_result("error: " .. err, true) end
      return text_result(format_items(op, r), false, { server = r.server, count = #r.items })
    end,
  })

  local function status_lines()
    configure()
    local lines = {}
    for _, s in ipairs(native.lsp.servers()) do
      local line = string.format("%-14s %-11s %s", s.name, s.state, s.command)
      if s.root then line = line .. "  root " .. s.root .. string.format("  (%d open)", s.documents) end
      if s.restarts and s.restarts > 0 then line = line .. string.format("  restarts %d", s.restarts) end
      if s.error then line = line .. "\n    " .. s.error end
      if s.state == "running" or s.state == "failed" or s.state == "crashed" then
        line = line .. "\n    log " .. s.log
      end
      lines[#lines + 1] = line
    end
    return table.concat(lines, "\n")
  end

  api.register("command", {
    name = "lsp", order = 59,
    description = "Language servers: `/lsp` lists them with their state (running, idle, unavailable, failed and why).",
    handler = function() return status_lines() end,
  })

  api.register("introspect", {
    name = "lsp",
    description = "Language servers and their state.",
    snapshot = function() return { servers = native.lsp.servers() } end,
  })
end
