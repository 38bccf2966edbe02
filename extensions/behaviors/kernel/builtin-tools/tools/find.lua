-- find: files by glob over the same walker as grep, newest first.
local native = require("fen.native")
local util = require("util")

return function()
  return {
    name = "find",
    label = "find",
    description = [[Find files by glob pattern, e.g. "**/*.rs", "*.toml", "src/**/test_*.py" (a pattern without "/" matches file names at any depth). Respects .gitignore/.ignore and skips hidden directories. Results are paths relative to `path`, most recently modified first; at most `limit` (default 1000), followed by the count of the rest. Symlinks are not followed unless follow_symlinks=true (loops are detected).]],
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        pattern = { type = "string", description = "Glob pattern." },
        path = { type = "string", description = "Directory to search (default: the working directory)." },
        limit = { type = "integer", minimum = 1, description = "Most paths to show (default 1000)." },
        follow_symlinks = { type = "boolean" },
        no_ignore = { type = "boolean", description = "Include files ignored by .gitignore/.ignore." },
        include_hidden = { type = "boolean", description = "Include hidden files and directories." },
      },
      required = { "pattern" },
    },
    execute = function(args)
      local r, err = native.search.find({
        pattern = args.pattern, path = args.path, limit = args.limit,
        follow_symlinks = args.follow_symlinks, no_ignore = args.no_ignore,
        include_hidden = args.include_hidden,
      })
      if not r then return util.fail("error: " .. err) end
      local where = args.path or "."
      local text
      if r.total == 0 then
        text = string.format("no files match %q in %s", args.pattern, where)
      else
        text = table.concat(r.paths, "\n")
      end
      if r.rest > 0 then
        text = text .. string.format("\n[fen: %d more matches not shown; narrow the pattern or raise limit]", r.rest)
      end
      if r.loops > 0 then
        text = text .. string.format("\n[fen: %s skipped]", util.plural(r.loops, "symlink loop"))
      end
      if r.permission_denied > 0 then
        text = text .. string.format("\n[fen: %s could not be read (permission denied)]", util.plural(r.permission_denied, "path"))
      end
      return util.ok(text, {
        pattern = args.pattern, path = where, total = r.total, rest = r.rest,
        loops = r.loops, permission_denied = r.permission_denied,
      })
    end,
  }
end
