// Drives a Parley server with the official MCP TypeScript client:
//   node client.mjs <base-url> <token-a> <token-b>
// Lists the tools, posts an ask as A, answers it as B, reads the thread, and
// provokes one refusal. Prints one JSON summary line; exits 1 on any mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, tokenA, tokenB] = process.argv.slice(2);
if (!base || !tokenA || !tokenB) {
  console.error("usage: node client.mjs <base-url> <token-a> <token-b>");
  process.exit(2);
}

async function connect(name, token) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

function check(cond, what) {
  if (!cond) {
    console.error("mismatch: " + what);
    process.exit(1);
  }
}

const a = await connect("agent-a", tokenA);
const b = await connect("agent-b", tokenB);

const { tools } = await a.listTools();
const names = tools.map((t) => t.name).sort();

const manifest = await a.callTool({ name: "get_manifest", arguments: {} });
check(!manifest.isError && manifest.structuredContent.parley === "1", "manifest");

const asked = await a.callTool({ name: "post", arguments: { kind: "ask", body: "Which port should the dev server use?" } });
check(!asked.isError, "ask: " + JSON.stringify(asked));
const thread = asked.structuredContent.thread.id;

const answered = await b.callTool({ name: "post", arguments: { kind: "answer", thread, body: "8080, as make run does." } });
check(!answered.isError, "answer: " + JSON.stringify(answered));

const read = await a.callTool({ name: "get_thread", arguments: { thread } });
check(!read.isError, "get_thread");
const root = read.structuredContent.messages[0];

const refused = await b.callTool({ name: "post", arguments: { kind: "inform", thread, parent: answered.structuredContent.message.id, body: "me again" } });

console.log(JSON.stringify({
  tools: names,
  thread,
  state: read.structuredContent.state,
  awaiting: read.structuredContent.awaiting,
  root: { id: root.id, from: root.from.identity, body: root.body },
  reply: { id: root.replies[0].id, from: root.replies[0].from.identity, kind: root.replies[0].kind },
  refusal: { isError: refused.isError === true, reason: refused.structuredContent?.error?.reason },
}));
await a.close();
await b.close();
