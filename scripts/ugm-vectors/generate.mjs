#!/usr/bin/env node
// Regenerates packages/tokenizer/src/ugm-vectors.golden.json: llama.cpp's token ids and detokenized
// text for every input of packages/tokenizer/src/ugm-fixture.ts, with each Unigram vocabulary
// that file builds (written as a vocabulary-only GGUF by @minfer/gguf, byte for byte what
// ugm.test.ts builds; the file's SHA-256 is stored with the vectors).
//
// Needs a llama.cpp source tree and a CPU build of it (`cmake -B build && cmake --build build`):
//   node scripts/ugm-vectors/generate.mjs [LLAMA_SRC] [LLAMA_BUILD]   (default: /tmp/lsrc /tmp/lbuild)
// (and the built @minfer/gguf, and g++). The ids come from llama-probe.cpp (beside this script,
// compiled against the build's libllama) and are checked against the llama-tokenize tool for
// the setting it uses.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "tsup";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const llamaSrc = resolve(process.argv[2] ?? "/tmp/lsrc");
const llamaBuild = resolve(process.argv[3] ?? "/tmp/lbuild");
const bin = join(llamaBuild, "bin");
const out = join(root, "packages/tokenizer/src/ugm-vectors.golden.json");

for (const need of [join(llamaSrc, "include/llama.h"), join(bin, "llama-tokenize")]) {
  if (!existsSync(need)) {
    console.error(`generate: ${need} is missing; pass the llama.cpp source and build folders`);
    process.exit(1);
  }
}
const libDir = [bin, join(llamaBuild, "src"), join(llamaBuild, "lib")].find(
  (d) => existsSync(d) && readdirSync(d).some((f) => f.startsWith("libllama.")),
);
if (!libDir) {
  console.error(`generate: no libllama under ${llamaBuild}`);
  process.exit(1);
}

const work = mkdtempSync(join(tmpdir(), "ugm-vectors-"));
try {
  // The fixture module is TypeScript: bundle it (with what it imports) to run it here.
  await build({
    entry: { fixture: join(root, "packages/tokenizer/src/ugm-fixture.ts") },
    outDir: join(work, "js"),
    format: ["esm"],
    target: "node20",
    platform: "node",
    bundle: true,
    noExternal: [/.*/],
    silent: true,
    dts: false,
  });
  const { UGM_VOCABS, ugmFixture, ugmInputs } = await import(pathToFileURL(join(work, "js/fixture.js")).href);
  const { encodeGguf } = await import(pathToFileURL(join(root, "packages/gguf/dist/index.js")).href);

  const probe = join(work, "llama-probe");
  execFileSync("g++", [
    "-std=c++17",
    "-O1",
    join(here, "llama-probe.cpp"),
    `-I${join(llamaSrc, "include")}`,
    `-I${join(llamaSrc, "ggml/include")}`,
    `-L${libDir}`,
    "-lllama",
    `-Wl,-rpath,${libDir}`,
    "-o",
    probe,
  ]);
  const version = spawnSync(join(bin, "llama-tokenize"), ["--version"], { encoding: "utf8" });
  const llamaVersion = `${version.stdout}${version.stderr}`.match(/version: .*/)?.[0] ?? "unknown";

  const inputs = ugmInputs();
  const utf8 = new TextEncoder();
  const packed = inputs.map((s) => {
    const b = utf8.encode(s);
    const rec = new Uint8Array(4 + b.length);
    new DataView(rec.buffer).setUint32(0, b.length, true);
    rec.set(b, 4);
    return rec;
  });
  const inputsBin = join(work, "inputs.bin");
  writeFileSync(inputsBin, Buffer.concat(packed));

  const fromHex = (h) => new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(h, "hex"));
  const vocabs = {};
  for (const name of UGM_VOCABS) {
    const bytes = encodeGguf(ugmFixture(name), []);
    const gguf = join(work, `${name}.gguf`);
    writeFileSync(gguf, bytes);
    const [first, ...lines] = execFileSync(probe, [gguf, inputsBin], { encoding: "utf8", maxBuffer: 1 << 28 })
      .split("\n")
      .filter((l) => l.length > 0);
    // Pieces as hex: a byte token's piece is one byte, not always UTF-8 by itself.
    const { pieces, piecesSpecial } = JSON.parse(first);
    if (lines.length !== inputs.length)
      throw new Error(`${name}: ${lines.length} results for ${inputs.length} inputs`);
    const cases = lines.map((line, i) => {
      const r = JSON.parse(line);
      const c = { input: inputs[i], ids: r.ids, idsSpecial: r.idsSpecial, decoded: fromHex(r.text) };
      if (JSON.stringify(r.idsParseSpecial) !== JSON.stringify(r.ids)) c.idsParseSpecial = r.idsParseSpecial;
      const decodedSpecial = fromHex(r.textSpecial);
      if (decodedSpecial !== c.decoded) c.decodedSpecial = decodedSpecial;
      return c;
    });
    // llama-tokenize adds special tokens only when the vocabulary adds a BOS; its ids must be
    // the probe's for that setting.
    const addsBos = ugmFixture(name).some(
      (kv) => kv.key === "tokenizer.ggml.add_bos_token" && kv.value === true,
    );
    const txt = join(work, "input.txt");
    cases.forEach((c, i) => {
      writeFileSync(txt, inputs[i]);
      const r = spawnSync(
        join(bin, "llama-tokenize"),
        ["-m", gguf, "-f", txt, "--ids", "--log-disable", "--no-escape", "--no-parse-special"],
        { encoding: "utf8" },
      );
      const want = JSON.stringify(addsBos ? c.idsSpecial : c.ids).replaceAll(",", ", ");
      if (r.status !== 0 || r.stdout.trim() !== want) {
        throw new Error(
          `${name} ${JSON.stringify(inputs[i])}: llama-tokenize says ${r.stdout.trim()} ${r.stderr.trim()}, the probe ${want}`,
        );
      }
    });
    vocabs[name] = { sha256: createHash("sha256").update(bytes).digest("hex"), pieces, piecesSpecial, cases };
    console.error(`generate: ${name}: ${cases.length} inputs`);
  }

  // One case per line, so a regenerated file diffs readably.
  const body = Object.entries(vocabs)
    .map(
      ([name, v]) =>
        `    ${JSON.stringify(name)}: {\n      "sha256": ${JSON.stringify(v.sha256)},\n      "pieces": ${JSON.stringify(v.pieces)},\n      "piecesSpecial": ${JSON.stringify(v.piecesSpecial)},\n      "cases": [\n${v.cases
          .map((c) => `        ${JSON.stringify(c)}`)
          .join(",\n")}\n      ]\n    }`,
    )
    .join(",\n");
  writeFileSync(
    out,
    `{\n  "generator": "scripts/ugm-vectors/generate.mjs",\n  "llamaCpp": ${JSON.stringify(llamaVersion)},\n  "vocabs": {\n${body}\n  }\n}\n`,
  );
  console.error(`generate: wrote ${out}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
