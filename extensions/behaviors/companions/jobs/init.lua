-- jobs: background shell jobs started by `bash{..., background = true}` (the native side is
-- `fen.native.jobs`).
--   job_output{id, wait_s?}   the output logged since the last read, and the status
--   job_kill{id}              SIGTERM to the job's process group, SIGKILL after 2 s
--   /jobs                     lists them; status item `jobs:N` (running jobs, hidden at 0)
-- A job's exit is announced to the model once, before its next call (unless the model killed
-- it or already saw the exit through job_output). Every job is stopped when fen exits.
local native = require("fen.native")

local MAX_WAIT_S = 300
local MAX_OUTPUT_BYTES = 60 * 1024   -- under the 64 KiB result cap

local function result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

return function(api)
  local state = api.state()
  state.seen_exit = state.seen_exit or {}   -- id -> true once the model knows it ended
  state.watched = state.watched or {}

  --- Announces the job's exit once, through the steering queue (drained before the next
  --- model call, or at the start of the next turn when none runs).
  local function watch(id)
    if state.watched[id] then return end
    state.watched[id] = true
    native.jobs.on_exit(id, function(info)
      if state.seen_exit[id] or info.killed then return end
      state.seen_exit[id] = true
      pcall(api.enqueue, "steering", string.format(
        "[fen: background job %s (%s) has %s; job_output{id = %q} reads the rest of its log]",
        id, info.command, info.status, id))
    end)
  end

  api.on("tool-result", function(ev)
    local r = ev.result or {}
    if r.tool_name == "bash" and type(r.details) == "table" and r.details.background and r.details.job then
      watch(r.details.job)
    end
  end)

  api.register("tool", {
    name = "job_output",
    label = "job output",
    description = "Read a background job's output (started with bash background: true): the bytes logged since the previous job_output of that job (at most the last 60 KB of them), then its status: running, exited N or signal N. wait_s (default 0, at most 300) waits for new output or the exit when there is none yet.",
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        id = { type = "string", description = "The job id, e.g. bg1." },
        wait_s = { type = "number", minimum = 0, maximum = MAX_WAIT_S, description = "Seconds to wait for new output (default 0)." },
      },
      required = { "id" },
    },
    execute = function(args)
      local wait = math.max(0, math.min(tonumber(args.wait_s) or 0, MAX_WAIT_S))
      local o, err = native.jobs.output(args.id, { wait_ms = math.floor(wait * 1000), max_bytes = MAX_OUTPUT_BYTES })
      if not o then return result("error: " .. err, true) end
      if not o.running then state.seen_exit[o.id] = true end
      local parts = {}
      if o.skipped > 0 then
        parts[#parts + 1] = string.format("[fen: %s of earlier output skipped; the whole log is %s]", native.truncate.human_bytes(o.skipped), o.log)
      end
      local text = native.sanitize(o.text)
      if text ~= "" then parts[#parts + 1] = (text:gsub("\n$", "")) end
      if o.capped then parts[#parts + 1] = "[fen: the log reached its cap; later output is discarded]" end
      parts[#parts + 1] = string.format("[job %s %s]", o.id, o.status)
      return result(table.concat(parts, "\n"), false,
        { id = o.id, status = o.status, exit_code = o.exit_code, signal = o.signal, bytes = #o.text, skipped = o.skipped, log = o.log })
    end,
  })

  api.register("tool", {
    name = "job_kill",
    label = "job kill",
    description = "Stop a background job: SIGTERM to its whole process group, SIGKILL after 2 s if anything is left. Returns its final status.",
    -- It ends a process fen itself started (no command runs): judged like a write, so auto
    -- mode does not ask for it.
    risk = "write",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = { id = { type = "string", description = "The job id, e.g. bg1." } },
      required = { "id" },
    },
    execute = function(args)
      local info, err = native.jobs.kill(args.id)
      if not info then return result("error: " .. err, true) end
      state.seen_exit[info.id] = true
      return result(string.format("job %s stopped (%s)", info.id, info.status), false,
        { id = info.id, status = info.status, exit_code = info.exit_code, signal = info.signal })
    end,
  })

  api.register("command", {
    name = "jobs", order = 57, description = "List the background jobs.",
    handler = function()
      local lines = {}
      for _, j in ipairs(native.jobs.list()) do
        lines[#lines + 1] = string.format("%-5s %-10s pid %-7d %s  (log %s)", j.id, j.status, j.pid, j.command, j.log)
      end
      if #lines == 0 then return "no background jobs" end
      return table.concat(lines, "\n")
    end,
  })

  api.register("status", {
    name = "jobs", order = 40,
    render = function()
      local n = native.jobs.running()
      if n == 0 then return nil end
      return "jobs:" .. n
    end,
  })
end
