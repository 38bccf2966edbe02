-- fen.lib.theme: the TUI's styles by role. One table per Lua state (require caches it), so a
-- user extension restyles rows by changing fields, e.g.
--   require("fen.lib.theme").tool = { fg = "magenta" }
-- and /reload applies it. A style is a table of `fg`, `bg` (default, black, red, green,
-- yellow, blue, magenta, cyan, white, bright-black ... bright-white), `bold`, `dim`, `italic`,
-- `underline`, `reverse`, `strike`. The defaults use the 16 base colours so they read on light
-- and dark terminals; NO_COLOR drops colours (attributes stay).
return {
  user_prefix = { fg = "green", bold = true },
  user = { bold = true },
  queued = { fg = "yellow" },
  tool = { fg = "cyan" },
  ok = { fg = "green" },
  err = { fg = "red" },
  dim = { dim = true },
  thinking = { dim = true, italic = true },
  info = { fg = "yellow" },
  error = { fg = "red" },
  status = { fg = "cyan" },
  hint = { fg = "yellow" },
  -- Diffs of edit/write results (tui/toolrows.lua hands these to the native diff view).
  ["diff.add"] = { fg = "green" },
  ["diff.del"] = { fg = "red" },
  ["diff.add.word"] = { fg = "green", reverse = true },
  ["diff.del.word"] = { fg = "red", reverse = true },
  ["diff.hunk"] = { fg = "cyan" },
  ["diff.lineno"] = { dim = true },
  ["diff.file"] = { bold = true },
}
