import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  BINARY,
  findPrebuilt,
  PREBUILT_PLATFORMS,
  platformKey,
  prebuiltPackage,
} from "../scripts/prebuilt.mjs";

const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("platform packages", () => {
  it("lists every prebuilt platform as an optional dependency whose os/cpu/libc fit its name", () => {
    const pkg = JSON.parse(readFileSync(join(pkgRoot, "package.json"), "utf8"));
    expect(Object.keys(pkg.optionalDependencies)).toEqual(PREBUILT_PLATFORMS.map(prebuiltPackage));
    for (const key of PREBUILT_PLATFORMS) {
      const p = JSON.parse(readFileSync(join(pkgRoot, "..", `backend-cuda-${key}`, "package.json"), "utf8"));
      expect(pkg.optionalDependencies[p.name]).toBe("workspace:*");
      expect(platformKey(p.os[0], p.cpu[0], p.libc[0])).toBe(key);
      expect(p.files).toEqual([BINARY, "README.md"]);
      expect(p.version).toBe(pkg.version);
    }
  });

  it("has no prebuilt for other platforms, and says so", () => {
    expect(findPrebuilt(pkgRoot, "linux-arm64-gnu").missing).toBe(
      "no prebuilt package for linux-arm64-gnu (prebuilt: linux-x64-gnu)",
    );
  });
});
