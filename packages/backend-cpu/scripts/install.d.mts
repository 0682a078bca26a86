// Types of install.mjs, for its tests (src/install.test.ts).
import type { Prebuilt } from "./prebuilt.mjs";

type Loads = (path: string) => { ok: true } | { ok: false; error: string };
export type Decision =
  | { readonly action: "prebuilt"; readonly line: string }
  | { readonly action: "build"; readonly status: string };
export declare function decide(prebuilt: Prebuilt, loads: Loads): Decision;
export declare function main(parts?: {
  pkg?: string;
  prebuilt?: Prebuilt;
  loads?: Loads;
  build?: (pkg: string, status: string) => number;
}): number;
