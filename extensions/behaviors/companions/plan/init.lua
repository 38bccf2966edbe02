-- plan: plan mode. In the `plan` permission mode (`--permission-mode plan`, `/plan [task]`,
-- Shift+Tab in the TUI cycles default → auto → plan) the tools stay offered, but the
-- permission policy refuses everything that is not read-only, telling the model to finish its
-- plan. The model ends planning with `exit_plan {plan}`: the person sees the plan and chooses
-- 1 approve and run in default mode, 2 approve and run in auto mode, 3 keep planning (and says
-- what to change, which the model reads). Headless (`-p`), the plan is printed as the answer
-- and the run ends with exit 0. The plan is kept in the session (`/plan` shows it, also after
-- `-c`). The choice goes through `api.ui.select`/`api.ui.prompt`, so every presenter that
-- answers those (TUI, inline, line REPL, RPC) shows it.
local CYCLE = { default = "auto", auto = "plan", plan = "default" }

local DESCRIPTION = [[End planning: present your plan to the user for approval. Call it in plan mode once you have read what you need and the plan is complete; `plan` is Markdown (numbered steps, the files to change, how to verify). The result says whether the user approved it (then carry it out) or wants changes (then revise the plan and call exit_plan again).]]

return function(api)
  local state = api.state()

  local function mode()
    if state.mode then return state.mode end
    local o = api.kernel.run_options() or {}
    return o.permission_mode or "default"
  end

  local function set_mode(m)
    state.mode = m
    api.emit({ type = "permission-mode", mode = m })
    api.emit({ type = "redraw" })
  end

  -- Keep track of switches made elsewhere (`/permissions MODE`).
  api.on("permission-mode", function(ev) state.mode = ev.mode end)

  local function last_plan()
    local ok, s = pcall(api.session.latest_state)
    if ok and type(s) == "table" and type(s.plan) == "string" then return s end
    return state.last
  end

  local function record(plan, choice)
    state.last = { plan = plan, choice = choice, time = os.time() }
    pcall(api.session.append_state, state.last)
  end

  api.register("tool", {
    name = "exit_plan",
    label = "plan",
    description = DESCRIPTION,
    risk = "read",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = { plan = { type = "string", description = "The plan, in Markdown." } },
      required = { "plan" },
    },
    execute = function(args)
      local plan = args.plan
      if type(plan) ~= "string" or plan:match("^%s*$") then
        return { content = { { type = "text", text = "error: plan is empty; write the plan in Markdown" } }, is_error = true }
      end
      local o = api.kernel.run_options() or {}
      if o.headless then
        record(plan, "printed")
        api.emit({ type = "plan-presented", plan = plan })
        -- The run ends here: the plan is the answer.
        api.turn.cancel()
        return { content = { { type = "text", text = "The plan was shown; the run ends here." } }, is_error = false }
      end
      local items = {
        "1  approve and run in default mode (edits and commands ask)",
        "2  approve and run in auto mode (edits and sandboxed commands run)",
        "3  keep planning (say what to change)",
      }
      local ok, choice = pcall(api.ui.select, "Plan\n\n" .. plan .. "\n\nApprove this plan?", items)
      if not ok then choice = nil end
      if choice == 1 or choice == 2 then
        local m = choice == 1 and "default" or "auto"
        record(plan, m)
        api.emit({ type = "plan-presented", plan = plan, choice = m })
        set_mode(m)
        return { content = { { type = "text", text = string.format(
          "The user approved the plan. Permission mode is now %s: carry out the plan step by step.", m) } }, is_error = false }
      end
      local ok2, feedback = pcall(api.ui.prompt, "What should change in the plan?", "")
      if not ok2 then feedback = nil end
      record(plan, "keep")
      api.emit({ type = "plan-presented", plan = plan, choice = "keep" })
      local text = "The user did not approve the plan yet; stay in plan mode and revise it"
      if type(feedback) == "string" and not feedback:match("^%s*$") then
        text = text .. ". Their feedback: " .. feedback
      end
      return { content = { { type = "text", text = text .. ". Then call exit_plan again." } }, is_error = false }
    end,
  })

  api.register("command", {
    name = "plan",
    description = "Enter plan mode (only read-only tools run until you approve a plan); `/plan TASK` starts planning TASK; in plan mode `/plan` shows the last plan.",
    handler = function(args)
      local task = (args or ""):match("^%s*(.-)%s*$")
      local was = mode()
      set_mode("plan")
      if task ~= "" then
        local r = api.turn.submit(task, { when_busy = "steering" })
        if r and r.status == "error" then return "plan: " .. tostring(r.error) end
        return nil
      end
      local p = last_plan()
      local lines = { was == "plan" and "plan mode (read-only until a plan is approved)" or
        ("plan mode on (was " .. was .. "): only read-only tools run until you approve a plan") }
      if p then
        lines[#lines + 1] = ""
        lines[#lines + 1] = "last plan" .. (p.choice and (" (" .. p.choice .. ")") or "") .. ":"
        lines[#lines + 1] = p.plan
      end
      return table.concat(lines, "\n")
    end,
  })

  -- Shift+Tab in the TUI: default → auto → plan → default.
  api.register("control", {
    name = "cycle-mode",
    key = "shift-tab",
    description = "Cycle the permission mode: default → auto → plan.",
    handler = function()
      local next = CYCLE[mode()] or "default"
      set_mode(next)
      pcall(api.ui.notify, "permission mode: " .. next)
    end,
  })

  api.register("status", {
    name = "plan-mode",
    order = 5,
    render = function()
      local m = mode()
      if m == "plan" then return "⏸ plan mode" end
      if m == "auto" then return "auto" end
      return nil
    end,
  })
end
