import type { Model } from "@minfer/engine";
import type { ChatTemplate } from "@minfer/tokenizer";
import type { Batcher } from "./batcher.js";
import type { Embedder } from "./embedder.js";
import type { ServerLimits } from "./limits.js";
import type { ServerMetrics } from "./metrics.js";
import type { TemplateRenderer } from "./render.js";
import type { ServerSampling } from "./server.js";

/** What the routes read of a server: its model and batcher once loaded, and its settings. */
export type ServerState = {
  readonly model: Model;
  readonly batcher: Batcher;
  /** An embeddings server's embedder (ServerOptions.embeddings), else undefined. */
  readonly embedder: Embedder | undefined;
  readonly modelId: string;
  readonly loaded: boolean;
  readonly loadError: unknown;
  template(): ChatTemplate | undefined;
  readonly timeoutMs: number | undefined;
  readonly metrics: ServerMetrics | undefined;
  /** ServerOptions.slots: whether GET /slots answers. */
  readonly slotsEndpoint: boolean;
  readonly limits: ServerLimits;
  readonly renderer: TemplateRenderer;
  /** ServerOptions.strictApi. */
  readonly strictApi: boolean;
  /** ServerOptions.sampling (checked) and nPredict. */
  readonly sampling: ServerSampling;
  readonly nPredict: number | undefined;
  /** ServerOptions.verbose, aliases and tags. */
  readonly verbose: boolean;
  /** ServerOptions.templateKwargs (checked). */
  readonly templateKwargs: Readonly<Record<string, unknown>>;
  /** ServerOptions.contextShift. */
  readonly contextShift: boolean;
  /** ServerOptions.slotSavePath. */
  readonly slotSavePath: string | undefined;
  readonly aliases: readonly string[];
  readonly tags: readonly string[];
};
