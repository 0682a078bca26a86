#!/usr/bin/env node
// Installs the workspace (pnpm, fetched through npx when it is not on PATH) and builds every
// package, unless that is already done. The README's two commands call this first, so a fresh
// clone needs nothing but Node.js 20 and npm.
import { execSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const pnpmVersion = pkg.packageManager.split("@")[1];

// turbo runs each package's scripts through pnpm, which the root devDependencies provide.
const bin = join(root, "node_modules", ".bin");
const env = {
  ...process.env,
  PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
  TURBO_TELEMETRY_DISABLED: "1",
};

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, env, stdio: "inherit", shell: process.platform === "win32" });
  if (r.status !== 0) {
    console.error(`setup: \`${cmd} ${args.join(" ")}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

function pnpmCommand() {
  try {
    const v = execSync("pnpm --version", { stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
    if (v === pnpmVersion) return ["pnpm", []];
  } catch {
    // not on PATH: use npx below
  }
  return ["npx", ["-y", `pnpm@${pnpmVersion}`]];
}

const marker = join(root, "node_modules", ".modules.yaml");
const lock = join(root, "pnpm-lock.yaml");
const installed =
  existsSync(marker) && (!existsSync(lock) || statSync(lock).mtimeMs <= statSync(marker).mtimeMs);
if (!installed) {
  const [cmd, pre] = pnpmCommand();
  const frozen = process.env.CI ? ["--frozen-lockfile"] : [];
  run(cmd, [...pre, "install", ...frozen]);
}
run(join(bin, "turbo"), ["run", "build", "--output-logs=errors-only"]);
