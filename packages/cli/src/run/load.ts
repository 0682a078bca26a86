import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { Context, type ContextOptions, Model } from "@minfer/engine";
import { readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { CliError } from "../errors.js";
import { resolveModelPath } from "../hub/commands.js";
import { ProgressBar } from "../progress.js";
import { backends, hostDevice } from "./backends.js";
import { chooseGpu } from "./gpu.js";
import type { RunSettings } from "./options.js";

/** The CPU runtime's own fields the CLI reports (threads and SIMD level). */
export interface HostRuntime extends DeviceRuntime {
  readonly threads: number;
  readonly simd: string;
}

/** A started CPU runtime (and GPU runtime, with layers offloaded) and a model loaded on them; `close()` releases all. */
export interface Loaded {
  readonly runtime: HostRuntime;
  readonly gpu: DeviceRuntime | undefined;
  readonly model: Model;
  close(): void;
}

const mib = (n: number) => `${(n / 1048576).toFixed(2)} MiB`;

/** Parameters and bytes of the model's weights. */
export function modelSize(model: Model): { params: number; bytes: number } {
  let params = 0;
  let bytes = 0;
  for (const t of model.file.tensors) {
    params += t.nElements;
    bytes += t.byteSize;
  }
  return { params, bytes };
}

/** The weights' types, most bytes first, e.g. "F32" or "Q8_0+F32". */
export function weightTypes(model: Model): string {
  const by = new Map<string, number>();
  for (const t of model.file.tensors) by.set(t.typeName, (by.get(t.typeName) ?? 0) + t.byteSize);
  return [...by.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([name]) => name)
    .join("+");
}

/** 292.42K, 494.03M, 7.62B. */
export function humanCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(2)}K`;
  return String(n);
}

/**
 * Finds the backends (the registry), starts the CPU and the offload device -ngl / --device ask
 * for, and loads the model at `path`; progress goes to stderr, and with `verbose` what the
 * registry found and the model's hyperparameters too.
 */
export async function loadModel(ref: string, settings: RunSettings, verbose: boolean): Promise<Loaded> {
  const path = await resolveModelPath(ref);
  try {
    await access(path, constants.R_OK);
  } catch (e) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `-m: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  const registry = await backends();
  if (verbose)
    for (const d of registry.diagnostics().values()) {
      process.stderr.write(`${d.package}: ${d.reason}\n`);
      for (const line of d.details) process.stderr.write(`${line}\n`);
    }
  const device = hostDevice(registry);
  const file = await readGguf(path);
  const gpu = await chooseGpu(file, settings, registry, device);
  const runtime = (await device.init(
    settings.threads !== undefined ? { threads: settings.threads } : {},
  )) as HostRuntime;
  let model: Model;
  const bar = new ProgressBar("loading", 1);
  try {
    model = await Model.load(path, {
      runtime,
      file,
      ...(gpu.runtime ? { offload: { runtime: gpu.runtime, layers: gpu.layers } } : {}),
      onProgress: (f) => bar.update(f),
    });
  } catch (e) {
    runtime.dispose();
    gpu.runtime?.dispose();
    throw e;
  }
  const { params, bytes } = modelSize(model);
  bar.done(
    `loaded ${path}: ${model.hparams.arch}, ${humanCount(params)} params, ${mib(bytes)} ${weightTypes(model)}, ` +
      `cpu ${runtime.threads} threads (${runtime.simd})`,
  );
  process.stderr.write(
    `devices: ${model.placement.describe()}${gpu.runtime ? ` (${gpu.note})` : ` — ${gpu.note}`}\n`,
  );
  for (const line of describeWeightsKept(model)) process.stderr.write(`${line}\n`);
  if (verbose) {
    const hp = model.hparams;
    process.stderr.write(
      `model: ${hp.arch}, ${hp.nLayer} layers, embd ${hp.nEmbd}, ff ${hp.nFf}, heads ${hp.nHead} (kv ${hp.nHeadKv}), ` +
        `head dim ${hp.headDimK}, vocab ${hp.nVocab}, trained context ${hp.nCtxTrain}, rope base ${hp.ropeFreqBase}` +
        `${hp.ropeScaling.type !== "none" ? `, rope scaling ${hp.ropeScaling.type} ×${hp.ropeScaling.factor}` : ""}` +
        `, chat template: ${model.chatTemplate ? "yes" : "none"}\n`,
    );
  }
  return {
    runtime,
    gpu: gpu.runtime,
    model,
    close() {
      model.dispose();
      runtime.dispose();
      gpu.runtime?.dispose();
    },
  };
}

/**
 * A warning line per reason for the weights of offloaded layers that stayed on the main device
 * because the offload device cannot run their products (never silent).
 */
export function describeWeightsKept(model: Model): string[] {
  const byReason = new Map<string, string[]>();
  for (const k of model.weightsKept) byReason.set(k.reason, [...(byReason.get(k.reason) ?? []), k.name]);
  return [...byReason].map(
    ([reason, names]) =>
      `warning: ${names.length} weight(s) stay on ${model.runtime.device.name} and their products run there: ${reason} ` +
      `(${names.slice(0, 3).join(", ")}${names.length > 3 ? ", …" : ""})`,
  );
}

/** A context with the settings (-c 0 = the model's training context); `extra` overrides. */
export function newContext(model: Model, settings: RunSettings, extra: ContextOptions = {}): Context {
  const ctx = new Context(model, {
    // Every command uses a step's logits before the next step: one buffer, read into in place.
    reuseLogits: true,
    // 0 (the model's training context) and the default are resolved by the Context.
    ...(settings.nCtx !== undefined ? { nCtx: settings.nCtx } : {}),
    ...(settings.nUbatch !== undefined ? { nUbatch: settings.nUbatch } : {}),
    ...(settings.kvDtype !== undefined ? { kvDtype: settings.kvDtype } : {}),
    ...extra,
  });
  for (const line of describeAssignment(ctx, false)) process.stderr.write(`${line}\n`);
  return ctx;
}

/** One line of the context's shape, for --verbose. */
export function describeContext(ctx: Context): string {
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  const caches = ctx
    .stats()
    .caches.map(
      (c) =>
        `${c.group === "swa" ? `sliding-window (${c.window} positions)` : "full-attention"} ${c.layers} layers × ${c.cells} cells ${mib(c.bytes)} MiB`,
    );
  return `context: ${ctx.nCtx} tokens, micro-batch ${ctx.nUbatch}, KV ${ctx.kvDtype}: ${caches.join("; ")}`;
}

/**
 * The one-token decode graph's device assignment: a line per split, and a warning line for each
 * node that runs away from its layer's device because that device lacks the op (never silent).
 */
export function describeAssignment(ctx: Context, verbose: boolean): string[] {
  // The graph a one-sequence decode step uses (spans over the whole cache), prepared once here.
  const a = ctx.assignment();
  const lines: string[] = [];
  if (verbose)
    lines.push(
      `decode graph: ${a.splits.length} split(s): ${a.splits.map((s) => `${s.device.name} ×${s.nodes.length}`).join(", ")}`,
    );
  for (const p of a.placements)
    if (/lack|does not support/.test(p.reason))
      lines.push(`warning: ${p.node.name} runs on ${p.device.name}: ${p.reason}`);
  return lines;
}
