import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FIX } from "../scripts/prebuilt.mjs";
import { type BinaryLookup, selectBinary } from "./binary.js";
import { loadBinary } from "./native.js";

// The selection order (binary.ts) with every part injected: which files exist, what the
// platform package resolves to, what the install recorded.
const root = "/pkg";
const release = join(root, "build", "Release", "minfer_cpu.node");
const debug = join(root, "build", "Debug", "minfer_cpu.node");
const note = join(root, "build", "NATIVE_UNAVAILABLE.txt");
const prebuiltPath = "/nm/@minfer/backend-cpu-linux-x64-gnu/minfer_cpu.node";
const found = () => ({ name: "@minfer/backend-cpu-linux-x64-gnu", path: prebuiltPath });
const absent = () => ({
  name: "@minfer/backend-cpu-linux-x64-gnu",
  missing: "@minfer/backend-cpu-linux-x64-gnu is not installed (were optional dependencies omitted?)",
});

function lookup(files: Record<string, string>, prebuilt: BinaryLookup["prebuilt"], sanitize = false) {
  return {
    packageRoot: root,
    sanitize,
    prebuilt,
    exists: (p: string) => p in files,
    readText: (p: string) => files[p] ?? "",
  };
}

describe("selectBinary", () => {
  it("prefers the package's own build (built from source) over the prebuilt package", () => {
    expect(selectBinary(lookup({ [release]: "" }, found))).toEqual({
      ok: true,
      path: release,
      origin: "built from source",
    });
  });

  it("takes the platform package's binary when there is no build of its own", () => {
    expect(selectBinary(lookup({}, found))).toEqual({
      ok: true,
      path: prebuiltPath,
      origin: "prebuilt",
      from: "@minfer/backend-cpu-linux-x64-gnu",
    });
  });

  it("loads only the sanitizer build under MINFER_SANITIZE=address, never the Release one", () => {
    expect(selectBinary(lookup({ [debug]: "", [release]: "" }, found, true))).toMatchObject({
      ok: true,
      path: debug,
      origin: "sanitizer build",
    });
    const none = selectBinary(lookup({ [release]: "" }, found, true));
    expect(none.ok).toBe(false);
    expect(!none.ok && none.reason).toMatch(/MINFER_SANITIZE=address .*Debug.*absent/);
  });

  it("reports what the install recorded when nothing was built and no prebuilt is installed", () => {
    const recorded = "[backend-cpu] native addon not built: no C++ compiler; no prebuilt: x. Fix: y.";
    expect(selectBinary(lookup({ [note]: `${recorded}\n` }, absent))).toEqual({
      ok: false,
      reason: recorded,
    });
    // A note from a checkout's build (no prebuilt status in it) gets the prebuilt status added.
    const bare = "[backend-cpu] native addon not built: no make. Fix: y.";
    const r = selectBinary(lookup({ [note]: bare }, absent));
    expect(!r.ok && r.reason).toBe(`${bare} (no prebuilt: ${absent().missing})`);
  });

  it("says the install script did not run, and the fix, when there is neither a build nor a record", () => {
    const r = selectBinary(lookup({}, absent));
    expect(r.ok).toBe(false);
    const reason = !r.ok ? r.reason : "";
    expect(reason).toContain(`${release} was not built`);
    expect(reason).toContain("install script did not run");
    expect(reason).toContain(absent().missing);
    expect(reason).toContain(FIX);
  });
});

describe("loadBinary", () => {
  it("loads the chosen binary and keeps where it came from", () => {
    const addon = { features: () => ({}) };
    const r = loadBinary(
      { ok: true, path: prebuiltPath, origin: "prebuilt", from: "@minfer/x" },
      () => addon,
    );
    expect(r).toEqual({ ok: true, addon, path: prebuiltPath, origin: "prebuilt", from: "@minfer/x" });
  });

  it("turns a binary that does not load into a reason naming it, its origin and the fix", () => {
    const r = loadBinary({ ok: true, path: prebuiltPath, origin: "prebuilt", from: "@minfer/x" }, () => {
      throw new Error("wrong ELF class: ELFCLASS32");
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(
      /minfer_cpu\.node \(prebuilt\) failed to load: wrong ELF class.*reinstall @minfer\/x/,
    );
  });

  it("passes a refusal through unchanged", () => {
    expect(loadBinary({ ok: false, reason: "none" }, () => ({}))).toEqual({ ok: false, reason: "none" });
  });
});
