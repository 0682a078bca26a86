/** Test-only helpers (not exported): the shared fixtures and the real vocabularies. */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readGgufSync } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { Grammar } from "./grammar.js";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

/** The shared fixtures (../shared/fixtures beside the repository, or MINFER_FIXTURES). */
export function fixturesDir(): string {
  const dir = process.env.MINFER_FIXTURES ?? resolve(repo, "../shared/fixtures");
  if (!existsSync(dir)) throw new Error(`test fixtures not found at ${dir}; set MINFER_FIXTURES`);
  return dir;
}

/** The text of fixtures/grammars/`name`.gbnf. */
export function grammarText(name: string): string {
  return readFileSync(join(fixturesDir(), "grammars", `${name}.gbnf`), "utf8");
}

/** fixtures/grammars/`name`.gbnf, parsed. */
export function fixtureGrammar(name: string): Grammar {
  return Grammar.parse(grammarText(name));
}

const tokenizers = new Map<string, Tokenizer>();

/** The tokenizer of fixtures/vocab/ggml-vocab-`name`.gguf (loaded once). */
export function vocab(name: string): Tokenizer {
  let t = tokenizers.get(name);
  if (!t) {
    t = Tokenizer.fromMetadata(
      readGgufSync(join(fixturesDir(), "vocab", `ggml-vocab-${name}.gguf`)).metadata,
    );
    tokenizers.set(name, t);
  }
  return t;
}
