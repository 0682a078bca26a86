// `minfer run --prompt-cache FILE` (llama-cli's flags of that name): the prompt's K/V state kept in
// a file between runs, so that a run whose prompt starts as the cached one's does not evaluate that
// part again. The file is a sequence-state file (`@minfer/engine`'s sequence-file.ts: llama.cpp's
// "ggsq" header and token list, then minfer's checksummed state), the format the server's slot
// save/restore writes.

import { readFile, rename, writeFile } from "node:fs/promises";
import { type Context, EngineError, readSequenceFile, writeSequenceFile } from "@minfer/engine";
import type { OptionSpec } from "../args.js";
import { CliError } from "../errors.js";

export const promptCacheOptions: OptionSpec[] = [
  {
    flags: ["--prompt-cache"],
    kind: "string",
    metavar: "FILE",
    help: "keep the prompt's state in FILE: read first (the prompt's matching start is not evaluated again), written once the prompt is evaluated",
  },
  {
    flags: ["--prompt-cache-all"],
    kind: "boolean",
    help: "with --prompt-cache: save the generated tokens too, at the end",
  },
  {
    flags: ["--prompt-cache-ro"],
    kind: "boolean",
    help: "with --prompt-cache: read FILE but never write it",
  },
];

type Mode = "prompt" | "all" | "read-only";

/** A run's prompt cache: what FILE held (restored into sequence 0), and its saves. */
export class PromptCache {
  #saved = false;

  private constructor(
    readonly file: string,
    private readonly ctx: Context,
    /** The tokens FILE held; empty when it did not exist. */
    readonly tokens: readonly number[],
    private readonly existed: boolean,
    private readonly mode: Mode,
  ) {}

  /**
   * The cache the options ask for (undefined without --prompt-cache): FILE read and its state
   * restored into the context's sequence 0 when it exists. A file that is not a sequence-state
   * file, or holds another model's state, is an error naming it, never ignored.
   */
  static async open(options: Record<string, unknown>, ctx: Context): Promise<PromptCache | undefined> {
    const file = options.promptCache as string | undefined;
    const all = Boolean(options.promptCacheAll);
    const ro = Boolean(options.promptCacheRo);
    if (file === undefined) {
      if (all || ro)
        throw new CliError(
          "MISSING_ARGUMENT",
          "--prompt-cache-all and --prompt-cache-ro need --prompt-cache FILE",
        );
      return undefined;
    }
    if (all && ro)
      throw new CliError("INVALID_ARGUMENT", "give one of --prompt-cache-all and --prompt-cache-ro");
    const mode: Mode = all ? "all" : ro ? "read-only" : "prompt";
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(file));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      if (ro)
        throw new CliError(
          "INVALID_ARGUMENT",
          `--prompt-cache ${file} does not exist (--prompt-cache-ro only reads it)`,
        );
      return new PromptCache(file, ctx, [], false, mode);
    }
    const bad = (why: string) => new EngineError("INVALID_ARGUMENT", `--prompt-cache ${file}: ${why}`);
    let tokens: number[];
    try {
      const f = readSequenceFile(bytes);
      tokens = f.tokens;
      await ctx.restoreSequence(f.state, 0);
    } catch (e) {
      throw bad((e as Error).message);
    }
    // The header's token list is what other tools read; the state holds the tokens minfer uses.
    const held = ctx.history(0) ?? [];
    if (held.length !== tokens.length || held.some((t, i) => t !== tokens[i])) {
      ctx.seqRm(0, 0, -1);
      throw bad(`its token list (${tokens.length} tokens) is not the one its state holds (${held.length})`);
    }
    return new PromptCache(file, ctx, tokens, true, mode);
  }

  /** What the cache gives the prompt `ids`, for stderr. */
  describe(ids: readonly number[]): string {
    if (!this.existed)
      return `prompt cache: ${this.file} does not exist yet; ${this.mode === "read-only" ? "" : "it is written once the prompt is evaluated"}`;
    let k = 0;
    while (k < this.tokens.length && k < ids.length && this.tokens[k] === ids[k]) k++;
    // (a whole match still evaluates the prompt's last token: its logits start generation)
    const reused = Math.min(k, ids.length - 1);
    return `prompt cache: ${this.file} holds ${this.tokens.length} tokens; ${reused} of the prompt's ${ids.length} reused`;
  }

  /** After the prompt is evaluated: writes its state (unless read-only, or saved already). */
  async savePrompt(): Promise<void> {
    if (this.mode === "read-only" || this.#saved) return;
    await this.#write();
    this.#saved = true;
  }

  /** At the end: with --prompt-cache-all the generated tokens too; else the prompt if not saved yet. */
  async saveAll(): Promise<void> {
    if (this.mode === "all") await this.#write();
    else await this.savePrompt();
  }

  async #write(): Promise<void> {
    const tokens = this.ctx.history(0) ?? [];
    if (tokens.length === 0) return;
    const bytes = writeSequenceFile(tokens, await this.ctx.saveSequence(0));
    // Written beside it, then renamed: a run stopped mid-write leaves the old file whole.
    const tmp = `${this.file}.tmp-${process.pid}`;
    await writeFile(tmp, bytes);
    await rename(tmp, this.file);
  }
}
