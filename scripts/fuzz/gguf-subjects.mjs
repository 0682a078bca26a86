/** The GGUFs the loader fuzzers mutate: the fixtures and two synthetic BPE models, as metadata + tensors. */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { GgufMetadata, readGgufSync, synthesizeModel } from "../../packages/gguf/dist/index.js";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
/** Where the fixtures are: MINFER_FIXTURES, else ../shared/fixtures beside the repository. */
export const FIXTURES = process.env.MINFER_FIXTURES ?? resolve(REPO, "../shared/fixtures");
/** The built-in model (a qwen3 with a byte-level BPE vocabulary and a chat template). */
export const BUILTIN = resolve(REPO, "packages/cli/models/minfer-default-7m-f16.gguf");

/** A file as { name, kvs, tensors: [{ name, type, dims, data }] }. */
export function fileSubject(name, path) {
  const f = readGgufSync(path);
  const bytes = new Uint8Array(readFileSync(path));
  const base = f.parts[0].dataOffset;
  const tensors = f.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    dims: [...t.dims],
    data: bytes.subarray(base + t.offset, base + t.offset + t.byteSize),
  }));
  return { name, kvs: [...f.metadata.entries()], tensors };
}

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A tiny synthetic model of `arch` with the built-in model's vocabulary (BPE merges, chat template). */
export function synthSubject(name, arch, type) {
  const vocab = new GgufMetadata([...readGgufSync(BUILTIN).metadata.entries()]);
  const m = synthesizeModel({ preset: "tiny", arch, type, vocab });
  const tensors = m.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    dims: [...t.dims],
    data: concat([...t.data()]),
  }));
  return { name, kvs: m.metadata, tensors };
}

/** Every subject; a missing fixture is an error (a fuzzer that skips proves nothing). */
export function loadSubjects() {
  for (const p of ["models/stories260K.gguf", "models/llama-2-tiny-random.gguf"])
    if (!existsSync(resolve(FIXTURES, p)))
      throw new Error(`fixture ${p} is not under ${FIXTURES} (set MINFER_FIXTURES)`);
  if (!existsSync(BUILTIN)) throw new Error(`the built-in model ${BUILTIN} is missing`);
  return [
    fileSubject("stories260K", resolve(FIXTURES, "models/stories260K.gguf")),
    fileSubject("llama-2-tiny-random", resolve(FIXTURES, "models/llama-2-tiny-random.gguf")),
    synthSubject("qwen3-tiny-bpe-f16", "qwen3", "f16"),
    synthSubject("qwen2-tiny-bpe-q8_0", "qwen2", "q8_0"),
  ];
}
