import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { decide, main } from "../scripts/install.mjs";
import { BINARY, FIX } from "../scripts/prebuilt.mjs";
import { selectBinary } from "./binary.js";

// The install script's decision: prebuilt present (and loading) / absent with a compiler /
// absent without one.
const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "minfer-cpu-install-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const name = "@minfer/backend-cpu-linux-x64-gnu";
const loadsOk = () => ({ ok: true as const });

describe("decide", () => {
  it("uses a prebuilt binary that loads", () => {
    expect(decide({ name, path: "/p/minfer_cpu.node" }, loadsOk)).toEqual({
      action: "prebuilt",
      line: `[backend-cpu] using prebuilt ${name} (/p/minfer_cpu.node)`,
    });
  });

  it("builds from source when the prebuilt binary does not load, saying why", () => {
    const d = decide({ name, path: "/p/minfer_cpu.node" }, () => ({
      ok: false,
      error: "GLIBC_2.33 not found",
    }));
    expect(d).toEqual({ action: "build", status: `${name} does not load here: GLIBC_2.33 not found` });
  });

  it("builds from source when there is no prebuilt package", () => {
    expect(decide({ name, missing: `${name} is not installed` }, loadsOk)).toEqual({
      action: "build",
      status: `${name} is not installed`,
    });
  });
});

describe("main", () => {
  it("prints one 'using prebuilt' line, compiles nothing and clears a stale record", () => {
    const pkg = join(tmp, "prebuilt");
    mkdirSync(join(pkg, "build"), { recursive: true });
    writeFileSync(join(pkg, "build", "NATIVE_UNAVAILABLE.txt"), "stale\n");
    const build = vi.fn(() => 0);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    // The repository's own build stands in for a platform package's binary: it really loads.
    const path = join(pkgRoot, "build", "Release", BINARY);
    expect(main({ pkg, prebuilt: { name, path }, build })).toBe(0);
    expect(build).not.toHaveBeenCalled();
    expect(log.mock.calls).toEqual([[`[backend-cpu] using prebuilt ${name} (${path})`]]);
    expect(existsSync(join(pkg, "build", "NATIVE_UNAVAILABLE.txt"))).toBe(false);
    log.mockRestore();
  });

  it("builds from source, passing why no prebuilt was used, when the platform package is absent", () => {
    const build = vi.fn(() => 0);
    const status = `${name} is not installed (were optional dependencies omitted?)`;
    expect(main({ pkg: join(tmp, "absent"), prebuilt: { name, missing: status }, build })).toBe(0);
    expect(build).toHaveBeenCalledWith(join(tmp, "absent"), status);
  });

  it("builds from source when the prebuilt binary is there but does not load", () => {
    const garbage = join(tmp, "garbage.node");
    writeFileSync(garbage, "not an ELF file");
    const build = vi.fn(() => 0);
    main({ pkg: join(tmp, "broken"), prebuilt: { name, path: garbage }, build });
    expect(build).toHaveBeenCalledWith(
      join(tmp, "broken"),
      expect.stringContaining(`${name} does not load here`),
    );
  });
});

describe("install without a prebuilt and without a compiler", () => {
  // A copy of the package as installed (its scripts and a source tree), outside any checkout, so
  // no platform package resolves; CXX and PYTHON point nowhere.
  const pkg = join(tmp, "node_modules", "@minfer", "backend-cpu");
  mkdirSync(join(pkg, "native", "cpu"), { recursive: true });
  mkdirSync(join(pkg, "native", "common"), { recursive: true });
  writeFileSync(join(pkg, "native", "cpu", "addon.cpp"), "");
  cpSync(join(pkgRoot, "scripts"), join(pkg, "scripts"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), "{}");
  const r = spawnSync(process.execPath, [join(pkg, "scripts", "install.mjs")], {
    encoding: "utf8",
    env: {
      ...process.env,
      CXX: "/nonexistent/c++",
      PYTHON: "/nonexistent/python3",
      MINFER_NATIVE_STRICT: "",
    },
  });
  const note = join(pkg, "build", "NATIVE_UNAVAILABLE.txt");

  it("still succeeds and prints one message naming what to install", () => {
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("no C++ compiler (`/nonexistent/c++ --version` failed");
    expect(lines[0]).toContain("no Python 3");
    expect(lines[0]).toContain("no prebuilt: @minfer/backend-cpu-");
    expect(lines[0]).toContain(FIX);
  });

  it("records it in build/NATIVE_UNAVAILABLE.txt, which the loader reports as the reason", () => {
    const recorded = readFileSync(note, "utf8").trim();
    expect(r.stdout).toContain(recorded);
    const choice = selectBinary({ packageRoot: pkg, sanitize: false });
    expect(choice).toEqual({ ok: false, reason: recorded });
  });
});
