-- bash: one shell command under the native process supervisor.
local native = require("fen.native")
local util = require("util")

local DEFAULT_TIMEOUT, MAX_TIMEOUT = 120, 600

return function(api)
  return {
    name = "bash",
    label = "bash",
    description = [[Run a shell command (bash -c, or sh -c without bash) in its own process group, with stdin from /dev/null and no terminal (interactive prompts fail instead of hanging; GIT_EDITOR, EDITOR and PAGER are disabled). stderr is merged into stdout in order. timeout is in seconds (default 120, max 600); on timeout the whole process group is killed. Output keeps the first and last parts (about 32 KB each) when long, with the full output saved to a file whose path is given. ANSI colours and progress redraws are cleaned. The last line states [exit N], [signal N] or [timed out after Ns]; a non-zero exit is an error. The call returns when the shell exits; background processes (cmd &) keep running and are listed. With background: true the command runs as a background job instead (a dev server, a watcher): the call returns at once with {job, pid, log}; read its output with job_output, stop it with job_kill; every job is stopped when fen exits.]],
    risk = "shell",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = {
        command = { type = "string", description = "The command line." },
        timeout = { type = "integer", minimum = 1, maximum = MAX_TIMEOUT, description = "Seconds (default 120)." },
        cwd = { type = "string", description = "Working directory (default: the session's)." },
        description = { type = "string", description = "Five words on what this does, for the user." },
        background = { type = "boolean", description = "Run as a background job and return at once (default false)." },
      },
      required = { "command" },
    },
    execute = function(args, _yield, ctx)
      if args.cwd and not native.fs.is_dir(args.cwd) then
        return util.fail(string.format("error: cwd %s is not an existing directory", args.cwd))
      end
      if args.background then
        local job, jerr = native.jobs.start({ command = args.command, cwd = args.cwd })
        if not job then return util.fail("error: " .. jerr) end
        local info = { job = job.id, pid = job.pid, log = job.log }
        return util.ok(native.json.encode(info) .. string.format(
          "\n[fen: started in the background; job_output{id = %q} reads its output, job_kill{id = %q} stops it]", job.id, job.id),
          { job = job.id, pid = job.pid, log = job.log, command = args.command, background = true })
      end
      local timeout = args.timeout or DEFAULT_TIMEOUT
      local on_output = function(text)
        api.emit({ type = "tool-update", tool_name = "bash", tool_call_id = ctx and ctx.tool_call_id, text = text })
      end
      -- In an editor that offers its terminal (`fen acp`; only where fen itself would run the
      -- command outside its sandbox, see docs/acp.md), the command runs there, in sight.
      local route = require("fen.lib.fsroute")
      if route.terminal then
        local t, terr = route.terminal({ command = args.command, cwd = args.cwd, timeout_ms = timeout * 1000,
          call_id = ctx and ctx.tool_call_id })
        if terr then return util.fail("error: " .. terr) end
        if t then
          local parts = {}
          if (t.output or "") ~= "" then parts[#parts + 1] = (t.output:gsub("\n$", "")) end
          if t.truncated then parts[#parts + 1] = "[fen: the editor's terminal kept only the end of the output]" end
          local status, failed
          if t.timed_out then
            status, failed = string.format("[timed out after %ds]", timeout), true
          elseif t.signal then
            status, failed = string.format("[signal %s]", tostring(t.signal)), true
          else
            status, failed = string.format("[exit %d]", t.exit_code or -1), (t.exit_code or -1) ~= 0
          end
          parts[#parts + 1] = status
          local details = { command = args.command, exit_code = t.exit_code, signal = t.signal, timed_out = t.timed_out,
            terminal = t.terminal_id, editor = true }
          local text = table.concat(parts, "\n")
          if failed then return util.fail(text, details) end
          return util.ok(text, details)
        end
      end
      local run_opts = { command = args.command, cwd = args.cwd, timeout_ms = timeout * 1000 }
      local r, err = native.process.run(run_opts, on_output)
      if not r then return util.fail("error: " .. err) end
      -- Escalation: a command the sandbox stopped may run again outside it if the person says
      -- so, once or always for the command's rule (its stable prefix, `Bash(cargo test *)`,
      -- kept in sandbox.unsandboxed); headless runs get the line naming the boundary and how
      -- to allow it.
      local scope = {}
      if r.sandbox_blocked then
        scope = native.policy.sandbox_scope(args.command) or {}
        local options, ALWAYS = { "once" }, nil
        if #scope > 0 then
          options[#options + 1] = "always for " .. table.concat(scope, ", ")
          ALWAYS = #options
        end
        options[#options + 1] = "no"
        local choice = api.ui.select(
          string.format("The sandbox stopped `%s`: %s\nRun it again outside the sandbox?", args.command, r.sandbox_blocked),
          options)
        if ALWAYS and choice == ALWAYS then
          for _, rule in ipairs(scope) do native.policy.allow_unsandboxed(rule) end
          api.emit({ type = "sandbox-always", rules = scope })
        end
        if choice == 1 or (ALWAYS and choice == ALWAYS) then
          run_opts.sandbox = false
          local again, aerr = native.process.run(run_opts, on_output)
          if not again then return util.fail("error: " .. aerr) end
          r = again
          r.escalated = true
        end
      end
      local parts = {}
      if r.text ~= "" then parts[#parts + 1] = (r.text:gsub("\n$", "")) end
      if (r.escaped_bytes or 0) > 0 then
        -- The bytes were escaped before the result sanitizer saw them: say so here.
        parts[#parts + 1] = string.format("[fen: output sanitized: %s escaped as \\xNN]", util.plural(r.escaped_bytes, "byte"))
      end
      if r.spill_path and not r.text:find(r.spill_path, 1, true) then
        parts[#parts + 1] = string.format("[fen: full output (%s) saved to %s]", native.truncate.human_bytes(r.total_bytes), r.spill_path)
      end
      if #r.background_pids > 0 then
        local pids = {}
        for _, p in ipairs(r.background_pids) do pids[#pids + 1] = tostring(p) end
        parts[#parts + 1] = "[fen: still running in the background: pids " .. table.concat(pids, " ") .. "]"
      end
      local status, failed
      if r.timed_out then
        status, failed = string.format("[timed out after %ds]", timeout), true
      elseif r.cancelled then
        status, failed = "[cancelled]", true
      elseif r.signal then
        status, failed = string.format("[signal %d]", r.signal), true
      else
        status, failed = string.format("[exit %d]", r.exit_code or -1), (r.exit_code or -1) ~= 0
      end
      parts[#parts + 1] = status
      if r.sandbox_blocked then
        -- Nobody could be asked to rerun it outside (a headless run): the line says which
        -- setting lifts the boundary, or that an interactive session would ask.
        local headless = api.kernel.run_options().headless
        if headless and r.sandbox_hint then r.sandbox_blocked = r.sandbox_hint end
        parts[#parts + 1] = "[fen: " .. r.sandbox_blocked .. "]"
        if #scope > 0 then
          parts[#parts + 1] = string.format(
            "[fen: to run such commands outside the sandbox every time, add %s to sandbox.unsandboxed in .fen/settings.local.json]",
            table.concat(scope, ", "))
        end
      end
      if r.escalated then parts[#parts + 1] = "[fen: ran outside the sandbox, as the user approved]" end
      if r.unsandboxed_rule then
        parts[#parts + 1] = "[fen: ran outside the sandbox: sandbox.unsandboxed rule " .. r.unsandboxed_rule .. "]"
      end
      local details = {
        command = args.command, exit_code = r.exit_code, signal = r.signal, timed_out = r.timed_out,
        cancelled = r.cancelled, duration_ms = r.duration_ms, bytes = r.total_bytes,
        truncated = r.truncated, escaped_bytes = r.escaped_bytes, spill_path = r.spill_path, background_pids = r.background_pids,
        sandboxed = r.sandboxed, sandbox_blocked = r.sandbox_blocked, escalated = r.escalated,
        unsandboxed_rule = r.unsandboxed_rule,
        -- Why it ran inside or outside the sandbox (`sandbox::plan`), kept in the session.
        plan = r.plan,
      }
      local text = table.concat(parts, "\n")
      if failed then return util.fail(text, details) end
      return util.ok(text, details)
    end,
  }
end
