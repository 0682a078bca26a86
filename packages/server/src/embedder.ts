import { Context, type Embedding, type EmbedInput, embed, type Model, type Pooling } from "@minfer/engine";
import { ApiError } from "./errors.js";

/** Options of an {@link Embedder}. */
export interface EmbedderOptions {
  readonly pooling?: Pooling;
  /** Tokens one decode holds (llama-server's -ub / -b): an input must fit it. */
  readonly nUbatch: number;
  /** Sequences one decode holds. */
  readonly nSeqMax: number;
  readonly nCtx?: number;
  /** Requests that may wait; beyond, 503. */
  readonly queueSize: number;
}

interface Pending {
  readonly inputs: EmbedInput[];
  readonly normalize: number;
  readonly resolve: (e: Embedding[]) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * The server's embedding engine (`--embedding`): one context computing embeddings, requests
 * served in arrival order, and the inputs of the requests waiting when the context frees up
 * decoded together (as many as fit one decode), so many small requests share decode calls.
 */
export class Embedder {
  readonly context: Context;
  readonly #queue: Pending[] = [];
  readonly #queueSize: number;
  #running = false;
  #closed = false;

  constructor(model: Model, o: EmbedderOptions) {
    // (nCtx: room for one decode of nSeqMax whole inputs)
    this.context = new Context(model, {
      embeddings: true,
      ...(o.pooling ? { pooling: o.pooling } : {}),
      nUbatch: o.nUbatch,
      nSeqMax: o.nSeqMax,
      nCtx: o.nCtx ?? Math.max(o.nUbatch, 256),
    });
    this.#queueSize = o.queueSize;
  }

  get pooling(): Pooling {
    return this.context.pooling!;
  }

  /** Tokens one input may have. */
  get maxTokens(): number {
    return this.context.nUbatch;
  }

  /** The embeddings of `inputs`, normalised as `normalize` says (see the engine's `embed`). */
  run(inputs: EmbedInput[], normalize: number): Promise<Embedding[]> {
    if (this.#closed)
      return Promise.reject(
        new ApiError(503, "the server is shutting down", "unavailable_error", null, "shutting_down"),
      );
    if (this.#queue.length >= this.#queueSize)
      return Promise.reject(
        new ApiError(
          503,
          "the server is busy: too many embedding requests wait",
          "unavailable_error",
          null,
          "queue_full",
          {
            "retry-after": "1",
          },
        ),
      );
    return new Promise((resolve, reject) => {
      this.#queue.push({ inputs, normalize, resolve, reject });
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        // The waiting requests with the same normalisation, up to one decode's sequences of work.
        const first = this.#queue[0]!;
        const group: Pending[] = [];
        let count = 0;
        while (
          this.#queue.length > 0 &&
          this.#queue[0]!.normalize === first.normalize &&
          (group.length === 0 || count + this.#queue[0]!.inputs.length <= 4 * this.context.nSeqMax)
        ) {
          const p = this.#queue.shift()!;
          group.push(p);
          count += p.inputs.length;
        }
        try {
          const all = await embed(
            this.context,
            group.flatMap((p) => p.inputs),
            { normalize: first.normalize, addSpecial: false },
          );
          let at = 0;
          for (const p of group) {
            p.resolve(all.slice(at, at + p.inputs.length));
            at += p.inputs.length;
          }
        } catch (e) {
          for (const p of group) p.reject(e);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** Refuses new requests and fails the waiting ones; the running decode finishes. */
  close(): void {
    this.#closed = true;
    for (const p of this.#queue.splice(0))
      p.reject(new ApiError(503, "the server is shutting down", "unavailable_error", null, "shutting_down"));
  }

  dispose(): void {
    this.close();
    this.context.dispose();
  }
}
