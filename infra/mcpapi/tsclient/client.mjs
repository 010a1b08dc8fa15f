// Drives a Parley server with the official MCP TypeScript client:
//   node client.mjs <base-url> <token-a> <token-b> [--strict]
// Lists the tools, posts an ask as A, answers it as B, reads the thread, and
// provokes one refusal. Prints one JSON summary line; exits 1 on any mismatch.
//
// --strict (the client-compatibility test, infra/mcpapi/compat_test.go): B
// lists the tools before it is refused, as a real agent does, so the SDK
// validates the refusal's structured content against post's outputSchema; a
// refusal the SDK throws on is reported (refusal.thrown), not fatal. Without
// --strict B never lists the tools and the SDK skips that validation.
//
// Either way the summary also reports what a user of the SDK would see:
// transport and client errors (onerror), console.error/console.warn lines,
// every HTTP exchange (wire), and which listed outputSchemas reject a refusal
// object when checked with the SDK's own validator.
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const args = process.argv.slice(2);
const strict = args.includes("--strict");
const [base, tokenA, tokenB] = args.filter((a) => a !== "--strict");
if (!base || !tokenA || !tokenB) {
  process.stderr.write("usage: node client.mjs <base-url> <token-a> <token-b> [--strict]\n");
  process.exit(2);
}

const sdkVersion = JSON.parse(
  fs.readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;

// What a user of the SDK would see besides the results.
const errors = [];
for (const level of ["error", "warn"]) {
  const orig = console[level].bind(console);
  console[level] = (...a) => {
    errors.push(`console.${level}: ${a.map((x) => (x instanceof Error ? x.message : String(x))).join(" ")}`);
    orig(...a);
  };
}
const wire = [];

async function connect(name, token) {
  const recordingFetch = async (url, init) => {
    const res = await fetch(url, init);
    let rpc = "";
    try {
      const body = JSON.parse(init?.body ?? "null");
      rpc = Array.isArray(body) ? body.map((m) => m.method).join(",") : (body?.method ?? "");
    } catch {}
    wire.push({ client: name, method: init?.method ?? "GET", rpc, status: res.status });
    return res;
  };
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch,
  });
  // Set before connect: the Client chains its own handler after these.
  transport.onerror = (e) => errors.push(`${name} transport.onerror: ${e?.message ?? e}`);
  client.onerror = (e) => errors.push(`${name} client.onerror: ${e?.message ?? e}`);
  await client.connect(transport);
  return { client, transport };
}

function check(cond, what) {
  if (!cond) {
    process.stderr.write("mismatch: " + what + "\n");
    process.exit(1);
  }
}

// call is callTool for the steps that must succeed: a throw (such as the
// SDK rejecting a result that does not match the tool's outputSchema) is a
// mismatch, named.
async function call(client, name, args, what) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    check(false, `${what}: ${name} threw ${e.constructor?.name ?? "Error"} ${e.code ?? ""}: ${e.message}`);
  }
}

const { client: a, transport: ta } = await connect("agent-a", tokenA);
const { client: b } = await connect("agent-b", tokenB);

const { tools } = await a.listTools();
const names = tools.map((t) => t.name).sort();

// Every outputSchema must also accept a refusal, which the SDK validates like
// any other structured content.
const refusalSample = { error: { reason: "invalid_body", message: "m", detail: { field: "body" } } };
const validator = new AjvJsonSchemaValidator();
const rejectRefusal = [];
for (const t of tools) {
  if (!t.outputSchema) continue;
  try {
    const r = validator.getValidator(t.outputSchema)(refusalSample);
    if (!r.valid) rejectRefusal.push({ tool: t.name, error: r.errorMessage });
  } catch (e) {
    rejectRefusal.push({ tool: t.name, error: "compile: " + e.message });
  }
}

const manifest = await call(a, "get_manifest", {}, "manifest");
check(!manifest.isError && manifest.structuredContent.parley === "1", "manifest");

const asked = await call(a, "post", { kind: "ask", body: "Which port should the dev server use?" }, "ask");
check(!asked.isError, "ask: " + JSON.stringify(asked));
const thread = asked.structuredContent.thread.id;

const answered = await call(b, "post", { kind: "answer", thread, body: "8080, as make run does." }, "answer");
check(!answered.isError, "answer: " + JSON.stringify(answered));

const read = await call(a, "get_thread", { thread }, "get_thread");
check(!read.isError, "get_thread");
const root = read.structuredContent.messages[0];

if (strict) await b.listTools();
let refused = {};
let thrown;
try {
  refused = await b.callTool({ name: "post", arguments: { kind: "inform", thread, parent: answered.structuredContent.message.id, body: "me again" } });
} catch (e) {
  if (!strict) throw e;
  thrown = `${e.constructor?.name ?? "Error"} ${e.code ?? ""}: ${e.message}`;
}

// The standalone GET stream is opened without being awaited; let its answer land.
await new Promise((r) => setTimeout(r, 200));

console.log(JSON.stringify({
  client: { name: "@modelcontextprotocol/sdk", version: sdkVersion, protocolVersion: ta.protocolVersion ?? "" },
  server: a.getServerVersion(),
  tools: names,
  thread,
  state: read.structuredContent.state,
  awaiting: read.structuredContent.awaiting,
  root: { id: root.id, from: root.from.identity, body: root.body },
  reply: { id: root.replies[0].id, from: root.replies[0].from.identity, kind: root.replies[0].kind },
  refusal: { isError: refused.isError === true, reason: refused.structuredContent?.error?.reason, listed: strict, ...(thrown ? { thrown } : {}) },
  outputSchemas: { checked: tools.filter((t) => t.outputSchema).length, rejectRefusal },
  errors,
  wire,
}));
await a.close();
await b.close();
