import type { KvGroup, KvLayer } from "./arch.js";
import type { Hparams } from "./hparams.js";

/** Every layer's K/V rows (nHeadKv·headDim), in the cache `group(il)` says (default: all full). */
export function kvLayersOf(hp: Hparams, group: (il: number) => KvGroup = () => "full"): KvLayer[] {
  return Array.from({ length: hp.nLayer }, (_, il) => ({
    kRow: hp.nHeadKv * hp.headDimK,
    vRow: hp.nHeadKv * hp.headDimV,
    group: group(il),
  }));
}

/** `kvLayers` of an architecture whose every layer attends to the whole context. */
export function fullAttentionLayers(hp: Hparams): KvLayer[] {
  return kvLayersOf(hp);
}

/** `slidingWindow` of an architecture without one. */
export function noSlidingWindow(): number {
  return 0;
}
