import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fixturesDir } from "./fixtures-dir.js";
import { readGguf, readGgufSync, tensorDataChunks, writeGguf } from "./index.js";

const dir = fixturesDir();
const ggufs = ["models", "vocab"].flatMap((sub) =>
  readdirSync(join(dir, sub))
    .filter((f) => f.endsWith(".gguf"))
    .map((f) => `${sub}/${f}`),
);

/** The "Verification" table of PROVENANCE.md: what an independent reader found in each file. */
function provenanceTable(): Map<string, Record<string, string>> {
  const text = readFileSync(join(dir, "PROVENANCE.md"), "utf8");
  const start = text.indexOf("## Verification");
  const next = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, next < 0 ? undefined : next);
  const rows = section.split("\n").filter((l) => l.startsWith("| `"));
  const header = section
    .split("\n")
    .find((l) => l.startsWith("| file"))!
    .split("|")
    .map((c) => c.trim())
    .filter(Boolean);
  const table = new Map<string, Record<string, string>>();
  for (const row of rows) {
    const cells = row
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim().replace(/`/g, ""));
    table.set(cells[0]!, Object.fromEntries(header.map((h, i) => [h, cells[i]!])));
  }
  return table;
}

const tmp = mkdtempSync(join(tmpdir(), "minfer-gguf-fixtures-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("every GGUF under the shared fixtures", () => {
  const table = provenanceTable();

  it("finds the fixtures and the provenance table", () => {
    expect(ggufs.length).toBeGreaterThanOrEqual(15);
    expect(table.size).toBeGreaterThanOrEqual(14);
  });

  it.each(ggufs)("%s parses and matches PROVENANCE.md", (file) => {
    const g = readGgufSync(join(dir, file));
    expect(g.version).toBe(3);
    const row = table.get(file);
    const md = g.metadata;
    if (row) {
      expect(g.tensors.length).toBe(Number(row.tensors));
      expect(md.size).toBe(Number(row["metadata keys"]));
      expect(md.architecture).toBe(row["general.architecture"]);
      expect(md.string("tokenizer.ggml.model")).toBe(row["tokenizer.ggml.model"]);
      const pre = row["tokenizer.ggml.pre"];
      expect(md.optString("tokenizer.ggml.pre") ?? "(absent)").toBe(pre);
      expect(md.stringArray("tokenizer.ggml.tokens").length).toBe(Number(row.tokens));
      expect(md.optStringArray("tokenizer.ggml.merges")?.length ?? 0).toBe(Number(row.merges));
    } else {
      // Files added later (qwen2, qwen35, llama-bpe) are described in prose: byte-level BPE vocabularies.
      expect(md.string("tokenizer.ggml.model")).toBe("gpt2");
      expect(md.stringArray("tokenizer.ggml.tokens").length).toBeGreaterThan(100_000);
    }
  });

  it("reads the qwen2 vocabulary's 151,936 tokens", async () => {
    const g = await readGguf(join(dir, "vocab/ggml-vocab-qwen2.gguf"));
    expect(g.metadata.optString("tokenizer.ggml.pre")).toBe("qwen2");
    const tokens = g.metadata.stringArray("tokenizer.ggml.tokens");
    expect(tokens.length).toBe(151936);
    // Byte-level BPE renders a leading space as "Ġ" (U+0120): a two-byte UTF-8 sequence decoded right.
    expect(tokens).toContain("Ġthe");
  });

  it.each(ggufs)("%s: read → write → read is byte-identical", async (file) => {
    const path = join(dir, file);
    const g = await readGguf(path);
    const out = join(tmp, file.replace("/", "_"));
    await writeGguf(
      out,
      g.metadata.entries(),
      g.tensors.map((t) => ({
        name: t.name,
        type: t.type,
        dims: t.dims,
        data: () => tensorDataChunks(g, t, 4096),
      })),
      { version: g.version as 3 },
    );
    const a = readFileSync(path);
    const b = readFileSync(out);
    expect(b.length).toBe(a.length);
    expect(Buffer.compare(a, b)).toBe(0);
    const again = readGgufSync(out);
    expect(again.tensors.map((t) => [t.name, t.offset])).toEqual(g.tensors.map((t) => [t.name, t.offset]));
  });
});

describe("stories260K", () => {
  it("has the shapes its provenance describes", () => {
    const g = readGgufSync(join(dir, "models/stories260K.gguf"));
    const md = g.metadata;
    expect(md.archInteger("block_count")).toBe(5);
    expect(md.archInteger("embedding_length")).toBe(64);
    expect(md.archInteger("attention.head_count")).toBe(8);
    expect(md.archInteger("attention.head_count_kv")).toBe(4);
    expect(md.archInteger("feed_forward_length")).toBe(172);
    expect(md.archInteger("context_length")).toBe(2048);
    expect(g.tensors.every((t) => t.typeName === "F32")).toBe(true);
    expect(g.tensors.find((t) => t.name === "output.weight")?.dims).toEqual([64, 512]);
  });
});
