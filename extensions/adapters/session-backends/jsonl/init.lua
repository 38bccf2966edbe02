-- jsonl: sessions as append-only JSONL files, one JSON object a line:
--   {"type":"session","version","id","cwd","created","fen_version"}          header
--   {"type":"message","id","parent_id","timestamp","message":{...}}          one canonical message
--   {"type":"compaction","id","summary","first_kept_entry_id","tokens_before","tokens_after",...}
--   {"type":"extension-state","id","extension","state"}
--   {"type":"checkpoint","id","turn","commit","files","skipped",...}  (api.session.append_record)
--   {"type":"branch","id","parent_id","before"?,"from_id"?,"turn"?}  the conversation continues
--     from message `parent_id` (a rewind, a switch to another branch; fen.native.jsonl.branch)
-- under $XDG_STATE_HOME/fen/sessions/<slug of the working directory>/ (FEN_SESSION_DIR
-- overrides). Writes, leases and reading live in the native store (fen.native.session).
-- A session object is {path, id, writer, last_id, states}.
local native = require("fen.native")
local store = native.session

local function now_ms() return math.floor(os.time() * 1000) end

local function text_of(content)
  if type(content) == "string" then return content end
  local parts = {}
  for _, b in ipairs(content or {}) do if b.text then parts[#parts + 1] = b.text end end
  return table.concat(parts, "\n")
end

local function info_of(s)
  return { path = s.path, id = s.id, created = s.created, modified = s.modified, title = s.title, message_count = s.message_count,
    branches = s.branches }
end

local function session_list(opts)
  local list, err = store.list(opts.dir or store.dir_for(opts.cwd or native.fs.cwd()))
  if not list then error(err, 0) end
  return list
end

--- Records of other types (checkpoints) read for a fork, to be written again around the message
--- they were next to: `before[message]` precede it, `after[message]` follow it.
local carry = { before = setmetatable({}, { __mode = "k" }), after = setmetatable({}, { __mode = "k" }) }

--- The checkpoints companion numbers turns on from the latest one a session recorded.
local function note_record(session, rec)
  if rec.type == "checkpoint" and type(rec.turn) == "number" then
    local cur = session.states.checkpoints
    if type(cur) ~= "table" or (cur.turn or 0) < rec.turn then
      session.states.checkpoints = { turn = rec.turn }
    end
  end
end

return function(api)
  local backend = { name = "jsonl" }

  --- A new session. Its file is created with the first message, so runs that say nothing
  --- leave no empty sessions behind.
  function backend.open(opts)
    opts = opts or {}
    local cwd = opts.cwd or native.fs.cwd()
    return { dir = opts.dir or store.dir_for(cwd), cwd = cwd, states = {}, ids = setmetatable({}, { __mode = "k" }) }
  end

  local function writer_of(session)
    if not session.writer then
      local writer, id_or_err = store.create(session.dir, session.cwd)
      if not writer then error(id_or_err, 0) end
      session.writer, session.id, session.path = writer, id_or_err, writer:path()
    end
    return session.writer
  end

  function backend.open_existing(path, opts)
    local writer, err = store.open(path)
    if not writer then error(err, 0) end
    -- The id until load reads it from the header: the one in the file name.
    local id = path:match("_([%x%-]+)%.jsonl$")
    return { path = path, id = id, writer = writer, states = {}, ids = setmetatable({}, { __mode = "k" }) }
  end

  function backend.append_record(session, record)
    writer_of(session):append(record)
    note_record(session, record)
  end

  function backend.append(session, message)
    for _, rec in ipairs(carry.before[message] or {}) do backend.append_record(session, rec) end
    local id = store.new_id()
    writer_of(session):append({ type = "message", id = id, parent_id = session.last_id, timestamp = message.timestamp or now_ms(), message = message })
    session.last_id = id
    session.ids[message] = id
    for _, rec in ipairs(carry.after[message] or {}) do backend.append_record(session, rec) end
  end

  function backend.append_state(session, extension, state)
    writer_of(session):append({ type = "extension-state", id = store.new_id(), extension = extension, state = state })
    session.states[extension] = state
  end

  --- Written before the context is replaced; the messages before `first_kept` stay on disk.
  function backend.append_compaction(session, record, first_kept)
    local entry = { type = "compaction", id = store.new_id(), first_kept_entry_id = first_kept and session.ids[first_kept] }
    for k, v in pairs(record) do entry[k] = v end
    local writer = writer_of(session)
    writer:append(entry)
    -- A resume reads from the latest compaction on: every extension's latest state is written
    -- again after it, so none is lost to the compaction.
    local names = {}
    for name in pairs(session.states) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      writer:append({ type = "extension-state", id = store.new_id(), extension = name, state = session.states[name] })
    end
    session.writer:sync()
  end

  function backend.latest_state(session, extension)
    return session.states[extension]
  end

  function backend.sync(session)
    if session.writer then session.writer:sync() end
  end

  function backend.close(session)
    if session.writer then session.writer:close() end
  end

  --- Messages to replay: from the latest compaction on (its summary as a user message that is
  --- not stored again), plus the latest extension states. Sets `session.last_id`.
  --- `opts.branch` ({leaf, before}, from `find`): another branch of the file. Resumed, it
  --- becomes the one in use (a branch record is appended); forked, it is only read.
  function backend.load(path, opts)
    local at = opts and opts.branch
    if at and opts.session and opts.session.writer then
      opts.session.writer:append({ type = "branch", id = store.new_id(), parent_id = at.leaf, before = at.before })
      at = nil
    end
    local r, err = store.resume(path, at)
    if not r then error(err, 0) end
    local messages, session = {}, (opts and opts.session) or {}
    session.states = session.states or {}
    session.ids = session.ids or setmetatable({}, { __mode = "k" })
    -- After a compaction the context is its summary, then the kept and later messages.
    local compaction = r.compaction_index and r.records[r.compaction_index]
    if compaction and compaction.summary then
      messages[1] = {
        role = "user", timestamp = now_ms(),
        content = "[Summary of the earlier conversation, which was compacted]\n" .. compaction.summary,
      }
    end
    -- A fork (no session given) writes the checkpoint records again next to their messages.
    local forking = not (opts and opts.session)
    local pending, last_message = {}, nil
    for _, rec in ipairs(r.records) do
      if rec.type == "checkpoint" then
        note_record(session, rec)
        if forking then pending[#pending + 1] = rec end
      elseif rec.type == "extension-state" and rec.extension == "checkpoints" and type(rec.state) == "table" then
        note_record(session, { type = "checkpoint", turn = rec.state.turn })
      elseif rec.type == "message" and type(rec.message) == "table" and forking and #pending > 0 then
        carry.before[rec.message] = pending
        pending = {}
      end
      if rec.type == "message" and type(rec.message) == "table" then last_message = rec.message end
    end
    if forking and #pending > 0 and last_message then carry.after[last_message] = pending end
    -- Turns are numbered across the file's branches (their snapshots are named by number).
    if r.max_turn then note_record(session, { type = "checkpoint", turn = r.max_turn }) end
    for _, rec in ipairs(r.records) do
      if rec.type == "session" and rec.id then
        -- The header names the session (what /resume and api.session.info report).
        session.id = session.id or rec.id
      elseif rec.type == "message" and type(rec.message) == "table" then
        messages[#messages + 1] = rec.message
        session.last_id = rec.id
        session.ids[rec.message] = rec.id
      elseif rec.type == "extension-state" and rec.extension and rec.extension ~= "checkpoints" then
        session.states[rec.extension] = rec.state
      end
    end
    if r.bad_lines > 0 then
      api.emit({ type = "info", info = string.format("%s: skipped %d damaged line(s); run `fen session doctor %s`", path, r.bad_lines, path) })
    end
    return messages
  end

  function backend.list(opts) return session_list(opts or {}) end

  function backend.latest(opts)
    local list = session_list(opts or {})
    return list[1] and info_of(list[1]) or nil
  end

  --- Sessions whose id starts with `opts.query`, or whose path is it; or another branch of
  --- one, whose leaf (the id of its last message) starts with it (`branch` set).
  function backend.find(opts)
    local q = opts.query or ""
    local out = {}
    for _, s in ipairs(session_list(opts)) do
      if s.path == q or (s.id and s.id:sub(1, #q) == q) or s.path:match("[^/]*$"):sub(1, #q) == q then
        out[#out + 1] = info_of(s)
      elseif #q >= 8 then
        for _, b in ipairs(s.branches or {}) do
          if b.point.leaf and b.point.leaf:sub(1, #q) == q then
            local info = info_of(s)
            info.branch, info.title, info.message_count = b.point, b.title, b.message_count
            out[#out + 1] = info
          end
        end
      end
    end
    return out
  end

  api.register("session-backend", backend)
end
