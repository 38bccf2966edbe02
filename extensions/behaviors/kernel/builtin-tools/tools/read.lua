-- read: a window of a text file with line numbers, honest truncation and a continuation hint.
local native = require("fen.native")
local util = require("util")

local DESCRIPTION = [[Read files. Returns numbered lines (`cat -n` style).
Shapes: {path, offset?, limit?} for one file, or {paths: [...]} for several at once, each entry a path string or {path, offset, limit}.
offset is the 1-based first line (default 1); limit the number of lines (default 2000). Output is capped at 2000 lines and 50 KB per file; a truncated read ends with the exact offset to continue from. Lines longer than 2000 characters are clipped. A directory lists its entries; PNG, JPEG, GIF and WebP images are returned as images you can see (scaled to fit 2000x2000); other binary files are reported (type and size), not dumped. Prefer one call with `paths` over several calls.]]

local MIME_NAME = { ["image/png"] = "PNG", ["image/jpeg"] = "JPEG", ["image/gif"] = "GIF", ["image/webp"] = "WebP" }

--- The text that goes with an image block.
local function image_note(path, r)
  local note = string.format("image file %s: %s, %dx%d, %d bytes", path, MIME_NAME[r.mime_type] or r.mime_type,
    r.original_width, r.original_height, r.size)
  if r.width ~= r.original_width or r.height ~= r.original_height or r.bytes ~= r.size then
    note = note .. string.format("\n[fen: image resized to %dx%d (%s, %d bytes) to fit 2000x2000 and 3.75 MB]",
      r.width, r.height, MIME_NAME[r.mime_type] or r.mime_type, r.bytes)
  end
  return note
end

--- A text file read through the editor's buffer (`fsroute`): the same window and numbering.
local function read_routed(req, route)
  local text, err = route.editor.read(route.absolute(req.path))
  if not text then return nil, err or ("cannot read " .. req.path) end
  local lines = {}
  if text ~= "" then
    for line in (text:gsub("\r\n", "\n") .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
      lines[#lines + 1] = line
    end
  end
  local first = req.offset or 1
  local last = math.min(#lines, first + (req.limit or 2000) - 1)
  local details = { path = req.path, kind = "text", first_line = first, last_line = last, total_lines = #lines,
    bytes = #text, truncated = last < #lines, next_offset = last < #lines and last + 1 or nil, editor = true }
  if #lines == 0 then return string.format("(empty file: %s, 0 bytes)", req.path), details end
  if first > #lines then
    return nil, string.format("offset %d is past the end of %s (%d lines)", first, req.path, #lines)
  end
  local out = util.number_lines(table.concat(lines, "\n", first, last), first)
  if last < #lines then
    out = out .. string.format("\n[fen: showing lines %d-%d of %d. Continue with offset=%d.]", first, last, #lines, last + 1)
  end
  return out, details
end

--- Returns text, details and, for an image, its image block.
local function read_one(req)
  local route = require("fen.lib.fsroute")
  if route.routed(req.path) then return read_routed(req, route) end
  local r, err = native.fs.read(req.path, { offset = req.offset, limit = req.limit, numbered = true, images = true })
  if not r then
    return nil, err
  end
  if r.kind == "directory" then
    local l, lerr = native.fs.list(req.path, { depth = 1 })
    if not l then return nil, lerr end
    local listing = table.concat(l.entries, "\n")
    if l.truncated > 0 then
      listing = listing .. string.format("\n[fen: %d more entries not shown; use ls or find]", l.truncated)
    end
    return string.format("%s is a directory; its entries:\n%s", req.path, listing),
      { path = req.path, kind = "directory", entries = l.total }
  end
  if r.kind == "image" then
    return image_note(req.path, r),
      { path = req.path, kind = "image", bytes = r.size, mime_type = r.mime_type, width = r.width, height = r.height,
        original_width = r.original_width, original_height = r.original_height },
      { type = "image", data = r.data, mime_type = r.mime_type }
  end
  if r.kind == "binary" then
    local why = r.image_error and string.format(" [fen: %s]", r.image_error) or ""
    return string.format("binary file, %d bytes, %s: %s (not shown as text)%s", r.size, r.binary_kind, req.path, why),
      { path = req.path, kind = "binary", bytes = r.size, binary_kind = r.binary_kind }
  end
  local details = {
    path = req.path, kind = "text", first_line = r.first_line, last_line = r.last_line,
    total_lines = r.total_lines, bytes = r.total_bytes, truncated = r.next_offset ~= nil,
    next_offset = r.next_offset, clipped_lines = r.clipped_lines, escaped_bytes = r.escaped_bytes,
    crlf = r.crlf, bom = r.bom,
  }
  if r.total_lines == 0 then
    return string.format("(empty file: %s, %d bytes)", req.path, r.total_bytes), details
  end
  local parts = { util.number_lines(r.text, r.first_line) }
  if r.next_offset then
    local why = r.truncated_by == "bytes" and " (50 KB limit)" or ""
    parts[#parts + 1] = string.format("[fen: showing lines %d-%d of %d%s. Continue with offset=%d.]",
      r.first_line, r.last_line, r.total_lines, why, r.next_offset)
  end
  if r.clipped_lines > 0 then
    parts[#parts + 1] = string.format(
      "[fen: %s longer than 2000 characters clipped; to see one whole, use bash, e.g. sed -n '%dp' %s | cut -c 2001-12000]",
      util.plural(r.clipped_lines, "line"), r.first_clipped_line or r.first_line, req.path)
  end
  if r.escaped_bytes > 0 then
    parts[#parts + 1] = string.format("[fen: %d bytes that are not valid UTF-8 text are shown as \\xNN]", r.escaped_bytes)
  end
  if r.crlf then
    parts[#parts + 1] = "[fen: this file uses CRLF line endings (shown without \\r); edit keeps them]"
  end
  -- The usual single part is returned as is (concat would copy 50 KB).
  if #parts == 1 then return parts[1], details end
  return table.concat(parts, "\n"), details
end

return function()
  return {
    name = "read",
    label = "read",
    description = DESCRIPTION,
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        path = { type = "string", description = "File to read (relative to the working directory; ~ expands)." },
        offset = { type = "integer", minimum = 1, description = "1-based first line (default 1)." },
        limit = { type = "integer", minimum = 1, description = "Number of lines (default 2000)." },
        paths = {
          type = "array",
          description = "Several files at once: path strings or {path, offset, limit} objects.",
          items = {
            anyOf = {
              { type = "string" },
              {
                type = "object",
                properties = {
                  path = { type = "string" },
                  offset = { type = "integer", minimum = 1 },
                  limit = { type = "integer", minimum = 1 },
                },
                required = { "path" },
              },
            },
          },
        },
      },
    },
    execute = function(args)
      if args.paths and args.path then
        return util.fail("error: pass either path or paths, not both")
      end
      if not args.paths then
        if not args.path then
          return util.fail("error: read needs a path (or paths for several files)")
        end
        local text, details, image = read_one(args)
        if not text then return util.fail("error: " .. details) end
        if image then
          return { content = { { type = "text", text = text }, image }, is_error = false, details = details }
        end
        return util.ok(text, details)
      end
      if #args.paths == 0 then
        return util.fail("error: paths is empty; list at least one file")
      end
      -- One text block per file: each stays under the result cap on its own, so a big first
      -- file cannot push the others out of the result.
      local blocks, files, failed = {}, {}, 0
      for _, entry in ipairs(args.paths) do
        local req = type(entry) == "string" and { path = entry } or entry
        local text, details, image = read_one(req)
        if not text then
          failed = failed + 1
          text = "error: " .. details
          details = { path = req.path, error = true }
        end
        blocks[#blocks + 1] = { type = "text", text = string.format("==> %s <==\n%s", req.path, text) }
        if image then blocks[#blocks + 1] = image end
        files[#files + 1] = details
      end
      return { content = blocks, is_error = failed == #args.paths, details = { files = files, failed = failed } }
    end,
  }
end
