-- question: a tool the model uses to ask the person structured questions. Each question is a
-- numbered choice of its options with a free-text "other" as the last number; the answers go
-- back as the result. It asks through `api.ui.select` and `api.ui.prompt`, so every presenter
-- that answers those (TUI, inline, line REPL, RPC/ACP) shows it. A multi-select question goes
-- to `api.ui.select_multi` (the TUI: Space or a digit toggles, Enter confirms); a presenter
-- without it asks for the numbers of the chosen options as text (`1 3`). Headless runs never wait: the
-- result says no one can answer and the model should decide itself.
local DESCRIPTION = [[Ask the user one or more multiple-choice questions when a decision is theirs (a preference, an ambiguous requirement, a trade-off) and you cannot find the answer yourself. Each question has 2-6 short options (label, optional description); the user may also type their own answer. Set multi_select when several options may be chosen. Do not use it for permission to run tools, and do not ask what you can find out by reading the code.]]

local HEADLESS = "No one can answer questions in this run (it is not interactive). Decide yourself: pick the option that best fits what you know, say which you picked and why, and go on."

local function trim(s) return (tostring(s or "")):match("^%s*(.-)%s*$") end

return function(api)
  --- Asks one question; returns the answer text, or nil when dismissed.
  local function ask_one(q, i, n)
    local options = type(q.options) == "table" and q.options or {}
    local title = (n > 1 and string.format("(%d/%d) ", i, n) or "") ..
      (type(q.header) == "string" and q.header ~= "" and (q.header .. ": ") or "") .. trim(q.question)
    local items = {}
    for k, o in ipairs(options) do
      local label = type(o) == "table" and (o.label or "") or tostring(o)
      local desc = type(o) == "table" and o.description or nil
      items[k] = string.format("%d  %s%s", k, label, (type(desc) == "string" and desc ~= "") and (" — " .. desc) or "")
    end
    local other = #items + 1
    items[other] = string.format("%d  other (type your own answer)", other)
    local function label(k)
      local o = options[k]
      return type(o) == "table" and tostring(o.label or "") or tostring(o)
    end
    if q.multi_select then
      local okm, picked, why = pcall(api.ui.select_multi, title, items)
      if okm and type(picked) == "table" then
        local chosen, wants_other = {}, false
        for _, k in ipairs(picked) do
          if k == other then wants_other = true
          elseif options[k] then chosen[#chosen + 1] = label(k) end
        end
        if wants_other then
          local ok2, text = pcall(api.ui.prompt, trim(q.question), "")
          if ok2 and text ~= nil and trim(text) ~= "" then chosen[#chosen + 1] = trim(text) end
        end
        return #chosen > 0 and table.concat(chosen, ", ") or nil
      end
      -- Dismissed (nil without a reason), or a presenter without select_multi (nil, "no user").
      if okm and picked == nil and why == nil then return nil end
      local list = {}
      for _, it in ipairs(items) do list[#list + 1] = "  " .. it end
      local ok, text = pcall(api.ui.prompt, title .. "\n" .. table.concat(list, "\n") ..
        "\nType the numbers of your choices (e.g. 1 3), or your own answer:", "")
      if not ok or text == nil then return nil end
      local chosen, all_numbers = {}, true
      for word in tostring(text):gmatch("[^%s,]+") do
        local k = tonumber(word)
        if k and options[k] then chosen[#chosen + 1] = label(k)
        elseif not (k == other) then all_numbers = false end
      end
      if all_numbers and #chosen > 0 then return table.concat(chosen, ", ") end
      return trim(text) ~= "" and trim(text) or nil
    end
    local ok, k = pcall(api.ui.select, title, items)
    if not ok or type(k) ~= "number" then return nil end
    if k == other then
      local ok2, text = pcall(api.ui.prompt, trim(q.question), "")
      if not ok2 or text == nil or trim(text) == "" then return nil end
      return trim(text)
    end
    return options[k] and label(k) or nil
  end

  api.register("tool", {
    name = "question",
    label = "question",
    description = DESCRIPTION,
    risk = "read",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = {
        questions = {
          type = "array", minItems = 1, maxItems = 4,
          items = {
            type = "object",
            properties = {
              question = { type = "string", description = "The question, ending with ?" },
              header = { type = "string", description = "A short label (a few words)." },
              options = {
                type = "array", minItems = 1,
                items = { type = "object", properties = {
                  label = { type = "string" }, description = { type = "string" } }, required = { "label" } },
              },
              multi_select = { type = "boolean", description = "Several options may be chosen." },
            },
            required = { "question", "options" },
          },
        },
      },
      required = { "questions" },
    },
    execute = function(args)
      local o = api.kernel.run_options() or {}
      if o.headless then
        return { content = { { type = "text", text = HEADLESS } }, is_error = false, details = { answered = false } }
      end
      local qs = args.questions or {}
      local lines, answers = {}, {}
      for i, q in ipairs(qs) do
        local a = ask_one(q, i, #qs)
        answers[i] = a
        lines[#lines + 1] = string.format("%s\n→ %s", trim(q.question), a or "(no answer: the user dismissed the question; decide yourself)")
      end
      return { content = { { type = "text", text = "The user answered:\n" .. table.concat(lines, "\n") } },
        is_error = false, details = { answers = answers } }
    end,
  })
end
