-- write: create or replace a whole file, atomically.
local native = require("fen.native")
local util = require("util")

return function()
  return {
    name = "write",
    label = "write",
    description = [[Write a whole file: creates it (and missing parent directories) or replaces it. Atomic: readers never see a half-written file; an existing file keeps its permissions. Content is written exactly as given (line endings included). To change part of a file use edit instead. In a session, replacing an existing file requires having read it first, and is refused if it changed on disk since.]],
    risk = "write",
    concurrency = "exclusive",
    mutates = { "path" },
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "File to write (relative to the working directory; ~ expands)." },
        content = { type = "string", description = "The complete new content." },
      },
      required = { "path", "content" },
    },
    execute = function(args)
      if args.path == "" then
        return util.fail("error: path is empty; give the path of the file to write")
      end
      local route = require("fen.lib.fsroute")
      if route.routed(args.path) then
        -- Through the editor's buffer (`fen acp`): the editor saves it and shows the change.
        local ok, werr = route.editor.write(route.absolute(args.path), args.content)
        if not ok then return util.fail("error: " .. tostring(werr or "the editor refused the write")) end
        local lines = select(2, args.content:gsub("\n", "")) + ((args.content ~= "" and args.content:sub(-1) ~= "\n") and 1 or 0)
        return util.ok(string.format("wrote %s (%s) to %s (through the editor)", util.plural(#args.content, "byte"),
          util.plural(lines, "line"), args.path), { path = args.path, bytes = #args.content, lines_after = lines, editor = true })
      end
      local r, err = native.fs.write(args.path, args.content)
      if not r then return util.fail("error: " .. err) end
      local what = r.created and "new file"
        or string.format("replaced %s", util.plural(r.lines_before, "line"))
      return util.ok(
        string.format("wrote %s (%s) to %s (%s)", util.plural(r.bytes, "byte"), util.plural(r.lines_after, "line"), args.path, what),
        { path = args.path, bytes = r.bytes, lines_before = r.lines_before, lines_after = r.lines_after, created = r.created,
          -- Unified diff (at most 64 KB) for presenters; not part of the model's text.
          diff = r.diff, diff_truncated = r.diff_truncated }
      )
    end,
  }
end
