// `minfer run` on crafted hostile models (issue 30): a coded refusal in bounded time and memory.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GgufKV, GgufValueType, readGgufSync, writeGguf } from "@minfer/gguf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer } from "./test-helpers.js";

const stories = join(fixtures, "models/stories260K.gguf");
let dir: string;

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
  if (!existsSync(stories)) throw new Error(`the fixture ${stories} is missing (set MINFER_FIXTURES)`);
  dir = mkdtempSync(join(tmpdir(), "minfer-hostile-"));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** stories260K with `kv` replacing (or added to) its metadata, written to a temporary file. */
async function storiesWith(name: string, kv: GgufKV): Promise<string> {
  const f = readGgufSync(stories);
  const bytes = new Uint8Array(readFileSync(stories));
  const base = f.parts[0]!.dataOffset;
  const kvs = [...f.metadata.entries()].filter((x) => x.key !== kv.key);
  const tensors = f.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    dims: t.dims,
    data: bytes.subarray(base + t.offset, base + t.offset + t.byteSize),
  }));
  const path = join(dir, `${name}.gguf`);
  await writeGguf(path, [...kvs, kv], tensors);
  return path;
}

/** Runs `minfer run` on a file: the result and its wall time in ms. */
async function timedRun(path: string) {
  const t0 = performance.now();
  const r = await minfer("run", "-m", path, "-p", "The jury said", "-n", "4", "-t", "1");
  return { ...r, ms: performance.now() - t0 };
}

describe("minfer run refuses a hostile model at once, with a code", () => {
  it.each([2 ** 31, 2 ** 32 - 1])(
    "llama.block_count %d: MISSING_TENSOR naming the first absent block's tensor",
    async (n) => {
      const path = await storiesWith(`blocks-${n}`, {
        key: "llama.block_count",
        type: GgufValueType.UINT32,
        value: n,
      });
      const r = await timedRun(path);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `minfer: error [MISSING_TENSOR]: tensor "blk.5.attn_norm.weight" is missing from the model file: llama.block_count is ${n} but the file has tensors for 5 blocks`,
      );
      expect(r.stderr).not.toMatch(/heap out of memory|^\s+at /m);
      expect(r.ms).toBeLessThan(10_000);
    },
  );

  it("a chat template nested 20000 levels deep: TEMPLATE_UNSUPPORTED, not a stack overflow", async () => {
    const path = await storiesWith("deep-template", {
      key: "tokenizer.chat_template",
      type: GgufValueType.STRING,
      value: `{{ 1${" + 1".repeat(20000)} }}`,
    });
    const r = await timedRun(path);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /minfer: error \[TEMPLATE_UNSUPPORTED\]: chat template "default": the template nests/,
    );
    expect(r.stderr).not.toMatch(/internal error|RangeError/);
  });
});
