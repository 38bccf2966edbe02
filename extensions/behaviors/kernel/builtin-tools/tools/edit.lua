-- edit: exact-first replacements over the native edit engine, all-or-nothing across files.
local native = require("fen.native")
local util = require("util")

local DESCRIPTION = [[Replace text in files. Shapes:
- {path, old_string, new_string, replace_all?} for one replacement;
- {path, edits: [{old_string, new_string, replace_all?}, ...]} for several in one file;
- {files: [{path, edits: [...]}, ...]} for several files.
Every old_string must match exactly one place in the ORIGINAL file (all edits are checked against the file as it was, not one after another; they must not overlap), unless replace_all is true. Matching is exact first; if that fails, fixed fallbacks are tried (line endings, trailing whitespace, uniform indentation shift, curly quotes/dashes, a block whose first and last lines match) and the result says which matched. Include enough surrounding lines to make old_string unique. All edits of a call are validated before anything is written: if one fails, no file changes. Line endings, a BOM and the file mode are kept. Batch all known edits into one call rather than several calls on the same file.]]

local EDIT_ITEM = {
  type = "object",
  properties = {
    old_string = { type = "string", description = "Exact text to replace (unique in the file unless replace_all)." },
    new_string = { type = "string", description = "Replacement text." },
    replace_all = { type = "boolean", description = "Replace every occurrence (default false)." },
  },
  required = { "old_string", "new_string" },
}

local MAX_DIFF_LINES = 40

local function excerpt(diff)
  local lines, n = {}, 0
  for line in diff:gmatch("[^\n]*") do
    n = n + 1
    -- CRLF files: the excerpt is for reading; details.diff keeps the exact bytes.
    if n <= MAX_DIFF_LINES then lines[#lines + 1] = (line:gsub("\r$", "")) end
  end
  local text = table.concat(lines, "\n")
  if n > MAX_DIFF_LINES then
    text = text .. string.format("\n[fen: diff cut at %d lines]", MAX_DIFF_LINES)
  end
  return text
end

--- Normalises the three argument shapes into a list of {path, edits}.
local function batch(args)
  local shapes = (args.old_string and 1 or 0) + (args.edits and 1 or 0) + (args.files and 1 or 0)
  if shapes ~= 1 then
    return nil, "pass exactly one of old_string/new_string, edits, or files"
  end
  if args.files then
    if #args.files == 0 then return nil, "files is empty" end
    return args.files
  end
  if not args.path then return nil, "path is required with old_string or edits" end
  if args.edits then
    if #args.edits == 0 then return nil, "edits is empty" end
    return { { path = args.path, edits = args.edits } }
  end
  if args.new_string == nil then return nil, "new_string is required with old_string" end
  return { { path = args.path, edits = { { old_string = args.old_string, new_string = args.new_string, replace_all = args.replace_all } } } }
end

--- The batch applied to the editor's buffers (`fsroute`): every file is read and edited in
--- memory first, then written, so a failing edit changes nothing.
local function apply_routed(files, route)
  local out = { files = {} }
  local texts = {}
  for i, f in ipairs(files) do
    local abs = route.absolute(f.path)
    local text, err = route.editor.read(abs)
    if not text then return nil, string.format("%s: %s; no file was changed", f.path, err or "cannot read it") end
    local r, eerr = native.edit.apply_text(text, f.edits, f.path)
    if not r then return nil, string.format("%s: %s; no file was changed", f.path, eerr) end
    texts[i] = { path = abs, text = r.text }
    out.files[i] = r
  end
  for _, t in ipairs(texts) do
    local ok, err = route.editor.write(t.path, t.text)
    if not ok then return nil, string.format("%s: %s", t.path, err or "the editor refused the write") end
  end
  return out
end

return function()
  return {
    name = "edit",
    label = "edit",
    description = DESCRIPTION,
    risk = "write",
    concurrency = "exclusive",
    -- The arguments naming the files it changes (one mutation per file per turn).
    mutates = { "path", "files[].path" },
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "File to edit (single-file shapes)." },
        old_string = { type = "string" },
        new_string = { type = "string" },
        replace_all = { type = "boolean" },
        edits = { type = "array", items = EDIT_ITEM, description = "Several edits of one file." },
        files = {
          type = "array",
          description = "Several files: [{path, edits}].",
          items = {
            type = "object",
            properties = { path = { type = "string" }, edits = { type = "array", items = EDIT_ITEM } },
            required = { "path", "edits" },
          },
        },
      },
    },
    execute = function(args)
      local files, err = batch(args)
      if not files then return util.fail("error: " .. err) end
      local route = require("fen.lib.fsroute")
      local r, aerr
      if route.editor and route.routed(files[1].path) then
        r, aerr = apply_routed(files, route)
      else
        r, aerr = native.edit.apply(files)
      end
      if not r then
        -- The engine's message usually says so already; say it once.
        local note = aerr:lower():find("no file was changed", 1, true) and "" or "\nNo file was changed."
        return util.fail("error: " .. aerr .. note)
      end
      local parts, details = {}, { files = {} }
      for i, f in ipairs(r.files) do
        local shown = files[i].path
        local fuzzy = {}
        for j, s in ipairs(f.strategies) do
          if s ~= "exact" then fuzzy[#fuzzy + 1] = string.format("edit %d matched by %s", j, s) end
        end
        local note = #fuzzy > 0 and (" (" .. table.concat(fuzzy, ", ") .. ")") or ""
        parts[#parts + 1] = string.format("edited %s: %s, first changed line %d%s\n%s",
          shown, util.plural(f.replacements, "replacement"), f.first_changed_line, note, excerpt(f.diff))
        details.files[#details.files + 1] = {
          path = shown, diff = f.diff, replacements = f.replacements,
          first_changed_line = f.first_changed_line, strategies = f.strategies,
        }
      end
      return util.ok(table.concat(parts, "\n\n"), details)
    end,
  }
end
