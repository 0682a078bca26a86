import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readSequenceFile, writeSequenceFile } from "@minfer/engine";
import type { FastifyInstance } from "fastify";
import { ApiError, invalidField } from "./errors.js";
import { quote } from "./quote.js";
import { ServerError } from "./server-error.js";
import type { ServerState } from "./state.js";

const bad = invalidField;

/** A slot file's name: one file in the save directory (no separators, no dot first, no controls). */
function fileName(body: unknown): string {
  const f = (body as { filename?: unknown } | null)?.filename;
  if (typeof f !== "string" || f === "")
    throw bad("filename", "must be the name of a file in --slot-save-path");
  if (Buffer.byteLength(f) > 255) throw bad("filename", "must be at most 255 bytes");
  if (/[/\\\u0000-\u001f\u007f]/.test(f) || f.startsWith("."))
    throw bad(
      "filename",
      `${quote(f)} must be a plain file name: no path separators, no dot first, no control characters`,
    );
  return f;
}

/**
 * llama-server's slot actions, `POST /slots/{id}?action=save|restore|erase`: a slot's cached
 * tokens and K/V rows written to a file in the save directory (`@minfer/engine`'s sequence-file.ts), read back into a slot
 * (which then reuses them as a cached prompt prefix), or dropped. The slot must be idle.
 */
export function registerSlotRoutes(app: FastifyInstance, s: ServerState): void {
  app.post<{ Params: { id: string }; Querystring: { action?: string } }>("/slots/:id", async (request) => {
    const action = request.query.action;
    if (action !== "save" && action !== "restore" && action !== "erase")
      throw bad("action", `must be save, restore or erase, got ${quote(action ?? null)}`);
    const b = s.batcher;
    const id = /^\d{1,6}$/.test(request.params.id) ? Number(request.params.id) : -1;
    if (id < 0 || id >= b.parallel)
      throw new ApiError(
        404,
        `slot ${quote(request.params.id)} does not exist; the slots are 0 to ${b.parallel - 1}`,
        "invalid_request_error",
        "id_slot",
        "slot_not_found",
      );
    const ctx = b.context;
    const run = async <T>(fn: (seq: number) => Promise<T>): Promise<T> => {
      try {
        return await b.withSlot(id, fn);
      } catch (e) {
        if (e instanceof ServerError && e.code === "SLOT_BUSY")
          throw new ApiError(
            409,
            `slot ${id} is running a request or another action; try again`,
            "invalid_request_error",
            "id_slot",
            "slot_busy",
          );
        throw e;
      }
    };
    if (action === "erase")
      return run(async (seq) => {
        const n = ctx.history(seq)?.length ?? 0;
        ctx.seqRm(seq, 0, -1);
        return { id_slot: id, n_erased: n };
      });
    const dir = s.slotSavePath;
    if (dir === undefined)
      throw new ApiError(
        501,
        "slot files are off; start the server with --slot-save-path DIR (createServer({ slotSavePath }))",
        "not_supported_error",
        null,
        "slot_save_disabled",
      );
    const name = fileName(request.body);
    const path = join(dir, name);
    if (action === "save")
      return run(async (seq) => {
        const t0 = performance.now();
        const tokens = [...(ctx.history(seq) ?? [])];
        if (tokens.length === 0) throw bad("id_slot", `slot ${id} holds no tokens to save`);
        const bytes = writeSequenceFile(tokens, await ctx.saveSequence(seq));
        await writeFile(path, bytes);
        return {
          id_slot: id,
          filename: name,
          n_saved: tokens.length,
          n_written: bytes.length,
          timings: { save_ms: performance.now() - t0 },
        };
      });
    let file: { tokens: number[]; state: Uint8Array };
    let size: number;
    try {
      const bytes = new Uint8Array(await readFile(path));
      size = bytes.length;
      file = readSequenceFile(bytes);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw bad(
        "filename",
        err.code === "ENOENT"
          ? `${quote(name)} does not exist in the save directory`
          : `${quote(name)}: ${err.message}`,
      );
    }
    if (file.tokens.length >= b.ctxPerSlot)
      throw bad(
        "filename",
        `${quote(name)} holds ${file.tokens.length} tokens; a slot's context is ${b.ctxPerSlot}`,
      );
    return run(async (seq) => {
      const t0 = performance.now();
      ctx.seqRm(seq, 0, -1);
      try {
        await ctx.restoreSequence(file.state, seq);
      } catch (e) {
        ctx.seqRm(seq, 0, -1);
        throw bad("filename", `${quote(name)} cannot be restored here: ${(e as Error).message}`);
      }
      const held = ctx.history(seq) ?? [];
      if (held.length !== file.tokens.length || held.some((t, i) => t !== file.tokens[i])) {
        ctx.seqRm(seq, 0, -1);
        throw bad("filename", `${quote(name)}: its token list does not match the state it holds`);
      }
      return {
        id_slot: id,
        filename: name,
        n_restored: file.tokens.length,
        n_read: size,
        timings: { restore_ms: performance.now() - t0 },
      };
    });
  });
}
