// Types of install.mjs, for its tests (src/install.test.ts).
import type { Prebuilt } from "./prebuilt.mjs";

type Loads = (path: string) => { ok: true } | { ok: false; error: string };
export type Decision =
  | { readonly action: "prebuilt"; readonly line: string }
  | { readonly action: "build"; readonly status: string }
  | { readonly action: "skip"; readonly status: string; readonly reason: string };
export declare const hasDriver: () => boolean;
export declare function decide(
  prebuilt: Prebuilt,
  loads: Loads,
  context?: { platform?: string; driver?: () => boolean; force?: boolean },
): Decision;
export declare function main(parts?: {
  pkg?: string;
  prebuilt?: Prebuilt;
  loads?: Loads;
  build?: (pkg: string, status: string) => number;
  driver?: () => boolean;
  force?: boolean;
  platform?: string;
}): number;
