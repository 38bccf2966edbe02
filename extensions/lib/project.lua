-- project: where the project around fen's working directory is, for the companions that read
-- project files (skills, agents, commands, hooks). One walk, one rule: the repository root is
-- the nearest directory holding `.git` (a directory or a worktree's pointer file).
local native = require("fen.native")

local M = {}

-- Roots found, by directory: the companions ask for the same one several times a run. A
-- remembered root is checked again with one `stat` of its `.git` (of `dir`'s own outside a
-- repository, where `git init` would make one) instead of a walk with one per level.
local known = {}

--- The nearest directory from `dir` up holding `.git`, or `dir` itself outside a repository.
---@param dir string
---@return string
function M.root(dir)
  -- fen's working directory: the root the run context found once, at start.
  if native.paths.project_root and dir == native.fs.cwd() then return native.paths.project_root end
  local k = known[dir]
  if k and (native.fs.stat(k.root .. "/.git") ~= nil) == not k.outside then return k.root end
  local root, outside = M.find_root(dir)
  known[dir] = { root = root, outside = outside }
  return root
end

--- `root` without the memory; also whether `dir` is outside any repository.
---@param dir string
---@return string, boolean
function M.find_root(dir)
  local d = dir
  while d and d ~= "" do
    if native.fs.stat(d .. "/.git") then return d, false end
    local parent = d:match("^(.*)/[^/]*$")
    if not parent or parent == d then break end
    d = parent
  end
  return dir, true
end

--- The working directory and its parents up to the repository root, nearest first; only the
--- working directory outside a repository.
---@return string[]
function M.dirs()
  local cwd = native.fs.cwd()
  local root = M.root(cwd)
  local dirs, d = {}, cwd
  while d and d ~= "" do
    dirs[#dirs + 1] = d
    if d == root then return dirs end
    local parent = d:match("^(.*)/[^/]*$")
    if not parent or parent == d then break end
    d = parent
  end
  return { cwd }
end

--- The notice for project-defined servers left off until the folder is trusted (the
--- `untrusted` list of `native.mcp.configure` / `native.lsp.configure`), nil when none.
---@param label string "mcp" or "lsp"
---@param untrusted {name: string, file: string}[]
---@return string?
function M.untrusted_notice(label, untrusted)
  if #untrusted == 0 then return nil end
  local names = {}
  for _, u in ipairs(untrusted) do names[#names + 1] = u.name .. " (" .. u.file .. ")" end
  return label .. ": project-defined servers stay off until this folder is trusted (run with --trust): "
    .. table.concat(names, ", ")
end

return M
