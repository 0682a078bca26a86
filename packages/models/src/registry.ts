import type { ArchModule } from "./arch.js";
import * as bert from "./bert.js";
import { ModelError } from "./errors.js";
import * as gemma from "./gemma.js";
import * as gemma2 from "./gemma2.js";
import * as gemma3 from "./gemma3.js";
import * as glm4 from "./glm4.js";
import * as granite from "./granite.js";
import type { Hparams } from "./hparams.js";
import * as llama from "./llama.js";
import * as nomicBert from "./nomic-bert.js";
import * as olmo2 from "./olmo2.js";
import * as phi3 from "./phi3.js";
import * as qwen2 from "./qwen2.js";
import * as qwen3 from "./qwen3.js";

/**
 * A module checked against {@link ArchModule} with its own hyperparameters. Its functions take the
 * hparams its own loadHparams made, and a caller passes them back to the same module, so it is
 * kept as the base type.
 */
function entry<H extends Hparams>(m: ArchModule<H>): ArchModule<Hparams> {
  return m as unknown as ArchModule<Hparams>;
}

const ALL: readonly ArchModule<Hparams>[] = [
  entry(llama),
  entry(qwen2),
  entry(qwen3),
  entry(gemma),
  entry(gemma2),
  entry(gemma3),
  entry(phi3),
  entry(glm4),
  entry(granite),
  entry(olmo2),
  entry(bert),
  entry(nomicBert),
];

const MODULES: ReadonlyMap<string, ArchModule<Hparams>> = new Map(ALL.map((m) => [m.ARCH, m]));

/** The architecture names this package supports (`general.architecture` values). */
export const SUPPORTED_ARCHS: readonly string[] = [...MODULES.keys()];

/** The module of an architecture; an unknown one is UNKNOWN_ARCH listing the supported ones. */
export function architecture(name: string): ArchModule<Hparams> {
  const m = MODULES.get(name);
  if (!m)
    throw new ModelError(
      "UNKNOWN_ARCH",
      `architecture "${name}" is not supported; supported: ${SUPPORTED_ARCHS.join(", ")}`,
      { supported: SUPPORTED_ARCHS },
    );
  return m;
}
