// A local npm registry for the install test: verdaccio (the root devDependency) on 127.0.0.1 at a
// free port, its storage in the test's temp folder. `minfer` and `@minfer/*` are served only from
// what the test publishes (never proxied, so a package of that name elsewhere cannot stand in);
// every other package is proxied to the registry this machine's npm uses.
import { spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { CheckError, tail } from "./exec.mjs";

/** A TCP port that was free on 127.0.0.1 a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function config({ storage, htpasswd, uplink }) {
  // YAML written by hand: JSON strings are valid YAML scalars.
  const q = JSON.stringify;
  return `storage: ${q(storage)}
auth:
  htpasswd:
    file: ${q(htpasswd)}
    max_users: 10
uplinks:
  upstream:
    url: ${q(uplink)}
    timeout: 60s
    max_fails: 5
    fail_timeout: 10s
packages:
  "minfer":
    access: $all
    publish: $authenticated
  "@minfer/*":
    access: $all
    publish: $authenticated
  "**":
    access: $all
    proxy: upstream
# the minfer tarball holds the built-in model (~14 MB)
max_body_size: 200mb
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
`;
}

/**
 * Starts verdaccio and creates a user through the registry API. Resolves with
 * { url, token, logFile, stop() }. A missing verdaccio is a failure.
 */
export async function startRegistry({ root, dir, uplink, env }) {
  const bin = join(root, "node_modules", ".bin", "verdaccio");
  if (!existsSync(bin))
    throw new CheckError(`verdaccio is not installed (${bin} is missing): run \`node scripts/setup.mjs\``);
  mkdirSync(join(dir, "storage"), { recursive: true });
  const configFile = join(dir, "config.yaml");
  writeFileSync(
    configFile,
    config({ storage: join(dir, "storage"), htpasswd: join(dir, "htpasswd"), uplink }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const logFile = join(dir, "verdaccio.log");
  const log = createWriteStream(logFile);
  const child = spawn(bin, ["--config", configFile, "--listen", `127.0.0.1:${port}`], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let exited = null;
  const keep = (c) => {
    output += c.toString();
    log.write(c);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.on("exit", (code, signal) => {
    exited = code ?? signal;
  });
  const stop = () => {
    if (exited === null) child.kill("SIGKILL");
  };

  // Wait for /-/ping (verdaccio starts in a second or two).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== null) throw new CheckError(`verdaccio exited (${exited}) at start`, tail(output));
    try {
      const r = await fetch(`${url}-/ping`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stop();
      throw new CheckError("verdaccio did not answer /-/ping within 60 s", tail(output));
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  // A user, as `npm adduser` makes one; its token authenticates `npm publish`.
  const name = "minfer-install-test";
  const r = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, password: `pw-${port}-${Date.now()}`, type: "user", roles: [] }),
  });
  const body = await r.json().catch(() => ({}));
  if (!r.ok || typeof body.token !== "string") {
    stop();
    throw new CheckError(`verdaccio refused to create a user (HTTP ${r.status})`, JSON.stringify(body));
  }
  return { url, port, token: body.token, logFile, stop, pid: child.pid };
}
