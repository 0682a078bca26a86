import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { replaceFile } from "../scripts/replace-file.mjs";

// build-native.mjs puts the new addon in place with replaceFile: a process that holds the old
// file (here an open descriptor; in a `minfer` run, the loaded addon's mapping) must keep reading
// the old bytes. copyFileSync over the old file rewrote it in place (the crash at exit it caused
// is described in replace-file.mjs).
describe("replaceFile", () => {
  const dir = mkdtempSync(join(tmpdir(), "minfer-replace-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves the file a process holds untouched and puts the new one at the path", () => {
    const dest = join(dir, "minfer_cuda.node");
    const src = join(dir, "new.node");
    writeFileSync(dest, "old build");
    writeFileSync(src, "new build");
    const held = openSync(dest, "r");
    try {
      replaceFile(src, dest);
      const seen = Buffer.alloc(64);
      const n = readSync(held, seen, 0, seen.length, 0);
      expect(seen.subarray(0, n).toString()).toBe("old build");
    } finally {
      closeSync(held);
    }
    expect(readFileSync(dest, "utf8")).toBe("new build");
    expect(readdirSync(dir).sort()).toEqual(["minfer_cuda.node", "new.node"]);
  });

  it("leaves no temporary file behind when the copy fails", () => {
    const dest = join(dir, "kept.node");
    writeFileSync(dest, "old build");
    expect(() => replaceFile(join(dir, "missing.node"), dest)).toThrow();
    expect(readFileSync(dest, "utf8")).toBe("old build");
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});
