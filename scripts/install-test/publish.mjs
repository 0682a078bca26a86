// Packs every public package of the workspace with pnpm (which turns `workspace:` ranges into
// version ranges and runs each package's prepack), checks each tarball holds what a user needs
// and nothing else, and publishes the tarballs to the local registry with npm.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CheckError, cleanEnv, exec, expectSuccess, tail } from "./exec.mjs";

/** Every workspace package under packages/, with its manifest; `public` when not private. */
export function workspacePackages(root) {
  const dir = join(root, "packages");
  return readdirSync(dir)
    .filter((d) => existsSync(join(dir, d, "package.json")))
    .map((d) => {
      const manifest = JSON.parse(readFileSync(join(dir, d, "package.json"), "utf8"));
      return {
        dir: join(dir, d),
        name: manifest.name,
        version: manifest.version,
        manifest,
        public: !manifest.private,
      };
    });
}

/** A per-platform package: it names the platforms it is for. */
export const isPlatformPackage = (p) => Array.isArray(p.manifest.os) || Array.isArray(p.manifest.cpu);

/** Does this platform package's os/cpu/libc match the machine running the test? */
export function matchesHost(p) {
  const { os, cpu, libc } = p.manifest;
  if (os && !os.includes(process.platform)) return false;
  if (cpu && !cpu.includes(process.arch)) return false;
  if (libc && process.platform === "linux") {
    const glibc = Boolean(process.report?.getReport().header.glibcVersionRuntime);
    if (!libc.includes(glibc ? "glibc" : "musl")) return false;
  }
  return true;
}

const binaryOf = (p) => readdirSync(p.dir).find((f) => f.endsWith(".node"));

/**
 * Fills the binary of each platform package with scripts/release/prebuild.mjs. One for this
 * machine must build (the scenarios install it); one that cannot be built here (no cross
 * compiler, no CUDA toolkit) is left out of the publish with its reason, as npm leaves out an
 * optional dependency it cannot find. `targets` limits which are built (null: all).
 * Returns { skipped: [{ name, reason }], errors: [CheckError] } (an error: this machine's own
 * prebuilt did not build; that package is skipped too, so the rest can still be published).
 */
export async function prebuild({ root, packages, targets, logFile, say }) {
  const skipped = [];
  const errors = [];
  // The prebuild targets and the platform package each fills, as scripts/release defines them.
  const targetsFile = join(root, "scripts", "release", "targets.mjs");
  const targetOf = new Map();
  if (existsSync(targetsFile)) {
    const { TARGETS } = await import(pathToFileURL(targetsFile).href);
    for (const [target, t] of Object.entries(TARGETS)) targetOf.set(t.package, target);
  }
  for (const p of packages.filter((q) => q.public && isPlatformPackage(q))) {
    const target = targetOf.get(p.name);
    if (!target) {
      skipped.push({ name: p.name, reason: "no prebuild target" });
      errors.push(
        new CheckError(`${p.name} is a platform package with no prebuild target in ${targetsFile}`),
      );
      continue;
    }
    if (targets && !targets.includes(target)) {
      if (binaryOf(p)) say(`prebuild ${target}: not rebuilt (not in --prebuilds); using ${binaryOf(p)}`);
      else
        skipped.push({
          name: p.name,
          reason: `${target} not in --prebuilds and no binary`,
        });
      continue;
    }
    const script = join(root, "scripts", "release", "prebuild.mjs");
    if (!existsSync(script)) {
      skipped.push({ name: p.name, reason: `${script} is missing` });
      errors.push(new CheckError(`${script} is missing: ${p.name} cannot be filled`));
      continue;
    }
    say(`prebuild ${target} …`);
    const r = await exec(process.execPath, [script, target], {
      cwd: root,
      env: cleanEnv(),
      timeoutS: 1800,
      logFile,
    });
    if (r.code === 0 && binaryOf(p)) {
      say(`prebuild ${target}: ${binaryOf(p)} (${r.seconds.toFixed(0)} s)`);
      continue;
    }
    // The build's own reason: the lines that say "not built" or "Fix:", else its last lines.
    const lines = r.output.trim().split("\n");
    const said = lines.filter((l) => /not built|Fix:|not found|failed:/i.test(l));
    const reason = `prebuild.mjs ${target} exited ${r.code}: ${(said.length ? said : lines.slice(-3)).join(" / ")}`;
    skipped.push({ name: p.name, reason });
    if (matchesHost(p) && p.name.startsWith("@minfer/backend-cpu-"))
      errors.push(new CheckError(`the prebuilt for this machine (${p.name}) did not build`, tail(r.output)));
    say(`prebuild ${target}: not built here, ${p.name} left out`);
    console.log(tail(r.output, 12).replace(/^/gm, "    "));
  }
  return { skipped, errors };
}

function tarList(tgz) {
  const r = spawnSync("tar", ["tzf", tgz], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new CheckError(`tar tzf ${tgz} failed`, r.stderr);
  return r.stdout.trim().split("\n");
}

function tarManifest(tgz) {
  const r = spawnSync("tar", ["xzf", tgz, "-O", "package/package.json"], { encoding: "utf8" });
  if (r.status !== 0) throw new CheckError(`no package/package.json in ${tgz}`, r.stderr);
  return JSON.parse(r.stdout);
}

const DEP_FIELDS = ["dependencies", "optionalDependencies", "peerDependencies"];

/**
 * What a tarball must not hold or say: tests, test helpers, fixtures, a `workspace:` range, a
 * dependency on a package that is private or not in the workspace's published set.
 * Returns a list of problems (empty when fine).
 */
export function tarballProblems(tgz, published, privateNames, skipped = new Set()) {
  const problems = [];
  const entries = tarList(tgz);
  const manifest = tarManifest(tgz);
  for (const e of entries) {
    const f = e.replace(/^package\//, "");
    if (/(^|\/)(test|tests|__tests__|fixtures|test-fixtures)\//.test(f))
      problems.push(`holds ${f} (a test folder)`);
    else if (/\.(test|spec)\.[cm]?[jt]sx?$/.test(f) || /test-helpers|test-vectors|test-checks/.test(f))
      problems.push(`holds ${f} (a test file)`);
    else if (f.endsWith(".gguf") && !(manifest.name === "minfer" && f.startsWith("models/")))
      problems.push(`holds ${f} (a model file outside the CLI's built-in model)`);
  }
  const text = JSON.stringify(manifest);
  if (text.includes("workspace:")) problems.push("its package.json still has a workspace: range");
  for (const field of DEP_FIELDS)
    for (const dep of Object.keys(manifest[field] ?? {})) {
      if (privateNames.has(dep)) problems.push(`${field} names the private package ${dep}`);
      // A platform package this machine cannot build is left out on purpose; npm skips a
      // missing optional dependency.
      else if (field === "optionalDependencies" && skipped.has(dep)) continue;
      else if ((dep === "minfer" || dep.startsWith("@minfer/")) && !published.has(dep))
        problems.push(`${field} names ${dep}, which is not published`);
    }
  return problems;
}

/**
 * Packs each public package into `outDir`, checks the tarballs and publishes them.
 * Returns { results: [{ name, version, tgz, bytes, problems }], failures: [{ name, error }] }.
 */
export async function packAndPublish({ root, packages, skip, outDir, registry, logFile, say }) {
  const pnpm = join(root, "node_modules", ".bin", "pnpm");
  const toPublish = packages.filter((p) => p.public && !skip.has(p.name));
  const published = new Set(toPublish.map((p) => p.name));
  const privateNames = new Set(packages.filter((p) => !p.public).map((p) => p.name));
  for (const p of toPublish)
    if (!existsSync(join(p.dir, "dist")) && p.manifest.files?.includes("dist"))
      throw new CheckError(`${p.dir}/dist is missing: build first (node scripts/setup.mjs)`);

  // The token for `npm publish`, in a project .npmrc of the folder it runs in.
  const host = registry.url.replace(/^http:/, "");
  writeFileSync(join(outDir, ".npmrc"), `${host}:_authToken=${registry.token}\n`);
  const results = [];
  const failures = [];
  for (const p of toPublish) {
    try {
      results.push(await packOne({ p, pnpm, outDir, registry, logFile, published, privateNames, skip, say }));
    } catch (e) {
      // Go on with the others: one package's failure should not hide the rest.
      say(`NOT published ${p.name}: ${e.message}`);
      failures.push({ name: p.name, error: e });
    }
  }
  return { results, failures };
}

async function packOne({ p, pnpm, outDir, registry, logFile, published, privateNames, skip, say }) {
  const before = new Set(readdirSync(outDir));
  const packed = await exec(pnpm, ["pack", "--pack-destination", outDir], {
    cwd: p.dir,
    env: cleanEnv(),
    timeoutS: 900,
    logFile,
  });
  expectSuccess(packed, `pnpm pack of ${p.name}`);
  const tgz = readdirSync(outDir).find((f) => f.endsWith(".tgz") && !before.has(f));
  if (!tgz) throw new CheckError(`pnpm pack of ${p.name} made no tarball in ${outDir}`, packed.output);
  const path = join(outDir, tgz);
  const problems = tarballProblems(path, published, privateNames, skip);
  const pub = await exec(
    "npm",
    ["publish", path, "--registry", registry.url, "--tag", "latest", "--access", "public"],
    { cwd: outDir, env: cleanEnv(), timeoutS: 300, logFile },
  );
  expectSuccess(pub, `npm publish of ${p.name}`);
  const bytes = statSync(path).size;
  say(
    `published ${p.name}@${p.version} (${(bytes / 1024).toFixed(0)} KiB)${problems.length ? ` — ${problems.length} problem(s)` : ""}`,
  );
  return { name: p.name, version: p.version, tgz: path, bytes, problems };
}
