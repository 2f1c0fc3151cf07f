// The harness: build `minibus serve` once, start it on free ports with
// Config.json, hand its connection string to the tests, stop it with
// SIGTERM. Every wait is bounded.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The e2e/js folder. */
export const root = path.resolve(here, "..");
/** The repository's root (for `go build`). */
const repo = path.resolve(root, "..", "..");
/** Where `npm test` (its pretest step) builds the binary. */
const defaultBin = path.join(root, "node_modules", ".minibus", "minibus");
/** The Config.json every server starts with. */
export const configPath = path.join(root, "Config.json");

/**
 * binary is the path of the `minibus` command: $MINIBUS_BIN when set (CI
 * builds it once), else the one the pretest step built, built here if
 * missing (into a temporary name renamed into place, so test files started
 * together do not see half a file).
 */
export function binary() {
  if (process.env.MINIBUS_BIN) return process.env.MINIBUS_BIN;
  if (!existsSync(defaultBin)) build();
  return defaultBin;
}

/** build runs `go build` for cmd/minibus into defaultBin (2 minutes at most). */
export function build() {
  mkdirSync(path.dirname(defaultBin), { recursive: true });
  const tmp = `${defaultBin}.${process.pid}.tmp`;
  const r = spawnSync("go", ["build", "-o", tmp, "./cmd/minibus"], {
    cwd: repo,
    stdio: ["ignore", "inherit", "inherit"],
    timeout: 120_000,
  });
  if (r.error) throw new Error(`go build ./cmd/minibus: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`go build ./cmd/minibus: exit ${r.status}`);
  renameSync(tmp, defaultBin);
}

/**
 * withTimeout races p against a timer: a promise that rejects naming what
 * took longer than ms.
 */
export function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * startMinibus starts `minibus serve --addr 127.0.0.1:0 --http 127.0.0.1:0
 * --config Config.json --clock <clock>` and resolves once it printed its
 * connection string and HTTP address and /health answered 200 (10 s at
 * most). The result:
 *   connectionString  the stdout line
 *   http              "http://127.0.0.1:PORT"
 *   now()             GET /minibus/clock: the namespace's time (a Date)
 *   advance(by)       POST /minibus/clock/advance?by=<Go duration> (mock clock only)
 *   stop()            SIGTERM; resolves with the exit code (10 s, then SIGKILL and an error);
 *                     with $MINIBUS_STDERR set, it first copies the server's stderr to ours
 *   stderr()          what it wrote on stderr so far (for failure messages)
 */
export async function startMinibus({ clock = "real", config = configPath } = {}) {
  const args = ["serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", clock];
  if (config) args.push("--config", config);
  const child = spawn(binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", (err) => resolve({ code: -1, signal: null, err }));
  });
  const ready = new Promise((resolve, reject) => {
    let cs, http;
    const check = () => {
      if (cs === undefined) {
        const m = /^(Endpoint=sb:\/\/[^\n]*)\n/.exec(stdout);
        if (m) cs = m[1];
      }
      if (http === undefined) {
        const m = /minibus serve: HTTP on (http:\/\/\S+)\n/.exec(stderr);
        if (m) http = m[1];
      }
      if (cs !== undefined && http !== undefined) resolve({ cs, http });
    };
    child.stdout.setEncoding("utf8").on("data", (d) => {
      stdout += d;
      check();
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
      check();
    });
    exited.then(({ code, signal, err }) =>
      reject(new Error(`minibus serve exited before it was ready (code ${code}, signal ${signal}${err ? ", " + err.message : ""}): ${stderr}`)),
    );
  });
  let cs, http;
  try {
    ({ cs, http } = await withTimeout(ready, 10_000, "minibus serve: the connection string and HTTP address"));
    await withTimeout(waitHealthy(http), 10_000, `GET ${http}/health`);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }

  let stopping;
  const server = {
    connectionString: cs,
    http,
    stderr: () => stderr,
    async now() {
      const r = await fetchJSON(`${http}/minibus/clock`);
      return new Date(r.now);
    },
    async advance(by) {
      const r = await fetchJSON(`${http}/minibus/clock/advance?by=${encodeURIComponent(by)}`, { method: "POST" });
      return new Date(r.now);
    },
    stop() {
      stopping ??= (async () => {
        if (process.env.MINIBUS_STDERR) process.stderr.write(`minibus ${args.join(" ")}:\n${stderr}`);
        child.kill("SIGTERM");
        try {
          const { code, signal } = await withTimeout(exited, 10_000, "minibus serve: exit after SIGTERM");
          if (code !== 0) throw new Error(`minibus serve exited with code ${code} (signal ${signal}): ${stderr}`);
          return code;
        } catch (err) {
          child.kill("SIGKILL");
          throw err;
        }
      })();
      return stopping;
    },
  };
  return server;
}

/** waitHealthy polls GET /health until 200 (its caller bounds it). */
async function waitHealthy(http) {
  for (;;) {
    try {
      const r = await fetch(`${http}/health`, { signal: AbortSignal.timeout(2000) });
      await r.text();
      if (r.status === 200) return;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** fetchJSON sends one request (30 s at most: an advance waits for the namespace to be idle) and parses a 200's JSON body. */
async function fetchJSON(url, init = {}) {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = await r.text();
  if (r.status !== 200) throw new Error(`${init.method ?? "GET"} ${url}: ${r.status} ${body}`);
  return JSON.parse(body);
}

/**
 * receiveN receives from receiver until it has n messages (or ms have
 * passed: then it fails naming how many came), each call waiting at most
 * the time left.
 */
export async function receiveN(receiver, n, ms = 10_000) {
  const deadline = Date.now() + ms;
  const got = [];
  while (got.length < n) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`received ${got.length} of ${n} messages within ${ms} ms`);
    got.push(...(await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: Math.min(left, 3000) })));
  }
  return got;
}

/**
 * receiveNone checks that a receive of up to 10 messages waiting ms gets none.
 */
export async function receiveNone(receiver, ms = 300) {
  const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: ms });
  if (got.length !== 0) throw new Error(`expected no message, received ${got.length}: ${got.map((m) => JSON.stringify(m.body)).join(", ")}`);
}

/**
 * rejectsWithCode awaits p and checks it rejects with a ServiceBusError
 * whose code is one of codes, within ms.
 */
export async function rejectsWithCode(p, codes, ms = 10_000) {
  codes = [].concat(codes);
  let err;
  try {
    await withTimeout(p, ms, `an operation expected to fail with ${codes.join(" or ")}`);
  } catch (e) {
    err = e;
  }
  if (!err) throw new Error(`expected an error with code ${codes.join(" or ")}, the operation succeeded`);
  if (!codes.includes(err.code)) {
    const wrapped = new Error(`expected an error with code ${codes.join(" or ")}, got ${err.name} code ${err.code}: ${err.message}`);
    wrapped.cause = err;
    throw wrapped;
  }
  return err;
}

/** newClient connects to server with retries off and a 10 s operation timeout. */
export async function newClient(server, retryOptions = {}) {
  const { ServiceBusClient } = await import("@azure/service-bus");
  return new ServiceBusClient(server.connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000, ...retryOptions },
  });
}
