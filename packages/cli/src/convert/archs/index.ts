// The registry of converter architectures: one file each; adding one means adding it here.
import { bert } from "./bert.js";
import { gemma } from "./gemma.js";
import { gemma2 } from "./gemma2.js";
import { gemma3 } from "./gemma3.js";
import { glm4 } from "./glm4.js";
import { granite } from "./granite.js";
import { llama } from "./llama.js";
import { nomicBert } from "./nomic-bert.js";
import { olmo2 } from "./olmo2.js";
import { phi3 } from "./phi3.js";
import { qwen2 } from "./qwen2.js";
import { qwen3 } from "./qwen3.js";
import type { ArchSpec } from "./types.js";
import { xlmRoberta } from "./xlm-roberta.js";

export const ARCH_SPECS: readonly ArchSpec[] = [
  llama,
  qwen2,
  qwen3,
  gemma,
  gemma2,
  gemma3,
  phi3,
  glm4,
  granite,
  olmo2,
  bert,
  xlmRoberta,
  nomicBert,
];
