import {
  type Context,
  checkDraftVocabulary,
  type Drafter,
  Model,
  ModelDrafter,
  NgramDrafter,
  type SpeculativeOptions,
  type SpeculativeStats,
} from "@minfer/engine";
import { readGguf } from "@minfer/gguf";
import { architecture } from "@minfer/models";
import type { OptionSpec, ParsedOptions } from "../args.js";
import { CliError } from "../errors.js";
import { resolveModelPath } from "../hub/commands.js";
import { describeWeightsKept, humanCount, type Loaded, modelSize, weightTypes } from "./load.js";
import { check, parseGpuLayers } from "./options.js";

/** Speculative decoding, as llama.cpp spells it. */
export const speculativeOptions: OptionSpec[] = [
  {
    flags: ["-md", "--model-draft", "--spec-draft-model"],
    kind: "string",
    metavar: "FILE",
    help: "a draft model for speculative decoding (same vocabulary as -m)",
  },
  {
    flags: ["--spec-type"],
    kind: "string",
    metavar: "ngram|draft|none",
    help: "where drafts come from: draft (the -md model; the default with -md), ngram (look-up in the prompt and the text so far), none",
  },
  {
    flags: ["--draft-max", "--draft", "--draft-n", "--spec-draft-n-max"],
    kind: "integer",
    metavar: "N",
    help: "most tokens drafted for one verification (default: 16)",
  },
  {
    flags: ["--draft-min", "--draft-n-min", "--spec-draft-n-min"],
    kind: "integer",
    metavar: "N",
    help: "a shorter draft is not verified (default: 0)",
  },
  {
    flags: ["--draft-p-min", "--spec-draft-p-min"],
    kind: "number",
    metavar: "P",
    help: "end a draft where the draft model's probability of its token is below P (default: 0)",
  },
  {
    flags: ["--draft-fixed"],
    kind: "boolean",
    help: "always draft --draft-max tokens (default: the depth adapts to the measured acceptance and costs)",
  },
  {
    flags: ["--spec-ngram-size-n", "--spec-ngram-simple-size-n"],
    kind: "integer",
    metavar: "N",
    help: "ngram: the longest n-gram looked up (default: 4; the shortest is 2, or N when smaller)",
  },
  {
    flags: ["-ngld", "--gpu-layers-draft", "--spec-draft-ngl", "--n-gpu-layers-draft"],
    kind: "string",
    metavar: "N|all",
    help: "the draft model's layers on the GPU the main model uses (default: all when it uses one)",
  },
];

/** Validated speculative settings; undefined: no speculation. */
export interface SpecSettings {
  readonly type: "ngram" | "draft";
  readonly draftPath?: string;
  readonly draftMax: number;
  readonly draftMin: number;
  readonly pMin: number;
  readonly adaptive: boolean;
  readonly ngramMax: number;
  readonly gpuLayers?: number | "all";
}

export function specSettings(options: ParsedOptions): SpecSettings | undefined {
  const o = options as {
    modelDraft?: string;
    specType?: string;
    draftMax?: number;
    draftMin?: number;
    draftPMin?: number;
    draftFixed?: boolean;
    specNgramSizeN?: number;
    gpuLayersDraft?: string;
  };
  const type = o.specType ?? (o.modelDraft !== undefined ? "draft" : "none");
  check(["ngram", "draft", "none"].includes(type), "--spec-type", "ngram, draft or none", type);
  const draftOnly = (flag: string, given: unknown) => {
    if (given !== undefined && type !== "draft")
      throw new CliError(
        "INVALID_ARGUMENT",
        `${flag} is for --spec-type draft (a -md draft model); the type is ${type}`,
      );
  };
  draftOnly("--draft-p-min", o.draftPMin);
  draftOnly("-ngld", o.gpuLayersDraft);
  if (type === "none") {
    for (const [flag, v] of [
      ["--draft-max", o.draftMax],
      ["--draft-min", o.draftMin],
      ["--draft-fixed", o.draftFixed],
      ["--spec-ngram-size-n", o.specNgramSizeN],
    ] as const)
      if (v !== undefined)
        throw new CliError(
          "INVALID_ARGUMENT",
          `${flag} needs speculative decoding: give -md FILE or --spec-type ngram`,
        );
    return undefined;
  }
  if (type === "draft" && o.modelDraft === undefined)
    throw new CliError("MISSING_ARGUMENT", "--spec-type draft needs a draft model: -md FILE");
  if (type === "ngram" && o.modelDraft !== undefined)
    throw new CliError(
      "INVALID_ARGUMENT",
      "--spec-type ngram drafts without a model: drop -md, or use --spec-type draft",
    );
  if (o.specNgramSizeN !== undefined && type !== "ngram")
    throw new CliError("INVALID_ARGUMENT", "--spec-ngram-size-n is for --spec-type ngram");
  const draftMax = o.draftMax ?? 16;
  check(draftMax >= 1 && draftMax <= 256, "--draft-max", "an integer in [1, 256]", draftMax);
  const draftMin = o.draftMin ?? 0;
  check(
    draftMin >= 0 && draftMin <= draftMax,
    "--draft-min",
    `an integer in [0, --draft-max = ${draftMax}]`,
    draftMin,
  );
  const pMin = o.draftPMin ?? 0;
  check(pMin >= 0 && pMin <= 1, "--draft-p-min", "a number in [0, 1]", pMin);
  const ngramMax = o.specNgramSizeN ?? 4;
  check(ngramMax >= 1 && ngramMax <= 64, "--spec-ngram-size-n", "an integer in [1, 64]", ngramMax);
  let gpuLayers: number | "all" | undefined;
  if (o.gpuLayersDraft !== undefined) {
    const g = parseGpuLayers(o.gpuLayersDraft);
    check(g !== "auto", "-ngld", "a layer count or all", o.gpuLayersDraft);
    gpuLayers = g as number | "all";
  }
  return {
    type,
    ...(o.modelDraft !== undefined ? { draftPath: o.modelDraft } : {}),
    draftMax,
    draftMin,
    pMin,
    adaptive: !o.draftFixed,
    ngramMax,
    ...(gpuLayers !== undefined ? { gpuLayers } : {}),
  } as SpecSettings;
}

/**
 * The draft model, loaded on the main model's runtimes (its layers on the main model's GPU: all
 * of them by default, -ngld to choose), after the vocabulary check (DRAFT_MISMATCH names the
 * difference). Say where it went on stderr, and when a device of the main model is not batch-invariant.
 */
export async function loadDraft(spec: SpecSettings, loaded: Loaded): Promise<Model | undefined> {
  const variant = batchVariantDevices(loaded.model);
  if (variant.length > 0)
    process.stderr.write(
      `note: ${variant.join(", ")} ${variant.length > 1 ? "do" : "does"} not compute batch-invariantly: a verification of drafts ` +
        "may round a token's logits otherwise than a one-token step, so greedy output with speculation can differ " +
        "from without where two tokens nearly tie (docs/SPECULATIVE.md)\n",
    );
  if (spec.type !== "draft") return undefined;
  const path = await resolveModelPath(spec.draftPath!);
  const asked = spec.gpuLayers ?? (loaded.gpu ? "all" : 0);
  if (asked !== 0 && !loaded.gpu)
    throw new CliError(
      "INVALID_ARGUMENT",
      `-ngld ${asked}: the main model runs on the CPU only, so the draft model has no GPU to go to`,
    );
  const file = await readGguf(path);
  const nLayer = architecture(file.metadata.architecture).loadHparams(file.metadata).nLayer;
  const layers = asked === "all" ? nLayer : Math.min(asked, nLayer);
  const model = await Model.load(path, {
    runtime: loaded.runtime,
    file,
    ...(loaded.gpu && layers > 0 ? { offload: { runtime: loaded.gpu, layers } } : {}),
  });
  try {
    checkDraftVocabulary(loaded.model, model);
  } catch (e) {
    model.dispose();
    throw e;
  }
  const { params } = modelSize(model);
  process.stderr.write(
    `draft model ${path}: ${model.hparams.arch}, ${humanCount(params)} params, ${weightTypes(model)}; devices: ${model.placement.describe()}\n`,
  );
  for (const line of describeWeightsKept(model)) process.stderr.write(`${line}\n`);
  return model;
}

/** The devices of `model` that do not honour batch-invariant programs (DeviceCaps.batchInvariant). */
export function batchVariantDevices(model: Model): string[] {
  return model.placement
    .runtimes()
    .filter((r) => r.device.caps.batchInvariant !== true)
    .map((r) => r.device.name);
}

/** The drafter for a generation in `ctx`'s sequence `seq` (the draft context when drafting with a model). */
export function makeDrafter(spec: SpecSettings, draftCtx: Context | undefined, seq = 0): Drafter {
  if (spec.type === "ngram")
    return new NgramDrafter({ ngramMax: spec.ngramMax, ngramMin: Math.min(2, spec.ngramMax) });
  return new ModelDrafter(draftCtx!, { seq, pMin: spec.pMin });
}

/** generate()'s speculative options. */
export function speculativeFor(spec: SpecSettings, drafter: Drafter): SpeculativeOptions {
  return { drafter, draftMax: spec.draftMax, draftMin: spec.draftMin, adaptive: spec.adaptive };
}

/** One line of a generation's speculation: acceptance and tokens per verification. */
export function describeSpeculation(s: SpeculativeStats, generated: number): string {
  const rate = s.drafted > 0 ? (100 * s.accepted) / s.drafted : 0;
  return (
    `speculative (${s.kind}): ${s.accepted}/${s.drafted} drafted tokens accepted (${rate.toFixed(1)}%), ` +
    `${s.steps} verifications for ${generated} tokens (${(generated / Math.max(1, s.steps)).toFixed(2)} a verification), ` +
    `drafting ${s.draftMs.toFixed(1)} ms`
  );
}
