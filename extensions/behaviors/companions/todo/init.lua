-- todo: a structured todo list the model keeps for multi-step work.
--   todo_write{items = [{text, status}]}  overwrites the list (`[]` clears it)
--   /todos [show|panel]                   prints the list (no model call) / toggles the panel
--   panel `todos`, status item `todo:C/T` (hidden when the list is empty)
-- The snapshot `{items, version}` is the tool result's `details`, so it is stored with the
-- session and replayed on resume; it is also persisted as extension state, which survives a
-- compaction that summarised the todo_write call away. The list itself lives in
-- `fen.lib.todos` (shared with the compaction companion and the json presenter).
local todos = require("fen.lib.todos")

local DESCRIPTION = [[Create or update the structured todo list for this session. Use it for non-trivial multi-step work and keep it current as you go. This overwrites the whole list: pass every item that should remain. status is pending, in_progress or completed; at most one item may be in_progress; at most 50 items of at most 240 bytes each. An empty items array clears the list.]]

local PROMPT = [[For non-trivial multi-step work, keep a todo list with todo_write: mark the item you work on in_progress, mark items completed as soon as they are done, and clear the list when everything is finished.]]

local function result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

local function render(snapshot)
  if #snapshot.items == 0 then return "Todo list is empty." end
  local c = todos.counts(snapshot.items)
  return string.format("todo: %d/%d completed\n%s", c.completed, c.total, todos.lines(snapshot.items))
end

return function(api)
  local state = api.state()
  if state.panel == nil then state.panel = true end

  --- Rebuilds the list from the conversation (the newest todo_write result), else from the
  --- state persisted in the session, else empty.
  local function replay()
    local ok, messages = pcall(api.turn.messages)
    local snap = todos.latest_in(ok and messages or {})
    if not snap then
      local got, stored = pcall(api.session.latest_state)
      if got then snap = stored end
    end
    if not todos.adopt(snap) then todos.set({}, 0) end
  end

  api.prompt(PROMPT, { id = "todo", title = "Todo list", order = 70 })

  api.register("tool", {
    name = "todo_write",
    label = "todo",
    description = DESCRIPTION,
    risk = "read",
    concurrency = "exclusive",
    parameters = {
      type = "object",
      properties = {
        items = {
          type = "array",
          description = "The complete list; it replaces the previous one.",
          items = {
            type = "object",
            properties = {
              text = { type = "string", description = "Short task description." },
              status = { type = "string", enum = { "pending", "in_progress", "completed" } },
            },
            required = { "text", "status" },
          },
        },
      },
      required = { "items" },
    },
    execute = function(args)
      local items, err = todos.validate(args.items)
      if not items then return result("error: " .. err, true) end
      local snap = todos.set(items)
      pcall(api.session.append_state, snap)
      return result(#items == 0 and "Todo list cleared." or render(snap), false, snap)
    end,
  })

  api.register("command", {
    name = "todos", order = 55,
    description = "Show the todo list (no model call): /todos [show]; /todos panel toggles the panel.",
    handler = function(args)
      local word = (args or ""):match("^%s*(%S*)")
      if word == "panel" then
        state.panel = not state.panel
        return "todos panel: " .. (state.panel and "on" or "off")
      end
      return render(todos.get())
    end,
  })

  api.register("panel", {
    name = "todos", title = "Todos",
    enabled = function() return state.panel and #todos.get().items > 0 end,
    render = function()
      local rows = {}
      for line in todos.lines():gmatch("[^\n]+") do rows[#rows + 1] = { text = line } end
      return rows
    end,
  })

  api.register("status", { name = "todo", order = 35, render = function() return todos.status_text() end })

  api.register("introspect", {
    name = "todos", description = "The current todo list and its counts.",
    snapshot = function()
      local snap = todos.get()
      return { items = snap.items, version = snap.version, counts = todos.counts(snap.items) }
    end,
  })

  api.on("agent-started", replay)
  api.on("reset-conversation", replay)
end
