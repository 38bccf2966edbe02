-- ls: directory entries, sorted, with type markers.
local native = require("fen.native")
local util = require("util")

return function()
  return {
    name = "ls",
    label = "ls",
    description = [[List a directory: entries sorted by name, "/" after directories and "@" after symlinks, hidden files included, the contents of .git skipped. depth (default 1) lists nested entries as relative paths. At most 500 entries are shown, followed by the count of the rest. Use find to search by name pattern.]],
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "Directory (default: the working directory)." },
        depth = { type = "integer", minimum = 1, maximum = 10, description = "How deep to list (default 1)." },
      },
    },
    execute = function(args)
      local path = args.path or "."
      local r, err = native.fs.list(path, { depth = args.depth or 1, limit = 500 })
      if not r then return util.fail("error: " .. err) end
      -- Built from the entries (not r.text) so the only truncation note is ours, with advice
      -- that fits this tool's parameters.
      local text = table.concat(r.entries, "\n")
      if r.total == 0 then text = string.format("(empty directory: %s)", path) end
      if r.truncated > 0 then
        text = text .. string.format("\n[fen: %d more entries not shown; list a subdirectory or lower depth]", r.truncated)
      end
      for _, issue in ipairs(r.issues) do
        text = text .. "\n[fen: " .. issue .. "]"
      end
      return util.ok(text, { path = path, entries = r.total, truncated = r.truncated })
    end,
  }
end
