import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FIX } from "../scripts/prebuilt.mjs";
import { type BinaryLookup, selectBinary } from "./binary.js";
import { loadBinary } from "./native.js";

// The selection order (binary.ts) with every part injected.
const root = "/pkg";
const own = join(root, "build", "minfer_cuda.node");
const note = join(root, "build", "NATIVE_UNAVAILABLE.txt");
const prebuiltPath = "/nm/@minfer/backend-cuda-linux-x64-gnu/minfer_cuda.node";
const name = "@minfer/backend-cuda-linux-x64-gnu";
const found = () => ({ name, path: prebuiltPath });
const absent = () => ({ name, missing: `${name} is not installed (were optional dependencies omitted?)` });

const lookup = (files: Record<string, string>, prebuilt: BinaryLookup["prebuilt"]): BinaryLookup => ({
  packageRoot: root,
  prebuilt,
  exists: (p) => p in files,
  readText: (p) => files[p] ?? "",
});

describe("selectBinary", () => {
  it("prefers the package's own build over the prebuilt package", () => {
    expect(selectBinary(lookup({ [own]: "" }, found))).toEqual({
      ok: true,
      path: own,
      origin: "built from source",
    });
  });

  it("takes the platform package's binary when there is no build of its own", () => {
    expect(selectBinary(lookup({}, found))).toEqual({
      ok: true,
      path: prebuiltPath,
      origin: "prebuilt",
      from: name,
    });
  });

  it("reports what the install recorded", () => {
    const recorded = "[backend-cuda] CUDA addon not built: no NVIDIA driver; no prebuilt: x. Fix: y.";
    expect(selectBinary(lookup({ [note]: recorded }, absent))).toEqual({ ok: false, reason: recorded });
  });

  it("says the install script did not run, and the fix, when there is neither a build nor a record", () => {
    const r = selectBinary(lookup({}, absent));
    const reason = !r.ok ? r.reason : "";
    expect(reason).toContain(`${own} was not built`);
    expect(reason).toContain(absent().missing);
    expect(reason).toContain(FIX);
  });
});

describe("loadBinary", () => {
  it("names the binary, its origin and the fix when it does not load", () => {
    const r = loadBinary({ ok: true, path: prebuiltPath, origin: "prebuilt", from: name }, () => {
      throw new Error("libcuda.so.1: cannot open shared object file");
    });
    expect(!r.ok && r.reason).toMatch(
      /\(prebuilt\) does not load: libcuda.*reinstall @minfer\/backend-cuda-linux/,
    );
  });

  it("keeps where a loaded binary came from", () => {
    const addon = {};
    expect(loadBinary({ ok: true, path: own, origin: "built from source" }, () => addon)).toEqual({
      ok: true,
      addon,
      path: own,
      origin: "built from source",
    });
  });
});
