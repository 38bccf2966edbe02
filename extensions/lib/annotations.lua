---@meta
-- LuaCATS annotations of fen's extension API: the `api` table an extension's entry receives
-- and `require("fen.native")`. Nothing here runs; editors (lua-language-server) read it for
-- completion and checks. Add `<fen checkout>/extensions/lib` to `workspace.library`.
-- tests/annotations.rs checks that every field of the real tables is listed here. The options
-- classes (`fen.opts.*`) and register specs (`fen.spec.*`) are generated from the code into
-- annotations.gen.lua by `fen docs`; binding options are strict (an unknown key is an error).

---@alias fen.Risk "read"|"write"|"shell"
---@alias fen.Concurrency "parallel_safe"|"exclusive"

---@class fen.Event
---@field type string the event type (`"tool-call"`, `"assistant-text"`, ...; `fen list events`)

---@class fen.TurnResult
---@field status "ok"|"cancelled"|"error"|"queued"|"rejected"
---@field text string? the final answer
---@field error string?

---@class fen.Api
---@field name string your extension's name (its owner tag)
---@field first_party boolean true for embedded and `--extension-root` extensions
---@field turn fen.ApiTurn
---@field session fen.ApiSession
---@field ui fen.ApiUi
---@field kernel fen.ApiKernel? first-party extensions only
---@field settings fen.ApiSettings settings.json, loaded once per run (again on `/reload`)
local api = {}

---@class fen.SettingsFile
---@field scope "user"|"project"|"local" `~/.config/fen/settings.json`, `.fen/settings.json`, `.fen/settings.local.json`
---@field path string
---@field value any the file's JSON (nil when missing or unusable)
---@field error string? why the file could not be used

---@class fen.ApiSettings
---@field get fun(path: string?): any a copy of the value at a dotted path of the merged settings (user, then the project's files in a trusted folder); nil when absent
---@field files fun(): fen.SettingsFile[] each settings file as loaded, user first (for readers with a trust rule of their own)

--- Contributes a tool, command, hook, panel, status item, provider, presenter, ... The spec is
--- checked against contracts/register-kinds.toml (`fen list kinds`).
---@param kind string
---@param spec fen.spec.Any one of the `fen.spec.*` classes (annotations.gen.lua)
function api.register(kind, spec) end

--- Subscribes to an event type (`"*"` for all). The handler runs synchronously, within a time
--- budget (2 s by default).
---@param event_type string
---@param handler fun(event: fen.Event)
function api.on(event_type, handler) end

--- Emits an event; one whose type has a contract is validated first.
---@param event fen.Event
function api.emit(event) end

--- Logs to `$XDG_STATE_HOME/fen/logs.jsonl` (and stderr per `FEN_LOG`).
---@param level "debug"|"info"|"warn"|"error"
---@param msg any strings as they are, tables as JSON
function api.log(level, msg) end

--- Adds a system prompt fragment (text, or a function called at each assembly).
---@param text_or_fn string|fun(): string?
---@param opts fen.opts.Prompt?
function api.prompt(text_or_fn, opts) end

--- Read-only snapshots of every contribution of a kind (shadowed ones included).
---@param kind string
---@return table[]
function api.list(kind) end

--- A table private to your extension that survives `/reload`.
---@return table
function api.state() end

--- Loads the sibling file `name.lua` or `name/init.lua`.
---@param name string
---@return any
function api.load(name) end

--- Checks a value against a canonical type or protocol message of contracts/ (types.toml,
--- protocols.toml): a union by its discriminator, nested records and lists of them too. With
--- `strict`, fields the record does not name are refused. The RPC and ACP presenters check
--- every incoming message with it.
---@param name string e.g. "RpcRequest", "AcpPromptParams", "ImageContent"
---@param value any
---@param opts {strict: boolean?}?
---@return true|nil ok, string? why names the path of the bad field and what was expected
function api.validate(name, value, opts) end

--- Queues a line for the running agent: "steering" (before the next model call) or
--- "follow-up" (after the model's natural stop).
---@param kind "steering"|"follow-up"
---@param text string
function api.enqueue(kind, text) end

---@class fen.ApiTurn
local turn = {}

--- Runs a user turn and waits for its end (async).
---@param text string
---@param opts fen.opts.TurnSubmit?
---@return fen.TurnResult
function turn.submit(text, opts) end

--- Cancels the running turn and any running slash command.
function turn.cancel() end

--- Whether a turn is running.
---@return boolean
function turn.busy() end

--- The conversation: canonical messages, oldest first (nil when no agent runs).
---@return table[]?
function turn.messages() end

--- One model call outside the loop, with the caller's cancellation (async).
---@param request {system_prompt: string?, messages: table[], max_tokens: integer?}
---@return table assistant message (`stop_reason = "error"` on failure)
function turn.complete(request) end

--- Replaces the conversation (compaction).
---@param messages table[]
function turn.replace_messages(messages) end

--- Runs the `before_compact` hooks (async; the compaction companion calls it before it
--- summarises): nil, or why one refuses this compaction.
---@param ctx {trigger: "manual"|"auto", custom_instructions: string?}
---@return string? blocked
function turn.before_compact(ctx) end

--- Runs one tool call on the person's behalf as the model's call would go (async): `--tools`,
--- the `before_tool` hooks and permission policy (which may ask or refuse), the tool. Nothing
--- is appended to the conversation. The result has `text` (its text blocks joined) and `ran`
--- (false when refused or the arguments were invalid).
---@param name string
---@param args table?
---@return {content: table[], is_error: boolean, details: any, text: string, ran: boolean}
function turn.run_tool(name, args) end

--- The provider, model and thinking level in use now.
---@return {provider: string, model: string, thinking: string?}
function turn.model() end

--- Switches provider and model for the next turns (refused while a turn runs); emits
--- `model-changed`.
---@param provider string
---@param model string
function turn.set_model(provider, model) end

--- Sets the thinking level for the next turns.
---@param level "off"|"minimal"|"low"|"medium"|"high"
function turn.set_thinking(level) end

--- The current model's context window in tokens.
---@return integer
function turn.context_window() end

---@class fen.ApiSession
local session = {}

--- `{path, id}` of the session being written, or nil.
---@return {path: string, id: string}?
function session.info() end

--- This directory's sessions, newest first (async): `{path, id, created, modified, title,
--- message_count, branches}`; `branches`: the file's other branches (`SessionBranch`, docs/contracts.md).
---@return table[]
function session.list() end

--- Switches to a new session (async).
---@return boolean ok, string? err
function session.new() end

--- Switches to the session matching `query` (a path, an id prefix, or the leaf id of another branch
--- `list` names), the latest without one (async).
---@param query string?
---@return boolean ok, string? err
function session.resume(query) end

--- Persists a state snapshot (raises, naming the bad field, when it cannot be JSON).
---@param name_or_state string|table
---@param state table?
---@return boolean stored
function session.append_state(name_or_state, state) end

--- The newest state snapshot an extension stored in this session.
---@param name string?
---@return any
function session.latest_state(name) end

--- Writes a compaction record and fsyncs it (async).
---@param record {summary: string, tokens_before: integer?, tokens_after: integer?, guidance: string?, trigger: string?}
---@param first_kept_message table?
---@return boolean stored
function session.append_compaction(record, first_kept_message) end

--- Appends a record of the extension's own type (`{type = "checkpoint", ...}`) to the session
--- file as it is. False when there is no session or the backend keeps no records.
---@param record table
---@return boolean
function session.append_record(record) end

---@class fen.ApiUi
local ui = {}

--- Shows a notice (async; headless: nil, "no user").
---@param text string
function ui.notify(text) end

--- Asks the person to pick one item (async); nil when dismissed or headless.
---@param title string
---@param items string[]
---@return integer? index, string? why
function ui.select(title, items) end

--- Asks the person to pick any number of items (async): the chosen indices in order; nil when
--- dismissed, nil, "no user" when headless or the presenter cannot (then ask another way).
---@param title string
---@param items string[]
---@return integer[]? indices, string? why
function ui.select_multi(title, items) end

--- Asks for a line of text (async); nil when dismissed or headless.
---@param question string
---@param default string?
---@return string? text, string? why
function ui.prompt(question, default) end

--- Asks the presenter's approval prompt, as a `before_tool` hook's `ctx.ask(request)` does
--- (async; the subagents companion forwards a child's permission ask with it); nil, "no user"
--- when headless.
---@param request table
---@return any answer, string? why
function ui.ask(request) end

---@class fen.ApiKernel
local kernel = {}

--- Reloads every extension.
---@return {summary: string, loaded: string[], removed: string[], errors: {name: string, error: string}[]}
function kernel.reload() end

--- Runs a slash command line (async).
---@param line string
---@return string? text, string? err
function kernel.run_command(line) end

--- The extension records (`fen list extensions --json`).
---@return table[]
function kernel.extensions() end

--- The active contributions of a kind with their live specs (functions included), for
--- presenters that call panel renders, status renders and control handlers.
---@param kind string
---@return {name: string?, owner: string, spec: table}[]
function kernel.contributions(kind) end

--- The system prompt's fragments in order with their sizes.
---@return {id: string, title: string?, owner: string, bytes: integer}[]
function kernel.prompt_fragments() end

--- This run's flags for policy extensions (the permissions extension reads them).
---@return {permission_mode: string?, on_ask: "deny"|"allow"|"parent", headless: boolean, trusted: boolean, allowed_tools: string[], tool_patterns: string[]?, no_tools: boolean, base_url: string?, mock_script: string?, extensions: string[]?, extension_root: string?, session_backend: string?}
function kernel.run_options() end

---@class fen.Native
---@field version string
---@field platform {os: string, arch: string}
---@field paths {config_dir: string, state_dir: string, project_root: string} fen's directories and the project folder (repository root of the working directory, else the working directory), found once per run
---@field auth fen.NativeAuth
---@field truncate fen.NativeTruncate
---@field fs fen.NativeFs
---@field edit fen.NativeEdit
---@field search fen.NativeSearch
---@field process fen.NativeProcess
---@field json fen.NativeJson
---@field image fen.NativeImage
---@field http fen.NativeHttp
---@field term fen.NativeTerm
---@field session fen.NativeSession
---@field checkpoint fen.NativeCheckpoint
---@field jobs fen.NativeJobs
---@field mcp fen.NativeMcp
---@field lsp fen.NativeLsp
---@field subagent fen.NativeSubagent
---@field markup fen.NativeMarkup
---@field line fen.NativeLine
---@field policy fen.NativePolicy
local native = {}

--- Escapes control bytes and invalid UTF-8, caps the size, notes what it changed.
---@param text string
---@param max_bytes integer?
---@return string text, table report
function native.sanitize(text, max_bytes) end

--- Waits without blocking fen (async); raises "cancelled" when its call is cancelled.
---@param ms number
function native.sleep(ms) end

--- Milliseconds on a monotonic clock (since a fixed point of the process): for intervals,
--- not dates.
---@return number
function native.clock_ms() end

---@class fen.NativeTruncate
---@field head fun(text: string, max_lines: integer, max_bytes: integer): table
---@field tail fun(text: string, max_lines: integer, max_bytes: integer): table
---@field head_tail fun(text: string, max_lines: integer, max_bytes: integer): table
---@field clip_lines fun(text: string, max_columns: integer): string
---@field human_bytes fun(n: integer): string
---@field count_lines fun(text: string): integer
---@field number_lines fun(text: string, first: integer?): string

---@class fen.NativeCheckpoint
---@field workspace_of fun(dir: string): string the nearest ancestor holding `.git`, else `dir`
---@field settings fun(workspace: string): {enabled: boolean, include: string[], max_file_bytes: integer, max_total_bytes: integer, problems: string[]} async; `checkpoints` of the settings files
---@field snapshot fun(opts: fen.opts.CheckpointSnapshot): {commit: string, skipped: string[], files: string[]?}?, string? async; the tree in the shadow repository (`files`: changed since `since`)
---@field turns fun(session_path: string): {session_id: string?, cwd: string?, turns: table[]}?, string? async; the checkpoint records of a session file, merged by id, oldest first
---@field rewind fun(opts: fen.opts.CheckpointRewind): table?, string? async; plan (apply = false) or restore code and/or branch the conversation to before `turn`
---@field prune fun(max_total_bytes: integer?): string[]?, string? async; drops deleted sessions' snapshots, then the oldest while over the bound

---@class fen.NativeFs
---@field read fun(path: string, opts: fen.opts.FsRead?): table?, string? async; with `images`, a PNG/JPEG/GIF/WebP is `{kind = "image", mime_type, data, ...}`
---@field write fun(path: string, content: string): table?, string? async
---@field list fun(path: string, opts: fen.opts.FsList?): table?, string? async
---@field expand fun(path: string): string
---@field cwd fun(): string
---@field is_dir fun(path: string): boolean
---@field stat fun(path: string): {size: integer, mtime_ms: integer, is_dir: boolean}?
---@field read_text fun(path: string, max_bytes: integer?, keep: "head"|"tail"?): string?, string? a small file read at once (default cap 1 MiB; larger is an error unless `keep` says which end to return): nil and why
---@field write_small fun(path: string, content: string): true?, string? fen's own small state files (at most 1 MiB), written at once and atomically, parents created
---@field append fun(path: string, text: string): true?, string? appends a small record in one write, creating the file and its parents
---@field set_strict fun(strict: boolean)
---@field mkdir fun(path: string): boolean?, string?

---@class fen.NativeEdit
---@field apply fun(files: {path: string, edits: {old_string: string, new_string: string, replace_all: boolean?}[]}[]): table?, string? async
---@field apply_text fun(text: string, edits: {old_string: string, new_string: string, replace_all: boolean?}[], label: string?): {text: string, diff: string, replacements: integer, first_changed_line: integer, strategies: string[]}?, string? async; the engine on a buffer, writes nothing

---@class fen.NativeSearch
---@field grep fun(opts: fen.opts.SearchGrep): table?, string? async
---@field find fun(opts: fen.opts.SearchFind): table?, string? async
---@field fuzzy fun(query: string, list: string[], limit: integer?): integer[] the 1-based indices of the best fuzzy matches, best first (ties keep the list's order)
---@field file_list fun(path: string?): fen.FileList?, string? async; every file under `path` (.gitignore respected, most recently changed first), walked on the blocking pool

--- A list of files kept native-side (`search.file_list`).
---@class fen.FileList
---@field rank fun(self: fen.FileList, query: string, limit: integer?): string[] the best paths for `query`, best first
---@field len fun(self: fen.FileList): integer

---@class fen.NativeProcess
---@field run fun(opts: fen.opts.ProcessRun, on_output: fun(text: string)?): table?, string? async
---@field run_all fun(list: fen.opts.ProcessRun[]): table[] async; runs several `run` options at once, results in order (`{error}` for one that could not start)

---@class fen.NativeJson
---@field decode fun(text: string): any, string?
---@field encode fun(value: any): string raises naming the path of a value JSON cannot hold
---@field encode_async fun(value: any): string async; large values are written out off the Lua thread
---@field null lightuserdata encodes as `null`

---@class fen.NativeImage
---@field prepare fun(data: string, mime_type: string): {type: "image", data: string, mime_type: string, width: integer, height: integer, bytes: integer}?, string? async; a prompt's base64 image (up to 20 MB, png/jpeg/gif/webp), decoded in full and scaled to fit 2000x2000 and 3.75 MB; nil, why when it is not one

---@class fen.NativeHttp
---@field request fun(spec: fen.opts.HttpRequest): table?, table? async
---@field fetch_page fun(spec: fen.opts.HttpFetchPage): table?, string? async
---@field backoff_ms fun(attempt: integer): integer

--- A background job: `status` is "running", "exited N" or "signal N".
---@class fen.JobInfo
---@field id string
---@field pid integer
---@field command string
---@field log string
---@field status string
---@field running boolean
---@field exit_code integer?
---@field signal integer?
---@field logged integer
---@field killed boolean
---@field unsandboxed_rule string? `start` only: the `sandbox.unsandboxed` rule that ran it outside the sandbox
---@field plan string? `start` only: why it runs where it runs (`sandbox::plan`)

---@class fen.NativeJobs
---@field max_running integer
---@field start fun(spec: fen.opts.JobsStart): fen.JobInfo?, string? async
---@field output fun(id: string, opts: fen.opts.JobsOutput?): table?, string? async
---@field kill fun(id: string): fen.JobInfo?, string? async
---@field list fun(): fen.JobInfo[]
---@field running fun(): integer
---@field on_exit fun(id: string, fn: fun(info: fen.JobInfo))

---@class fen.McpTool
---@field name string `mcp__SERVER__TOOL`
---@field mcp_name string the tool's name on its server
---@field description string
---@field parameters table the server's input schema
---@field schema_json string the same schema as JSON text (its size counts toward the search threshold)
---@field read_only boolean `annotations.readOnlyHint`

---@class fen.McpServer
---@field name string
---@field status "disabled"|"idle"|"connecting"|"connected"|"failed"
---@field error string?
---@field transport "stdio"|"http"
---@field log string `$XDG_STATE_HOME/fen/mcp/NAME.log`
---@field source string the config file
---@field project boolean
---@field epoch integer bumped at every (re)start
---@field tool_timeout_ms integer
---@field startup_timeout_ms integer
---@field tool_count integer
---@field schema_bytes integer names, descriptions and schema JSON of its tools
---@field tools fen.McpTool[]? absent with `tools = false`

--- The MCP client (docs/mcp.md): one set of servers per process, connections in the background.
---@class fen.NativeAuth
---@field login fun(provider: string, opts: fen.opts.AuthLogin?): table?, string? async: runs the provider's login flow; the status row, or nil and why
---@field credential fun(provider: string, stale_token: string?): {token: string, expires_at: integer?, headers: table<string, string>, base_url: string?}?, string? async: the request credential (refreshed under a lock when under 5 minutes remain, or when `stale_token` is still the stored one)
---@field models fun(provider: string): table[]?, string? async: the models the login's plan offers
---@field status fun(): {provider: string, email: string?, user: string?, plan: string?, expires_at: integer?, host: string?}[]?, string? async: every stored login (never a token)
---@field logout fun(provider: string): boolean?, string? async: forgets a login; true when there was one
---@field mcp_login fun(server: string, opts: fen.opts.AuthMcpLogin?): true?, string? async: the OAuth login of a configured HTTP MCP server
---@field mcp_logout fun(server: string, opts: fen.opts.AuthMcpLogout?): boolean?, string? async: forgets an MCP server's OAuth login
---@field refusal fun(name: string): string? why fen refuses that subscription login (Anthropic, Google)
---@field path fun(): string the auth.json path

---@class fen.NativeMcp
---@field configure fun(opts: fen.opts.McpConfigure?): {servers: string[], errors: string[], untrusted: {name: string, file: string}[]} reads the config files and sets the servers (starts none)
---@field start fun(name: string?): boolean starts one server (or every idle one) in the background
---@field reconnect fun(name: string): true?, string? stops and starts one
---@field wait fun(names: string[]?) async: until none of them is connecting
---@field servers fun(opts: fen.opts.McpServers?): fen.McpServer[] `tools = false`: without the tool lists (cheap); `name`: that server only
---@field server_for_tool fun(fen_name: string): string?
---@field call fun(server: string, tool: string, args: table): {is_error: boolean, content: table[]}?, string? async; bounded by the tool timeout and the call's cancellation
---@field watch fun(fn: fun(): boolean?) calls `fn` (async) after every change of any server until it returns false
---@field add fun(servers: {name: string, command: string?, args: string[]?, env: table<string, string>?, url: string?, headers: table<string, string>?}[]): string[]?, string? servers beside the configured ones (an ACP client's), kept across `configure`; starts none
--- What an edit did to one file's diagnostics (`native.lsp.after_change`).
---@class fen.LspReport
---@field path string as given
---@field server string
---@field lines string[] `path:line:col severity message`, errors first, at most 20
---@field introduced integer how many the change introduced (before the cap)
---@field errors integer
---@field pending string? set when the deadline passed first: why
---@field baseline boolean false when the file was not open before (all its diagnostics shown)

--- A server as `native.lsp.servers()` lists it.
---@class fen.LspServer
---@field name string
---@field command string
---@field extensions string[]
---@field state string running, starting, crashed, failed, unavailable, disabled, idle
---@field root string?
---@field error string?
---@field restarts integer
---@field log string
---@field project boolean
---@field documents integer

--- The language-server client (docs/lsp.md): one server per (definition, workspace root),
--- started lazily; I/O on threads of its own, waits async.
---@class fen.NativeLsp
---@field configure fun(opts: fen.opts.LspConfigure?): {errors: string[], untrusted: {name: string, file: string}[], wait_ms: integer} reads the `lsp` settings (starts nothing)
---@field prepare fun(paths: string[]) async: opens the files that have a server (starting it), so the diagnostics before a change are known
---@field after_change fun(paths: string[]): fen.LspReport[] async: sends the files' new text and waits (at most `lsp.diagnostics_wait_ms`) for the diagnostics the change introduced
---@field sync fun(): integer async: the stat scan of open documents; how many changed
---@field query fun(q: fen.opts.LspQuery): {server: string, items: {path: string, line: integer, column: integer, context: string, name: string?, kind: string?, depth: integer}[], text: string?}?, string? async; a navigation request
---@field servers fun(): fen.LspServer[]
--- A subagent run (a child `fen --mode json`): `status` is "running", "exited N" or "signal N";
--- `finished` once it exited and its output was read; `result` is its last `result` line.
---@class fen.SubagentInfo
---@field id string
---@field pid integer
---@field label string
---@field background boolean
---@field status string
---@field running boolean
---@field finished boolean
---@field exit_code integer?
---@field signal integer?
---@field killed boolean
---@field turns integer
---@field result table?
---@field bad_lines integer
---@field tail string
---@field transcript string?
---@field elapsed_ms integer
---@field cancelled boolean?
---@field plan string? `start` only: why the child runs where it runs (`sandbox::plan`)

---@class fen.NativeSubagent
---@field max_running integer
---@field start fun(opts: fen.opts.SubagentStart, handlers: fen.opts.SubagentHandlers?): fen.SubagentInfo?, string? async
---@field wait fun(id: string, opts: fen.opts.SubagentWait?): fen.SubagentInfo?, string? async
---@field kill fun(id: string): fen.SubagentInfo?, string? async
---@field list fun(): fen.SubagentInfo[]
---@field info fun(id: string): fen.SubagentInfo?, string?
---@field running fun(): integer

---@class fen.NativeMarkup
---@field front_matter fun(text: string): {fields: table, body: string}?, string?
---@field scan fun(roots: string[], file_name: string): table[]
---@field scan_files fun(roots: string[], suffix: string): table[]
---@field scan_tree fun(roots: string[], suffix: string): table[] `scan_files` through nested directories (4 levels)
---@field html_to_markdown fun(html: string): string?, string? async
---@field html_to_text fun(html: string): string async

---@class fen.NativeTerm
---@field shell fun(command: string): {text: string, style: table?}[] a shell command as highlighted spans (tree-sitter bash)
---@field read_line fun(): string? async
---@field isatty fun(fd: integer): boolean
---@field open fun(opts: fen.opts.TermOpen?) raw mode, the alternate screen (not with `inline`: the main screen and its scrollback), bracketed paste, alternate scroll, mouse reporting with `mouse`; painting starts
---@field close fun() stop painting and restore the terminal
---@field next fun(): {type: "key"|"paste"|"wheel"|"resize"|"focus"|"background"|"copied", key: string?, text: string?, up: boolean?, n: integer?, width: integer?, height: integer?, dark: boolean?, focused: boolean?, chars: integer?}? async
---@field layout fun(desc: {status: table?, status_right: table?, busy: {label: string}?, panels: table?, notices: table?, menu: {items: table, selected: integer?}?, input: {text: string, cursor: integer, prompt: string?, placeholder: string?}?, overlay: table?})
---@field push fun(block: {kind: string?, head: any?, text: string?, markdown: boolean?, style: table?, folded: boolean?, prefix: any?, cont: any?, gap: boolean?, live: boolean?}): integer `live`: still changing (inline mode keeps it in the band until an update says `live = false`)
---@field jump fun(id: integer): boolean anchor the view at a block
---@field find fun(text: string): integer search every block's text (ASCII case-insensitive), highlight matches; the number of occurrences
---@field find_step fun(forward: boolean): integer[]? show the next / previous match; {block with matches, blocks with matches}
---@field find_clear fun() end the search
---@field background fun(): string? "dark" or "light" from COLORFGBG, else nil
---@field palette fun(styles: table<string, table>?) the styles native draws markdown and code with, by semantic name (`markdown.heading`, `markdown.code`, `markdown.code_block`, `markdown.link`, `markdown.bullet`, `markdown.gutter`, `code.comment`, `code.string`, `code.escape`, `code.number`, `code.keyword`, `code.function`, `code.type`, `code.tag`, `code.attribute`, `code.builtin`, `code.property`); names not given take their defaults; an unknown name or a bad style is an error and changes nothing; what is drawn is drawn again
---@field mouse fun(on: boolean) mouse reporting on / off (drag-select copies, the wheel scrolls)
---@field update fun(id: integer, block: table)
---@field append fun(id: integer, delta: string)
---@field fold fun(kind: string, folded: boolean)
---@field clear fun()
---@field scroll fun(rows: integer) negative rows scroll up
---@field top fun()
---@field bottom fun()
---@field page fun(): integer
---@field scrolled fun(): boolean, integer anchored?, blocks added below
---@field redraw fun()
---@field suspend fun()
---@field edit fun(text: string): string?, string? async
---@field copy fun(text: string)
---@field notify fun(method: "auto"|"osc9"|"osc777"|"osc99"|"bell"|"off", title: string, body: string?): string a desktop notification (wrapped for tmux and screen); the method used
---@field notify_command fun(command: string|string[], json: string): boolean?, string? async; runs a notifier with `json` on stdin (secrets removed from its environment, killed after 10 s)
---@field focused fun(): boolean the terminal's last focus report, else input within the last 5 s
---@field size fun(): integer, integer
---@field screen fun(): string[]
---@field spawn fun(fn: function, ...)
---@field waiter fun(): integer
---@field wait fun(id: integer) async
---@field done fun(id: integer)

---@class fen.NativeLine
---@field read fun(prompt: string?): string?, integer async; line editing and history on a terminal, escape sequences removed (counted) without one; nil at end of input
---@field interactive fun(): boolean stdin and stdout are terminals
---@field pending fun(): boolean input is already waiting

---@class fen.NativeSession
---@field dir_for fun(cwd: string): string
---@field new_id fun(): string
---@field create fun(dir: string, cwd: string): userdata, string
---@field open fun(path: string): userdata?, string?
---@field resume fun(path: string, at: {leaf: string?, before: string?}?): table?, string? async; the branch in use (or the one continuing from `at`) from its latest compaction: `{header, records, compaction_index, bad_lines, max_turn}`
---@field list fun(dir: string): table[]? async
---@field export fun(messages: table[], opts: fen.opts.SessionExport): string?, string? async; the conversation as one file (self-contained HTML by default), written whole; the path written

---@class fen.NativePolicy
---@field new fun(opts: fen.opts.PolicyNew): userdata?, string[]? a policy with `:decide(tool, risk, args)` (async), `:add_rule(text, kind)`, `:set_mode(mode)`, `:mode()`
---@field settings_rules fun(path: string): table?, string? permissions and sandbox of a settings.json, each rule with its line
---@field sandbox fun(opts: fen.opts.PolicySandbox?): {tier: string, status: string, description: string} async; `lazy`: no bubblewrap trial when the answer does not depend on it (tier `auto`: the first sandboxed command decides)
---@field use_sandbox fun(opts: fen.opts.PolicyUseSandbox): string[] the rules that could not be parsed, each with why
---@field sandbox_scope fun(command: string): string[] async; the rules an "always run it outside the sandbox" answer adds for `command` (empty when none is safe to offer)
---@field allow_unsandboxed fun(rule: string): boolean?, string? adds one such rule for the rest of the process
---@field audit fun(record: table)

return { api = api, native = native }
