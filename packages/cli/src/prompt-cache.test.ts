import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer } from "./test-helpers.js";
import { loadTokenizer } from "./text/load-tokenizer.js";

// `minfer run --prompt-cache FILE`: the prompt's state kept between runs. The file's header is
// llama.cpp's sequence-state header ("ggsq", version 3, the packed token list), read here by hand.

const stories = join(fixtures, "models/stories260K.gguf");
const other = join(fixtures, "models/llama-2-tiny-random.gguf");
const dir = mkdtempSync(join(tmpdir(), "minfer-prompt-cache-"));
const PROMPT = "Once upon a time there was a little girl named Lily. She loved to";

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The token list of a sequence-state file, read from llama.cpp's header layout. */
function headerTokens(file: string): number[] {
  const b = readFileSync(file);
  expect(b.readUInt32LE(0)).toBe(0x67677371); // "ggsq"
  expect(b.readUInt32LE(4)).toBe(3);
  const words = b.readUInt32LE(8);
  expect(b.readUInt32LE(12)).toBe(0xffffffff); // packed: the null token, version 1, the count
  expect(b.readUInt32LE(16)).toBe(1);
  const n = b.readUInt32LE(20);
  expect(n).toBe(words - 3);
  return Array.from({ length: n }, (_, i) => b.readUInt32LE(24 + 4 * i));
}

const run = (...args: string[]) => minfer("run", "-m", stories, "--temp", "0", "-n", "12", ...args);

describe("minfer run --prompt-cache", () => {
  it("writes the prompt's state, then reuses it: the same text, the prompt's start not evaluated again", async () => {
    const { tokenizer } = await loadTokenizer(stories);
    const ids = tokenizer.encode(PROMPT, { addSpecial: true, parseSpecial: true });
    const file = join(dir, "a.bin");
    const plain = await run("-p", PROMPT);
    expect(plain.code, plain.stderr).toBe(0);

    const first = await run("-p", PROMPT, "--prompt-cache", file);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(plain.stdout);
    expect(first.stderr).toContain(`prompt cache: ${file} does not exist yet`);
    expect(headerTokens(file)).toEqual(ids);

    const again = await run("-p", PROMPT, "--prompt-cache", file);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(plain.stdout);
    expect(again.stderr).toContain(
      `holds ${ids.length} tokens; ${ids.length - 1} of the prompt's ${ids.length} reused`,
    );
    // (one token evaluated: the prompt's last, whose logits start generation)
    expect(again.stderr).toMatch(/prompt eval 1 tokens/);

    // A longer prompt that starts the same: the cached part is reused, the text is a plain run's.
    const longer = `${PROMPT} play with her`;
    const longIds = tokenizer.encode(longer, { addSpecial: true, parseSpecial: true });
    let k = 0;
    while (ids[k] === longIds[k]) k++;
    const plainLong = await run("-p", longer);
    const cachedLong = await run("-p", longer, "--prompt-cache", file);
    expect(cachedLong.code, cachedLong.stderr).toBe(0);
    expect(cachedLong.stdout).toBe(plainLong.stdout);
    expect(cachedLong.stderr).toContain(`${k} of the prompt's ${longIds.length} reused`);
    expect(cachedLong.stderr).toMatch(new RegExp(`prompt eval ${longIds.length - k} tokens`));
    expect(headerTokens(file)).toEqual(longIds); // rewritten with the new prompt
  });

  it("--prompt-cache-all keeps the generated tokens too; --prompt-cache-ro never writes", async () => {
    const file = join(dir, "all.bin");
    const r = await run("-p", PROMPT, "--prompt-cache", file, "--prompt-cache-all", "--ids");
    expect(r.code, r.stderr).toBe(0);
    const generated = JSON.parse(r.stdout) as number[];
    const { tokenizer } = await loadTokenizer(stories);
    const ids = tokenizer.encode(PROMPT, { addSpecial: true, parseSpecial: true });
    // (the last drawn token is never evaluated, so it is not in the state)
    expect(headerTokens(file)).toEqual([...ids, ...generated.slice(0, -1)]);

    const before = readFileSync(file);
    const ro = await run("-p", "A different prompt", "--prompt-cache", file, "--prompt-cache-ro");
    expect(ro.code, ro.stderr).toBe(0);
    expect(readFileSync(file).equals(before)).toBe(true);
    const missing = await run("-p", PROMPT, "--prompt-cache", join(dir, "none.bin"), "--prompt-cache-ro");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/none\.bin does not exist/);
  });

  it("refuses a file that is not a prompt cache, or is another model's, naming it", async () => {
    const junk = join(dir, "junk.bin");
    writeFileSync(junk, "not a cache at all");
    const r1 = await run("-p", PROMPT, "--prompt-cache", junk);
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(/\[INVALID_ARGUMENT\]: --prompt-cache .*junk\.bin: not a sequence-state file/);
    expect(r1.stderr).not.toMatch(/^\s+at /m);

    const theirs = join(dir, "theirs.bin");
    const w = await minfer(
      "run",
      "-m",
      other,
      "--temp",
      "0",
      "-n",
      "2",
      "-p",
      PROMPT,
      "--prompt-cache",
      theirs,
    );
    expect(w.code, w.stderr).toBe(0);
    const r2 = await run("-p", PROMPT, "--prompt-cache", theirs);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/theirs\.bin: restoreSequence: the state is of a different model/);

    // A file cut short: its token list runs past its end.
    const cut = join(dir, "cut.bin");
    writeFileSync(cut, readFileSync(join(dir, "a.bin")).subarray(0, 30));
    const r3 = await run("-p", PROMPT, "--prompt-cache", cut);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(/cut\.bin: the token list of \d+ words runs past/);
  });

  it("--prompt-cache-all and --prompt-cache-ro need --prompt-cache, and not both", async () => {
    const r = await run("-p", PROMPT, "--prompt-cache-ro");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/need --prompt-cache FILE/);
    const both = await run(
      "-p",
      PROMPT,
      "--prompt-cache",
      join(dir, "x.bin"),
      "--prompt-cache-all",
      "--prompt-cache-ro",
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give one of/);
  });
});
