// Drives `loci mcp` with the official TypeScript SDK's stdio client
// transport and prints what it saw as one JSON object on stdout.
//
//   node mcp_stdio_client.mjs <sdk dir> <loci binary> [loci args...]
//
// The child gets this process's environment (HOME, LOCI_*). A failure to
// connect is reported as {connect_error}, not thrown: the Go test checks it.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdk, bin, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const transport = new StdioClientTransport({ command: bin, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "loci-e2e-ts", version: "1" });
const out = {};
try {
  await client.connect(transport);
} catch (e) {
  out.connect_error = String(e && e.message ? e.message : e);
  console.log(JSON.stringify(out));
  await transport.close().catch(() => {});
  process.exit(0);
}
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { is_error: !!r.isError, text: r.content[0].text };
};
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.search = await call("loci_search", { query: "deploys fridays" });
out.checkpoint = await call("loci_checkpoint", {
  payload: { items: [{ destination: "project", content: "Rollbacks need the on-call engineer.", tags: [], source: { kind: "transcript" } }] },
});
const job = JSON.parse(out.checkpoint.text);
for (const deadline = Date.now() + 20000; ; ) {
  const j = JSON.parse((await call("loci_job_get", { id: job.id })).text);
  out.job_status = j.status;
  if (j.status === "completed" || j.status === "failed" || Date.now() > deadline) break;
  await new Promise((r) => setTimeout(r, 50));
}
out.found = await call("loci_search", { query: "rollbacks on-call engineer" });
out.set_mode = await call("loci_set_mode", { mode: "read_only" });
out.status = await call("loci_status", {});
out.diary_write = await call("loci_diary_write", { agent_identity: "claude", wing: "projects", content: "not kept" });
out.search_read_only = await call("loci_search", { query: "deploys fridays" });
await client.close();
console.log(JSON.stringify(out));
