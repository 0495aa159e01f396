// A stdio MCP server with one tool, `echo` ({text} → "echo: TEXT"), in plain Node: newline-
// delimited JSON-RPC on stdin and stdout, no dependencies. The claude_sdk tests hand it to the
// SDKs as an external MCP server of the session.
import { createInterface } from "node:readline";

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const tools = [
  {
    name: "echo",
    description: "Answers with the text it is given",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    },
  },
];

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) continue; // A notification.
  switch (method) {
    case "initialize":
      send({
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "echo", version: "1.0.0" },
        },
      });
      break;
    case "tools/list":
      send({ jsonrpc: "2.0", id, result: { tools } });
      break;
    case "tools/call":
      send({
        jsonrpc: "2.0",
        id,
        result: { content: [{ type: "text", text: `echo: ${params?.arguments?.text ?? ""}` }] },
      });
      break;
    case "ping":
      send({ jsonrpc: "2.0", id, result: {} });
      break;
    default:
      send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
  }
}
