// Test-only (not exported): the shared fixtures and llama.cpp's tokenizer test vectors.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** ../shared/fixtures beside the repository, or MINFER_FIXTURES. */
export function fixturesDir(): string {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
  const dir = process.env.MINFER_FIXTURES ?? resolve(repo, "../shared/fixtures");
  if (!existsSync(dir)) throw new Error(`test fixtures not found at ${dir}; set MINFER_FIXTURES`);
  return dir;
}

/** Path of `vocab/ggml-vocab-NAME.gguf`. */
export function vocabPath(name: string): string {
  return join(fixturesDir(), "vocab", `ggml-vocab-${name}.gguf`);
}

/**
 * The cases of `ggml-vocab-NAME.gguf.inp/.out` (format of llama.cpp tests/test-tokenizer-0):
 * inputs separated by "\n__ggml_vocab_test__\n", one line of space-prefixed ids per input,
 * made with add_special = false and parse_special = false.
 */
export function testVectors(name: string): { text: string; ids: number[] }[] {
  const base = join(fixturesDir(), "vocab", `ggml-vocab-${name}.gguf`);
  const inputs = readFileSync(`${base}.inp`, "utf8").split("\n__ggml_vocab_test__\n");
  // The file ends with the separator's last line; drop the empty remainder.
  if (inputs.at(-1) === "" || inputs.at(-1) === "\n") inputs.pop();
  const outputs = readFileSync(`${base}.out`, "utf8").split("\n");
  if (outputs.at(-1) === "") outputs.pop();
  if (inputs.length !== outputs.length) {
    throw new Error(`${base}: ${inputs.length} inputs but ${outputs.length} outputs`);
  }
  return inputs.map((text, i) => ({
    text,
    ids: outputs[i]!.trim() === "" ? [] : outputs[i]!.trim().split(/\s+/).map(Number),
  }));
}
