import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  BINARY,
  findPrebuilt,
  loadsInChild,
  PREBUILT_PLATFORMS,
  platformKey,
  prebuiltPackage,
} from "../scripts/prebuilt.mjs";

const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "minfer-cpu-prebuilt-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A package at tmp/name with this platform package installed beside it (binary or not). */
function fakeInstall(name: string, key: string, binary?: Buffer | string): string {
  const pkg = join(tmp, name, "node_modules", "@minfer", "backend-cpu");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), "{}");
  const platform = join(tmp, name, "node_modules", "@minfer", `backend-cpu-${key}`);
  mkdirSync(platform, { recursive: true });
  writeFileSync(join(platform, "package.json"), JSON.stringify({ name: prebuiltPackage(key) }));
  if (binary !== undefined) writeFileSync(join(platform, BINARY), binary);
  return pkg;
}

describe("platform packages", () => {
  it("names a platform as the packages do", () => {
    expect(platformKey("linux", "x64", "glibc")).toBe("linux-x64-gnu");
    expect(platformKey("linux", "arm64", "glibc")).toBe("linux-arm64-gnu");
    expect(platformKey("linux", "x64", "musl")).toBe("linux-x64-musl");
    expect(platformKey("darwin", "arm64", undefined)).toBe("darwin-arm64");
    expect(platformKey("win32", "x64", undefined)).toBe("win32-x64");
  });

  it("lists every prebuilt platform as an optional dependency whose os/cpu/libc fit its name", () => {
    const pkg = JSON.parse(readFileSync(join(pkgRoot, "package.json"), "utf8"));
    expect(Object.keys(pkg.optionalDependencies).sort()).toEqual(
      PREBUILT_PLATFORMS.map(prebuiltPackage).sort(),
    );
    for (const key of PREBUILT_PLATFORMS) {
      const dir = join(pkgRoot, "..", `backend-cpu-${key}`);
      const p = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      expect(pkg.optionalDependencies[p.name]).toBe("workspace:*");
      expect(platformKey(p.os[0], p.cpu[0], p.libc[0])).toBe(key);
      expect(p.files).toEqual([BINARY, "README.md"]);
      expect(p.version).toBe(pkg.version);
    }
  });

  it("finds an installed platform package's binary", () => {
    const pkg = fakeInstall("with-binary", "linux-x64-gnu", "x");
    expect(findPrebuilt(pkg, "linux-x64-gnu")).toEqual({
      name: "@minfer/backend-cpu-linux-x64-gnu",
      path: join(dirname(pkg), "backend-cpu-linux-x64-gnu", BINARY),
    });
  });

  it("says why there is no prebuilt binary", () => {
    expect(findPrebuilt(fakeInstall("empty", "linux-x64-gnu"), "linux-x64-gnu").missing).toMatch(
      /backend-cpu-linux-x64-gnu \(.*\) holds no minfer_cpu\.node/,
    );
    expect(findPrebuilt(join(tmp, "nothing"), "linux-arm64-gnu").missing).toBe(
      "@minfer/backend-cpu-linux-arm64-gnu is not installed (were optional dependencies omitted?)",
    );
    expect(findPrebuilt(join(tmp, "nothing"), "darwin-arm64").missing).toBe(
      "no prebuilt package for darwin-arm64 (prebuilt: linux-x64-gnu, linux-arm64-gnu)",
    );
  });

  it("checks in a child process that a binary loads", () => {
    expect(loadsInChild(join(pkgRoot, "build", "Release", BINARY))).toEqual({ ok: true });
    const garbage = join(tmp, "garbage.node");
    writeFileSync(garbage, "not an ELF file");
    const r = loadsInChild(garbage);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/invalid ELF header|too short|Error/);
  });
});
