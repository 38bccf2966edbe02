// Drives `fen acp` with the official ACP client library (@agentclientprotocol/sdk, its client
// side), as an editor would. Run by tests/acp.rs: FEN_BIN is the binary, FEN_MCP_SERVER the
// test MCP server. Each scenario starts its own `fen acp` with the mock provider in a temp home.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";

const FEN = process.env.FEN_BIN;
const MCP_SERVER = process.env.FEN_MCP_SERVER;
assert.ok(FEN, "FEN_BIN must name the fen binary");

/** A temp home with a work dir and a settings file (permission mode). */
function home(mode = "yolo") {
  const root = mkdtempSync(join(tmpdir(), "fen-acp-"));
  mkdirSync(join(root, "work"));
  mkdirSync(join(root, "config/fen"), { recursive: true });
  writeFileSync(join(root, "config/fen/settings.json"), JSON.stringify({ permissions: { mode } }));
  return root;
}

/** Runs `fen acp` in `root` with `script` (mock turns) and a client whose handlers are `h`. */
async function session(root, script, h, body) {
  const scriptPath = join(root, `script-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(scriptPath, JSON.stringify(script));
  const env = {
    PATH: process.env.PATH, HOME: root, XDG_CONFIG_HOME: join(root, "config"),
    XDG_STATE_HOME: join(root, "state"), FEN_MOCK_SCRIPT: scriptPath, ...(h.env || {}),
  };
  const child = spawn(FEN, ["acp", ...(h.args || [])], { cwd: join(root, "work"), env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const updates = [];
  const asked = [];
  let app = acp.client({ name: "fen-acp-test" })
    .onNotification("session/update", ({ params }) => { updates.push(params.update); })
    .onRequest("session/request_permission", async ({ params }) => {
      asked.push(params);
      const pick = h.permission ? h.permission(params) : "allow_once";
      return pick ? { outcome: { outcome: "selected", optionId: pick } } : { outcome: { outcome: "cancelled" } };
    });
  if (h.terminal) {
    // A minimal editor terminal: bash -c in a child process, its output kept.
    const terms = new Map();
    let n = 0;
    app = app
      .onRequest("terminal/create", async ({ params }) => {
        const id = `t${++n}`;
        h.terminal.push(params);
        const p = spawn(params.command, params.args || [], { cwd: params.cwd });
        const t = { output: "", exit: new Promise((r) => p.on("exit", (code, signal) => r({ exitCode: code, signal }))), p };
        p.stdout.on("data", (d) => { t.output += d; });
        p.stderr.on("data", (d) => { t.output += d; });
        terms.set(id, t);
        return { terminalId: id };
      })
      .onRequest("terminal/wait_for_exit", async ({ params }) => terms.get(params.terminalId).exit)
      .onRequest("terminal/output", async ({ params }) => ({ output: terms.get(params.terminalId).output, truncated: false }))
      .onRequest("terminal/kill", async ({ params }) => { terms.get(params.terminalId).p.kill("SIGKILL"); return {}; })
      .onRequest("terminal/release", async ({ params }) => { terms.delete(params.terminalId); return {}; });
  }
  if (h.read) app = app.onRequest("fs/read_text_file", async ({ params }) => h.read(params));
  if (h.elicit) app = app.onRequest("elicitation/create", async ({ params }) => h.elicit(params));
  if (h.write) app = app.onRequest("fs/write_text_file", async ({ params }) => h.write(params));
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: !!h.read, writeTextFile: !!h.write }, terminal: !!h.terminal,
          ...(h.elicit ? { elicitation: { form: {} } } : {}),
        },
        clientInfo: { name: "fen-acp-test", version: "1" },
      });
      const out = await body({ ctx, init, updates, asked, root });
      child.stdin.end();
      return out;
    });
  } catch (e) {
    throw new Error(`${e.stack || e}\nfen stderr:\n${stderr}`);
  } finally {
    let timer;
    const code = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r("timeout"), 10000); })]);
    clearTimeout(timer);
    if (code === "timeout") child.kill("SIGKILL");
    else assert.equal(code, 0, `fen acp exited with ${code}\nfen stderr:\n${stderr}`);
  }
}

const settle = () => new Promise((r) => setTimeout(r, 100));
const text = (t) => [{ type: "text", text: t }];

test("initialize, new session, a prompt with a tool call and a permission request", async () => {
  const root = home("safe");
  await session(root, [
    { tool_calls: [{ name: "write", arguments: { path: "made.txt", content: "hello\n" }, id: "w1" }] },
    { text: "Wrote it." },
  ], {}, async ({ ctx, init, updates, asked }) => {
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    assert.ok(s.sessionId);
    assert.equal(s.modes.currentModeId, "safe");
    assert.ok(s.configOptions.some((o) => o.id === "model"));
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("write made.txt") });
    assert.equal(r.stopReason, "end_turn");
    await settle();
    assert.equal(asked.length, 1, "one permission request");
    assert.deepEqual(asked[0].options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert.equal(asked[0].toolCall.toolCallId, "w1");
    const call = updates.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "w1");
    assert.equal(call.kind, "edit");
    assert.ok(call.locations[0].path.endsWith("/work/made.txt"));
    const done = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    assert.ok(done, JSON.stringify(updates));
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("Wrote it")));
    assert.ok(updates.some((u) => u.sessionUpdate === "available_commands_update" && u.availableCommands.some((c) => c.name === "compact")));
    assert.equal(readFileSync(join(root, "work/made.txt"), "utf8"), "hello\n");
  });
});

test("a rejected permission leaves the file unwritten", async () => {
  const root = home("safe");
  await session(root, [
    { tool_calls: [{ name: "write", arguments: { path: "no.txt", content: "x" }, id: "w2" }] },
    { text: "ok" },
  ], { permission: () => "reject_once" }, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("write") });
    assert.equal(r.stopReason, "end_turn");
    await settle();
    assert.ok(updates.some((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "w2" && u.status === "failed"));
    assert.equal(existsSync(join(root, "work/no.txt")), false);
  });
});

test("allow always writes the TUI's rule; reject always refuses the same calls for the session", async () => {
  const root = home("safe");
  await session(root, [
    { tool_calls: [{ name: "write", arguments: { path: "kept.txt", content: "x\n" }, id: "a1" }] }, { text: "one" },
  ], { permission: () => "allow_always" }, async ({ ctx }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("first") });
  });
  // The TUI's "always": the ask's rule in .fen/settings.local.json.
  const local = JSON.parse(readFileSync(join(root, "work/.fen/settings.local.json"), "utf8"));
  assert.ok(local.permissions.allow.some((r) => r.startsWith("Edit(")), JSON.stringify(local));
  assert.ok(existsSync(join(root, "work/kept.txt")));

  const root2 = home("default");
  const make = (id) => ({ tool_calls: [{ name: "bash", arguments: { command: "make clean" }, id }] });
  await session(root2, [make("r1"), { text: "two" }, make("r2"), { text: "three" }],
    { permission: () => "reject_always" }, async ({ ctx, updates, asked }) => {
      const s = await ctx.request("session/new", { cwd: join(root2, "work"), mcpServers: [] });
      await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("second") });
      await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("third") });
      await settle();
      assert.deepEqual(asked.map((a) => a.toolCall.toolCallId), ["r1"], "r2 is refused without asking");
      const r2 = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "r2" && u.status === "failed");
      assert.ok(r2 && JSON.stringify(r2.content).includes("rejected"), JSON.stringify(updates));
    });
});

test("an edit's tool_call_update carries a diff", async () => {
  const root = home("yolo");
  writeFileSync(join(root, "work/a.txt"), "one\ntwo\nthree\n");
  await session(root, [
    { tool_calls: [{ name: "read", arguments: { path: "a.txt" }, id: "r1" }] },
    { tool_calls: [{ name: "edit", arguments: { path: "a.txt", old_string: "two", new_string: "TWO" }, id: "e1" }] },
    { text: "Edited." },
  ], {}, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("edit a.txt") });
    await settle();
    const u = updates.find((x) => x.sessionUpdate === "tool_call_update" && x.toolCallId === "e1" && x.status === "completed");
    assert.ok(u, JSON.stringify(updates));
    const diff = u.content.find((c) => c.type === "diff");
    assert.ok(diff, JSON.stringify(u));
    assert.ok(diff.path.endsWith("/work/a.txt"));
    assert.ok(diff.oldText.includes("two") && !diff.oldText.includes("TWO"));
    assert.ok(diff.newText.includes("TWO"));
    assert.equal(readFileSync(join(root, "work/a.txt"), "utf8"), "one\nTWO\nthree\n");
  });
});

test("the todo list becomes a plan; usage comes after each model call", async () => {
  const root = home("yolo");
  await session(root, [
    { tool_calls: [{ name: "todo_write", id: "p1", arguments: { items: [
      { text: "read the code", status: "completed" }, { text: "fix the bug", status: "in_progress" }] } }] },
    { text: "planned" },
  ], {}, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("plan it") });
    await settle();
    const plan = updates.find((u) => u.sessionUpdate === "plan");
    assert.deepEqual(plan.entries, [
      { content: "read the code", priority: "medium", status: "completed" },
      { content: "fix the bug", priority: "medium", status: "in_progress" },
    ]);
    const call = updates.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "p1");
    assert.equal(call.kind, "think");
    const usage = updates.filter((u) => u.sessionUpdate === "usage_update");
    assert.equal(usage.length, 2, "one per model call");
    assert.equal(usage[0].size, 128000);
  });
});

test("session/cancel ends the prompt with stopReason cancelled", async () => {
  const root = home("yolo");
  await session(root, [{ text: "never", delay_ms: 20000 }], {}, async ({ ctx }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    const p = ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("wait") });
    await new Promise((r) => setTimeout(r, 300));
    await ctx.notify("session/cancel", { sessionId: s.sessionId });
    const r = await p;
    assert.equal(r.stopReason, "cancelled");
  });
});

test("session/load replays a stored session; session/list lists it", async () => {
  const root = home("yolo");
  let id;
  await session(root, [{ text: "The first answer." }], {}, async ({ ctx }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    id = s.sessionId;
    await ctx.request("session/prompt", { sessionId: id, prompt: text("remember the word zebra") });
  });
  await session(root, [], {}, async ({ ctx, updates }) => {
    const list = await ctx.request("session/list", {});
    assert.ok(list.sessions.some((x) => x.sessionId === id), JSON.stringify(list));
    const r = await ctx.request("session/load", { sessionId: id, cwd: join(root, "work"), mcpServers: [] });
    assert.ok(r.modes);
    await settle();
    assert.ok(updates.some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text.includes("zebra")), JSON.stringify(updates));
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("first answer")));
  });
});

test("read and write go through the client's fs methods", async () => {
  const root = home("yolo");
  writeFileSync(join(root, "work/buf.txt"), "on disk\n");
  const reads = [];
  const writes = [];
  await session(root, [
    { tool_calls: [{ name: "read", arguments: { path: "buf.txt" }, id: "r1" }] },
    { tool_calls: [{ name: "write", arguments: { path: "out.txt", content: "via editor\n" }, id: "w1" }] },
    { text: "done" },
  ], {
    read: (p) => { reads.push(p.path); return { content: "unsaved buffer text\n" }; },
    write: (p) => { writes.push(p); return {}; },
  }, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("read and write") });
    await settle();
    assert.ok(reads.some((p) => p.endsWith("/work/buf.txt")), JSON.stringify(reads));
    const r = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "r1" && u.status === "completed");
    assert.ok(JSON.stringify(r.content).includes("unsaved buffer text"), JSON.stringify(r));
    assert.equal(writes.length, 1);
    assert.ok(writes[0].path.endsWith("/work/out.txt"));
    assert.equal(writes[0].content, "via editor\n");
    assert.equal(existsSync(join(root, "work/out.txt")), false, "the editor, not fen, writes the file");
  });
});

test("bash runs in the editor's terminal in yolo mode, in fen's sandbox otherwise", async () => {
  for (const mode of ["yolo", "default"]) {
    const root = home(mode);
    const created = [];
    await session(root, [
      { tool_calls: [{ name: "bash", arguments: { command: "echo from-$((40+2))" }, id: "t1" }] },
      { text: "done" },
    ], { terminal: created }, async ({ ctx, updates }) => {
      const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
      await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("run it") });
      await settle();
      const r = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "t1" && u.status === "completed");
      assert.ok(r && JSON.stringify(r.content).includes("from-42"), `${mode}: ${JSON.stringify(updates)}`);
      if (mode === "yolo") {
        assert.equal(created.length, 1);
        assert.deepEqual(created[0].args, ["-c", "echo from-$((40+2))"]);
        assert.ok(updates.some((u) => u.toolCallId === "t1" && (u.content || []).some((c) => c.type === "terminal")));
      } else {
        assert.equal(created.length, 0, "sandboxed modes keep commands in fen");
      }
    });
  }
});

test("an MCP server passed by the client is attached and its tool runs", { skip: !MCP_SERVER && "no MCP test server" }, async () => {
  const root = home("yolo");
  await session(root, [
    { tool_calls: [{ name: "mcp__client__echo", arguments: { text: "hello from mcp" }, id: "m1" }] },
    { text: "done" },
  ], {}, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", {
      cwd: join(root, "work"),
      mcpServers: [{ name: "client", command: "python3", args: [MCP_SERVER], env: [] }],
    });
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("use the mcp tool") });
    await settle();
    const r = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "m1" && u.status !== "in_progress");
    assert.ok(r && r.status === "completed", JSON.stringify(updates));
    assert.ok(JSON.stringify(r.content).includes("hello from mcp"));
  });
});

test("an extension's api.ui.select reaches the editor as a permission request", async () => {
  const root = home("yolo");
  mkdirSync(join(root, "config/fen/extensions"), { recursive: true });
  writeFileSync(join(root, "config/fen/extensions/picker.lua"), `return function(api)
  api.register("command", { name = "pick", description = "pick a colour", handler = function()
    local items = { "red", "green", "blue" }
    local n = api.ui.select("Pick a colour", items)
    return "picked " .. tostring(n and items[n])
  end })
end`);
  await session(root, [], { permission: (p) => p.options.find((o) => o.name === "green").optionId }, async ({ ctx, updates, asked }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("/pick") });
    assert.equal(r.stopReason, "end_turn");
    await settle();
    assert.equal(asked.length, 1);
    assert.equal(asked[0].toolCall.title, "Pick a colour");
    assert.deepEqual(asked[0].options.map((o) => o.name), ["red", "green", "blue"]);
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("picked green")), JSON.stringify(updates));
  });
});

test("a prompt starting with /name runs the slash command", async () => {
  const root = home("yolo");
  await session(root, [], {}, async ({ ctx, updates }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("/permissions") });
    assert.equal(r.stopReason, "end_turn");
    await settle();
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("mode: yolo")));
    assert.ok(s.modes.availableModes.some((m) => m.id === "plan"), JSON.stringify(s.modes));
    await ctx.request("session/set_mode", { sessionId: s.sessionId, modeId: "plan" });
    await ctx.request("session/set_mode", { sessionId: s.sessionId, modeId: "safe" });
    await settle();
    assert.deepEqual(updates.filter((u) => u.sessionUpdate === "current_mode_update").map((u) => u.currentModeId), ["plan", "safe"]);
    // A switch made by a slash command shows too.
    await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("/permissions default") });
    await settle();
    assert.equal(updates.filter((u) => u.sessionUpdate === "current_mode_update").at(-1).currentModeId, "default");
    const c = await ctx.request("session/set_config_option", { sessionId: s.sessionId, configId: "thinking", value: "high" });
    assert.equal(c.configOptions.find((o) => o.id === "thinking").currentValue, "high");
  });
});

/** A 4x3 PNG (base64) and the same file with its end cut off. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAEElEQVR4nGMQUDCAIwacHABWZwSBI7lGPQAAAABJRU5ErkJggg==";
const CUT_PNG = Buffer.from(PNG, "base64").subarray(0, 40).toString("base64");

/** A local Anthropic Messages server on 127.0.0.1: records each request body, answers `reply`. */
async function anthropicServer(reply) {
  const bodies = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      bodies.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (name, data) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      ev("message_start", { type: "message_start", message: { id: "m1", type: "message", role: "assistant", content: [], model: "claude-test", usage: { input_tokens: 5, output_tokens: 0 } } });
      ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
      ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: reply } });
      ev("content_block_stop", { type: "content_block_stop", index: 0 });
      ev("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } });
      ev("message_stop", { type: "message_stop" });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { bodies, server, url: `http://127.0.0.1:${server.address().port}` };
}

test("an image in session/prompt reaches the provider's request; a corrupt one is refused", async () => {
  const root = home("yolo");
  const llm = await anthropicServer("A small image.");
  try {
    await session(root, [], {
      args: ["--provider", "anthropic", "--model", "claude-test", "--base-url", llm.url],
      env: { ANTHROPIC_API_KEY: "test-key" },
    }, async ({ ctx, init, updates }) => {
      assert.equal(init.agentCapabilities.promptCapabilities.image, true);
      const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
      // A corrupt image: an error naming the block, and the session goes on.
      await assert.rejects(
        ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [
          { type: "text", text: "what is this?" }, { type: "image", data: CUT_PNG, mimeType: "image/png" }] }),
        (e) => /prompt\[2\]/.test(e.message) && /corrupt/.test(e.message),
      );
      await assert.rejects(
        ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [
          { type: "image", data: PNG, mimeType: "image/bmp" }] }),
        (e) => /mimeType/.test(e.message) && /image\/png/.test(e.message),
      );
      assert.equal(llm.bodies.length, 0, "nothing reached the provider");
      const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [
        { type: "text", text: "what is this?" }, { type: "image", data: PNG, mimeType: "image/png" },
        { type: "resource_link", uri: `file://${root}/work/notes.md`, name: "notes.md" },
        { type: "resource", resource: { uri: `file://${root}/work/spec.md`, text: "the spec text", mimeType: "text/markdown" } }] });
      assert.equal(r.stopReason, "end_turn");
      assert.equal(llm.bodies.length, 1);
      const user = llm.bodies[0].messages.at(-1);
      assert.equal(user.role, "user");
      // Text, the link as a mention and the embedded file inline; then the image.
      assert.equal(user.content[0].type, "text");
      const said = user.content[0].text;
      assert.ok(said.startsWith("what is this?"), said);
      assert.ok(said.includes(`@${root}/work/notes.md`), said);
      assert.ok(said.includes(`<file path="${root}/work/spec.md">`) && said.includes("the spec text"), said);
      assert.equal(user.content[1].type, "image");
      assert.deepEqual({ ...user.content[1].source }, { type: "base64", media_type: "image/png", data: PNG });
      await settle();
      assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("A small image")));
    });
  } finally {
    llm.server.close();
  }
});

test("the question tool asks through elicitation/create when the client takes forms", async () => {
  const root = home("yolo");
  const forms = [];
  await session(root, [
    { tool_calls: [{ name: "question", id: "q1", arguments: { questions: [
      { question: "Which colour?", options: [{ label: "red" }, { label: "green", description: "calm" }] }] } }] },
    { text: "noted" },
  ], {
    elicit: (p) => {
      forms.push(p);
      const prop = p.requestedSchema.properties.choice;
      const green = prop.oneOf.find((o) => o.title.includes("green"));
      return { action: "accept", content: { choice: green.const } };
    },
  }, async ({ ctx, updates, asked }) => {
    const s = await ctx.request("session/new", { cwd: join(root, "work"), mcpServers: [] });
    const r = await ctx.request("session/prompt", { sessionId: s.sessionId, prompt: text("ask me") });
    assert.equal(r.stopReason, "end_turn");
    await settle();
    assert.equal(forms.length, 1, JSON.stringify(forms));
    assert.equal(forms[0].mode, "form");
    assert.equal(forms[0].sessionId, s.sessionId);
    assert.ok(forms[0].message.includes("Which colour?"));
    assert.equal(asked.length, 0, "no permission request stands in for the question");
    const done = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "q1" && u.status === "completed");
    assert.ok(done && JSON.stringify(done.content).includes("→ green"), JSON.stringify(updates));
  });
});
