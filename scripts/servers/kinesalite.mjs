// Start kinesalite (in-memory Kinesis emulator) on 127.0.0.1 only.
// kinesalite's own CLI has no host flag and would listen on all interfaces.
//
//   node kinesalite.mjs [--port N] [--exit-on-stdin-close]
//
// --port 0 (the default) picks a free port. When the server is listening, the
// bound port is printed alone on one stdout line; logs go to stderr.
// Streams go CREATING -> ACTIVE after 50 ms (kinesalite's default is 500 ms).
// Must sit next to the node_modules that holds kinesalite (install.sh copies it).
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const require = createRequire(import.meta.url);
const kinesalite = require("kinesalite");

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    "exit-on-stdin-close": { type: "boolean", default: false },
  },
});

const server = kinesalite({
  createStreamMs: 50,
  deleteStreamMs: 50,
  updateStreamMs: 50,
  shardLimit: 1000,
});

server.on("error", (err) => {
  console.error(`kinesalite: ${err.message}`);
  process.exit(1);
});

server.listen(Number(values.port), "127.0.0.1", () => {
  console.log(String(server.address().port));
  console.error(`kinesalite: listening on http://127.0.0.1:${server.address().port}`);
});

const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (values["exit-on-stdin-close"]) {
  // The parent holds our stdin open; when it dies (even by SIGKILL), stdin closes.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}
