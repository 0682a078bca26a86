// The install test's scenarios, each in an empty folder outside the checkout, installing from the
// local registry with npm as a user would (a fresh npm cache each; install scripts shown with
// --foreground-scripts, so their messages reach the log and the checks).

import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { CheckError, cleanEnv, exec, expectSuccess, tail } from "./exec.mjs";

/**
 * Does `text` read like English? At least 5 words of letters only, they are most of the words,
 * and nearly every character is an ASCII letter, a space or common punctuation.
 */
export function englishProblem(text) {
  const t = text.trim();
  const words = t.split(/\s+/).filter(Boolean);
  const plain = words
    .map((w) => w.replace(/^[("'“‘]+|[)"'”’.,;:!?]+$/g, ""))
    .filter((w) => /^[A-Za-z]+$/.test(w));
  const common = [...t].filter((c) => /[A-Za-z\s.,;:'"!?()-]/.test(c)).length;
  if (plain.length < 5) return `only ${plain.length} letters-only words in ${JSON.stringify(t)}`;
  if (plain.length < 0.6 * words.length)
    return `${plain.length} of ${words.length} words are letters only in ${JSON.stringify(t)}`;
  if (common < 0.9 * t.length)
    return `${t.length - common} of ${t.length} characters are not letters, spaces or punctuation`;
  return null;
}

const check = (ok, message, detail = "") => {
  if (!ok) throw new CheckError(message, detail);
};

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* walk(path);
    else yield path;
  }
}

/** The installed packages of a node_modules tree, with their manifests. */
function installedPackages(nodeModules) {
  const out = [];
  const visit = (dir) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === ".bin" || e.name.startsWith(".")) continue;
      const path = join(dir, e.name);
      if (e.name.startsWith("@")) visit(path);
      else if (existsSync(join(path, "package.json"))) {
        out.push({ path, manifest: JSON.parse(readFileSync(join(path, "package.json"), "utf8")) });
        visit(join(path, "node_modules"));
      }
    }
  };
  visit(nodeModules);
  return out;
}

/** An empty folder for one scenario, with the package.json `npm init -y` would write. */
function folder(ctx, id) {
  const dir = join(ctx.tmp, `scenario-${id}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: `install-test-${id}`, version: "1.0.0", private: true }, null, 2)}\n`,
  );
  return dir;
}

function npmInstall(ctx, id, dir, args, env = {}) {
  return exec(
    "npm",
    [
      "install",
      ...args,
      "--registry",
      ctx.registryUrl,
      "--cache",
      join(ctx.tmp, `npm-cache-${id}`),
      "--foreground-scripts",
      "--no-audit",
      "--no-fund",
    ],
    { cwd: dir, env: cleanEnv(env), timeoutS: 1200, logFile: ctx.logFile },
  );
}

function minferRun(ctx, dir, args, env = {}) {
  // --no: never fetch minfer from the registry; the installed one must be there.
  return exec("npx", ["--no", "minfer", "run", ...args], {
    cwd: dir,
    env: cleanEnv({ npm_config_registry: ctx.registryUrl, ...env }),
    timeoutS: 300,
    logFile: ctx.logFile,
  });
}

/**
 * The installed `minfer serve` (built-in model) answers its chat page at `/`: the page ships in
 * @minfer/server's tarball and is found from the installed package.
 */
async function servesChatPage(ctx, dir) {
  const bin = join(dir, "node_modules", "minfer", "dist", "bin.js");
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "-np", "1", "-c", "256"], {
    cwd: dir,
    env: cleanEnv(),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CheckError("minfer serve did not report ready in 60 s", tail(err))),
        60_000,
      );
      child.stderr.on("data", (d) => {
        err += d;
        const m = /serve: ready on (http:\/\/\S+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on("exit", (code) => reject(new CheckError(`minfer serve exited ${code}`, tail(err))));
    });
    const r = await fetch(`${url}/`);
    const html = await r.text();
    check(
      r.status === 200 && html.includes("<title>minfer</title>"),
      `GET / answered ${r.status}, not the chat page`,
      html.slice(0, 400),
    );
    ctx.say(`  minfer serve's chat page: ${html.length} bytes at ${url}/`);
  } finally {
    child.kill("SIGKILL");
  }
}

// Greedy (--temp 0): a sampled run of this small model now and then draws a short, punctuated
// line ("\"Strike\n\n-- Feedy, I'll be puzzle") that the English check rejects; the check is of
// the install, not of the sampler.
async function runsEnglish(ctx, dir, env = {}) {
  const r = expectSuccess(
    await minferRun(ctx, dir, ["-p", "The jury said", "-n", "16", "--temp", "0"], env),
    "npx minfer run",
  );
  const problem = englishProblem(r.stdout);
  check(problem === null, `minfer run's text does not look like English: ${problem}`, tail(r.output));
  ctx.say(`  generated: ${JSON.stringify(r.stdout.trim())}`);
  return r;
}

const cpuPlatformPackages = (ctx) =>
  ctx.published.filter((p) => p.platform && p.name.startsWith("@minfer/backend-cpu-"));

export const SCENARIOS = [
  {
    id: "a",
    title:
      "npm i minfer, then npx minfer run prints English-looking text (prebuilt CPU backend) and minfer serve answers its chat page",
    async run(ctx) {
      const dir = folder(ctx, "a");
      const install = expectSuccess(await npmInstall(ctx, "a", dir, ["minfer"]), "npm i minfer");
      const nm = join(dir, "node_modules");
      const host = cpuPlatformPackages(ctx).filter((p) => p.host);
      check(
        host.length === 1,
        `expected one published CPU platform package for ${process.platform}-${process.arch}, found ${host.length}`,
      );
      const platformDir = join(nm, ...host[0].name.split("/"));
      check(existsSync(platformDir), `${host[0].name} was not installed`, tail(install.output));
      check(
        readdirSync(platformDir).some((f) => f.endsWith(".node")),
        `${host[0].name} has no .node binary at its root`,
      );
      check(
        /using prebuilt/i.test(install.output),
        'the install did not say "using prebuilt …"',
        tail(install.output),
      );
      check(
        !existsSync(join(nm, "@minfer", "backend-cpu", "build", "Release", "minfer_cpu.node")),
        "the CPU backend was compiled at install although its prebuilt was installed",
      );
      await runsEnglish(ctx, dir);
      await servesChatPage(ctx, dir);
    },
  },
  {
    id: "b",
    title: "npm i @minfer/gguf alone installs no native code and reads a GGUF",
    async run(ctx) {
      const dir = folder(ctx, "b");
      const install = expectSuccess(await npmInstall(ctx, "b", dir, ["@minfer/gguf"]), "npm i @minfer/gguf");
      const nm = join(dir, "node_modules");
      const natives = [...walk(nm)].filter((f) => f.endsWith(".node") || f.endsWith("binding.gyp"));
      check(natives.length === 0, `native code installed: ${natives.join(", ")}`);
      const scripted = installedPackages(nm).filter(({ manifest: m }) =>
        ["preinstall", "install", "postinstall"].some((s) => m.scripts?.[s]),
      );
      check(
        scripted.length === 0,
        `packages with install scripts: ${scripted.map((p) => p.manifest.name).join(", ")}`,
      );
      check(
        !/^> .*(preinstall|install|postinstall)$/m.test(install.output),
        "an install script ran",
        tail(install.output),
      );
      const names = installedPackages(nm).map((p) => p.manifest.name);
      ctx.say(`  installed: ${names.join(", ")}`);
      cpSync(join(ctx.root, "scripts", "install-test", "read-gguf.mjs"), join(dir, "read-gguf.mjs"));
      const r = expectSuccess(
        await exec(process.execPath, ["read-gguf.mjs", ctx.stories], {
          cwd: dir,
          env: cleanEnv(),
          logFile: ctx.logFile,
        }),
        "node read-gguf.mjs stories260K.gguf",
      );
      check(
        /^architecture: llama$/m.test(r.stdout),
        "read-gguf.mjs did not print architecture: llama",
        r.output,
      );
      ctx.say(`  ${r.stdout.trim().split("\n").join("; ")}`);
    },
  },
  {
    id: "c",
    title: "examples/custom-engine runs against the installed layer packages",
    async run(ctx) {
      const dir = join(ctx.tmp, "scenario-c");
      const src = join(ctx.root, "examples", "custom-engine");
      cpSync(src, dir, { recursive: true, filter: (f) => !f.startsWith(join(src, "node_modules")) });
      const pkgFile = join(dir, "package.json");
      const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
      for (const [name, range] of Object.entries(pkg.dependencies ?? {})) {
        if (!range.startsWith("workspace:")) continue;
        const version = ctx.versions.get(name);
        check(version !== undefined, `the example depends on ${name}, which was not published`);
        pkg.dependencies[name] = version;
      }
      writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
      expectSuccess(await npmInstall(ctx, "c", dir, []), "npm i (examples/custom-engine)");
      const golden = join(ctx.root, "packages", "models", "test", "stories260K.llamacpp.golden.json");
      const r = expectSuccess(
        await exec(process.execPath, ["custom-engine.mjs", ctx.stories, `--check=${golden}`], {
          cwd: dir,
          env: cleanEnv(),
          timeoutS: 300,
          logFile: ctx.logFile,
        }),
        "node custom-engine.mjs stories260K.gguf --check",
      );
      check(
        /identical to llama\.cpp/.test(r.stderr),
        "custom-engine did not report llama.cpp's continuation",
        r.output,
      );
      ctx.say(`  ${r.stdout.trim().slice(0, 120)}…`);
    },
  },
  {
    id: "d",
    title: "npm i minfer --omit=optional builds the CPU backend from its shipped sources",
    async run(ctx) {
      const dir = folder(ctx, "d");
      const install = expectSuccess(
        await npmInstall(ctx, "d", dir, ["minfer", "--omit=optional"]),
        "npm i minfer --omit=optional",
      );
      const nm = join(dir, "node_modules");
      for (const p of cpuPlatformPackages(ctx))
        check(!existsSync(join(nm, ...p.name.split("/"))), `${p.name} was installed despite --omit=optional`);
      const cpu = join(nm, "@minfer", "backend-cpu");
      check(
        !existsSync(join(cpu, "build", "NATIVE_UNAVAILABLE.txt")),
        `the CPU backend was not built: ${existsSync(join(cpu, "build", "NATIVE_UNAVAILABLE.txt")) ? readFileSync(join(cpu, "build", "NATIVE_UNAVAILABLE.txt"), "utf8") : ""}`,
        tail(install.output),
      );
      check(
        existsSync(join(cpu, "build", "Release", "minfer_cpu.node")),
        "node_modules/@minfer/backend-cpu/build/Release/minfer_cpu.node was not built",
        tail(install.output),
      );
      await runsEnglish(ctx, dir);
    },
  },
  {
    id: "e",
    title: "no prebuilt and no compiler: the install says what is missing, minfer run names the fix",
    async run(ctx) {
      const dir = folder(ctx, "e");
      // A PATH with node, npm, npx and sh only (npm runs scripts with sh), and compilers named
      // that do not exist.
      const bin = join(ctx.tmp, "bin-node-only");
      mkdirSync(bin, { recursive: true });
      const found = await exec("sh", ["-c", "command -v npm; command -v npx; command -v sh"], {
        env: cleanEnv(),
      });
      const [npm, npx, sh] = found.stdout.trim().split("\n");
      for (const [name, target] of [
        ["node", process.execPath],
        ["npm", npm],
        ["npx", npx],
        ["sh", sh],
      ])
        if (!existsSync(join(bin, name))) symlinkSync(target, join(bin, name));
      const none = join(ctx.tmp, "no-such-program");
      const env = {
        PATH: bin,
        CXX: `${none}/c++`,
        CC: `${none}/cc`,
        PYTHON: `${none}/python3`,
      };
      const install = expectSuccess(
        await npmInstall(ctx, "e", dir, ["minfer", "--omit=optional"], env),
        "npm i minfer --omit=optional (no compiler)",
      );
      const marker = join(dir, "node_modules", "@minfer", "backend-cpu", "build", "NATIVE_UNAVAILABLE.txt");
      check(existsSync(marker), "the install wrote no build/NATIVE_UNAVAILABLE.txt", tail(install.output));
      check(
        /compiler/i.test(install.output),
        "the install did not say that a compiler is missing",
        tail(install.output),
      );
      ctx.say(`  install said: ${readFileSync(marker, "utf8").trim().split("\n")[0]}`);
      const r = await minferRun(ctx, dir, ["-p", "hi", "-n", "4"], env);
      check(r.code !== 0, "minfer run succeeded with no usable backend", tail(r.output));
      check(!/internal error/.test(r.stderr), "minfer run failed with an internal error", tail(r.output));
      const m = /error \[([A-Z_]+)\]: (.*)/.exec(r.stderr);
      check(m !== null, "minfer run's error has no [CODE]", tail(r.output));
      check(
        ["BACKEND_MISSING", "BACKEND_UNAVAILABLE", "NATIVE_UNAVAILABLE", "NO_BACKEND"].includes(m[1]),
        `minfer run's error code ${m[1]} does not name a missing backend`,
        tail(r.output),
      );
      check(
        /compiler|c\+\+/i.test(r.stderr),
        "minfer run's error does not say to install a compiler",
        tail(r.output),
      );
      ctx.say(`  minfer run said: ${m[0].slice(0, 300)}`);
    },
  },
];
