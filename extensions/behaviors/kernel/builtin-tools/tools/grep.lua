-- grep: in-process regex or literal search (ripgrep's crates), .gitignore-aware.
local native = require("fen.native")
local util = require("util")

return function()
  return {
    name = "grep",
    label = "grep",
    description = [[Search file contents with a regular expression (Rust regex syntax) or a literal string. Respects .gitignore/.ignore and skips hidden directories and binary files; a path you name explicitly is always searched, and the output says when ignored files would also match (pass no_ignore=true to include them). output_mode: "content" (default; path:line:text, with `context` lines around each match), "files_with_matches", or "count". glob filters files (e.g. "*.rs", "src/**/*.ts"). At most head_limit results (default 100), grouped by file in path order; long lines are clipped around the match.]],
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        pattern = { type = "string", description = "Regular expression (or literal text with literal=true)." },
        path = { type = "string", description = "File or directory to search (default: the working directory)." },
        glob = { type = "string", description = "Only files matching this glob, e.g. \"*.rs\"." },
        ignore_case = { type = "boolean" },
        literal = { type = "boolean", description = "Treat pattern as plain text." },
        context = { type = "integer", minimum = 0, maximum = 20, description = "Lines of context around each match." },
        output_mode = { type = "string", enum = { "content", "files_with_matches", "count" } },
        head_limit = { type = "integer", minimum = 1, description = "Most results to show (default 100)." },
        no_ignore = { type = "boolean", description = "Also search files ignored by .gitignore/.ignore." },
        include_hidden = { type = "boolean", description = "Also search hidden files and directories." },
      },
      required = { "pattern" },
    },
    execute = function(args)
      -- Only the options the native search knows (it refuses unknown ones).
      local r, err = native.search.grep({
        pattern = args.pattern, path = args.path, glob = args.glob, ignore_case = args.ignore_case,
        literal = args.literal, context = args.context, output_mode = args.output_mode,
        head_limit = args.head_limit, no_ignore = args.no_ignore, include_hidden = args.include_hidden,
      })
      if not r then return util.fail("error: " .. err) end
      local where = args.path or "."
      local text = (r.text:gsub("\n$", ""))
      if r.total_matches == 0 and r.total_files == 0 then
        text = string.format("no matches for %q in %s", args.pattern, where)
      end
      for _, note in ipairs(r.notes) do
        text = text .. "\n[fen: " .. note .. "]"
      end
      return util.ok(text, {
        pattern = args.pattern, path = where, matches = r.total_matches, files = r.total_files,
        truncated = r.truncated, ignored_matching_files = r.ignored_matching_files,
      })
    end,
  }
end
