// Running commands for the install test: each in its own process group (so a timeout ends the
// whole tree it started, npm's install scripts included), output kept in memory for the checks
// and appended to one log file, and an environment without the npm/pnpm variables of the
// `npm test` that started us (npm reads npm_config_* as configuration).
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

/** The current environment less npm_*, pnpm_*, INIT_CWD and turbo's task variables, plus `extra`. */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_)/i.test(k) || k === "INIT_CWD" || /^TURBO_/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** Process groups of the commands still running, ended by `endRunning` (on exit or a signal). */
const running = new Set();

/** Ends every command this module started that is still running (its whole process group). */
export function endRunning() {
  for (const pid of running) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  running.clear();
}

/** Failure of a check, with the output that explains it. */
export class CheckError extends Error {
  constructor(message, detail = "") {
    super(message);
    this.name = "CheckError";
    this.detail = detail;
  }
}

/** The last `n` lines of `text`. */
export function tail(text, n = 40) {
  const lines = text.trimEnd().split("\n");
  return (lines.length > n ? [`… (${lines.length - n} lines before)`, ...lines.slice(-n)] : lines).join("\n");
}

/**
 * Runs `cmd args` and resolves with { code, signal, stdout, stderr, output, seconds } — never
 * rejects on a non-zero exit (the caller checks). `timeoutS` kills the process group.
 */
export function exec(cmd, args, { cwd, env, timeoutS = 600, logFile, input } = {}) {
  const started = Date.now();
  const shown = `$ ${[cmd, ...args].map((a) => (/[\s"'$]/.test(a) ? JSON.stringify(a) : a)).join(" ")}`;
  if (logFile) appendFileSync(logFile, `\n${shown}\n  (in ${cwd})\n`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd,
      env,
      detached: true,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let output = "";
    let timedOut = false;
    if (child.pid !== undefined) running.add(child.pid);
    const keep = (which) => (chunk) => {
      const s = chunk.toString();
      if (which === "out") stdout += s;
      else stderr += s;
      output += s;
      if (logFile) appendFileSync(logFile, s);
    };
    child.stdout.on("data", keep("out"));
    child.stderr.on("data", keep("err"));
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }, timeoutS * 1000);
    const done = (code, signal, error) => {
      clearTimeout(timer);
      running.delete(child.pid);
      const seconds = (Date.now() - started) / 1000;
      if (error) stderr += String(error);
      if (timedOut) stderr += `\n(killed after ${timeoutS} s)`;
      if (logFile) appendFileSync(logFile, `(exit ${code ?? signal}, ${seconds.toFixed(1)} s)\n`);
      resolve({
        command: shown,
        code,
        signal,
        stdout,
        stderr,
        output: output + (error ? String(error) : ""),
        seconds,
        timedOut,
      });
    };
    child.on("error", (e) => done(-1, null, e));
    child.on("close", (code, signal) => done(code, signal));
  });
}

/** Throws a CheckError naming the command and showing its output unless it exited 0. */
export function expectSuccess(r, what) {
  if (r.code !== 0)
    throw new CheckError(
      `${what}: exit ${r.code ?? r.signal}${r.timedOut ? " (timed out)" : ""}`,
      `${r.command}\n${tail(r.output)}`,
    );
  return r;
}
