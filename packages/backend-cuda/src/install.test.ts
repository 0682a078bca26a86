import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { decide, main } from "../scripts/install.mjs";
import { FIX } from "../scripts/prebuilt.mjs";
import { selectBinary } from "./binary.js";

// The install script's decision: prebuilt present / absent on a machine that can build and run
// CUDA / absent without a driver / absent without nvcc.
const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "minfer-cuda-install-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const name = "@minfer/backend-cuda-linux-x64-gnu";
const absent = { name, missing: `${name} is not installed (were optional dependencies omitted?)` };
const loadsOk = () => ({ ok: true as const });
const withDriver = { platform: "linux", driver: () => true };

describe("decide", () => {
  it("uses a prebuilt binary that loads, whatever the machine", () => {
    const d = decide({ name, path: "/p/minfer_cuda.node" }, loadsOk, {
      platform: "linux",
      driver: () => false,
    });
    expect(d).toEqual({
      action: "prebuilt",
      line: `[backend-cuda] using prebuilt ${name} (/p/minfer_cuda.node)`,
    });
  });

  it("builds from source on Linux with a driver when there is no prebuilt, or it does not load", () => {
    expect(decide(absent, loadsOk, withDriver)).toEqual({ action: "build", status: absent.missing });
    const broken = decide({ name, path: "/p/x.node" }, () => ({ ok: false, error: "bad" }), withDriver);
    expect(broken).toEqual({ action: "build", status: `${name} does not load here: bad` });
  });

  it("skips the build, saying why, without an NVIDIA driver unless forced, and off Linux", () => {
    const none = decide(absent, loadsOk, { platform: "linux", driver: () => false });
    expect(none).toMatchObject({ action: "skip", status: absent.missing });
    expect(none.action === "skip" && none.reason).toMatch(/no NVIDIA driver .*MINFER_CUDA_BUILD=1/);
    expect(decide(absent, loadsOk, { platform: "linux", driver: () => false, force: true }).action).toBe(
      "build",
    );
    const mac = decide(absent, loadsOk, { platform: "darwin", driver: () => true });
    expect(mac.action === "skip" && mac.reason).toBe(
      "the CUDA backend builds on Linux only (this is darwin)",
    );
  });
});

describe("main", () => {
  it("prints one 'using prebuilt' line and compiles nothing", () => {
    const build = vi.fn(() => 0);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const path = join(tmp, "minfer_cuda.node");
    expect(main({ pkg: join(tmp, "p"), prebuilt: { name, path }, loads: loadsOk, build })).toBe(0);
    expect(build).not.toHaveBeenCalled();
    expect(log.mock.calls).toEqual([[`[backend-cuda] using prebuilt ${name} (${path})`]]);
    log.mockRestore();
  });

  it("builds when it can, and records the reason when it skips (keeping an existing build)", () => {
    const build = vi.fn(() => 0);
    main({ pkg: join(tmp, "b"), prebuilt: absent, build, ...withDriver, force: false });
    expect(build).toHaveBeenCalledWith(join(tmp, "b"), absent.missing);

    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const pkg = join(tmp, "nodriver");
    expect(main({ pkg, prebuilt: absent, build, platform: "linux", driver: () => false, force: false })).toBe(
      0,
    );
    const note = readFileSync(join(pkg, "build", "NATIVE_UNAVAILABLE.txt"), "utf8");
    expect(note).toMatch(/^\[backend-cuda\] CUDA addon not built: no NVIDIA driver .*; no prebuilt: .*Fix: /);
    expect(selectBinary({ packageRoot: pkg, prebuilt: () => absent })).toEqual({
      ok: false,
      reason: note.trim(),
    });

    const built = join(tmp, "built");
    mkdirSync(join(built, "build"), { recursive: true });
    writeFileSync(join(built, "build", "minfer_cuda.node"), "");
    main({ pkg: built, prebuilt: absent, build, platform: "linux", driver: () => false, force: false });
    expect(existsSync(join(built, "build", "NATIVE_UNAVAILABLE.txt"))).toBe(false);
    expect(log.mock.calls.at(-1)?.[0]).toMatch(/not rebuilt: no NVIDIA driver.*keeping .*minfer_cuda\.node/);
    expect(build).toHaveBeenCalledTimes(1);
    log.mockRestore();
  });
});

describe("install without a prebuilt and without nvcc", () => {
  const pkg = join(tmp, "node_modules", "@minfer", "backend-cuda");
  mkdirSync(join(pkg, "native", "cuda"), { recursive: true });
  writeFileSync(join(pkg, "native", "cuda", "CMakeLists.txt"), "");
  cpSync(join(pkgRoot, "scripts"), join(pkg, "scripts"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), "{}");
  // MINFER_CUDA_BUILD=1 gets past the driver check, so the build itself finds no nvcc.
  const r = spawnSync(process.execPath, [join(pkg, "scripts", "install.mjs")], {
    encoding: "utf8",
    env: { ...process.env, CUDACXX: "/nonexistent/nvcc", MINFER_CUDA_BUILD: "1", MINFER_NATIVE_STRICT: "" },
  });

  it("still succeeds and prints one message naming what to install, recorded for the loader", () => {
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("no CUDA toolkit (`/nonexistent/nvcc --version` failed)");
    expect(lines[0]).toContain(FIX);
    const recorded = readFileSync(join(pkg, "build", "NATIVE_UNAVAILABLE.txt"), "utf8").trim();
    expect(lines[0]).toContain(recorded);
    expect(selectBinary({ packageRoot: pkg })).toEqual({ ok: false, reason: recorded });
  });
});
