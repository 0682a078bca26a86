// Types of prebuilt.mjs, for the TypeScript loader (src/binary.ts) and tests.
export declare const BINARY: string;
export declare const PREBUILT_PLATFORMS: readonly string[];
export declare const FIX: string;
/** A found prebuilt binary, or why there is none. */
export type Prebuilt =
  | { readonly name: string; readonly path: string; readonly missing?: undefined }
  | { readonly name?: string; readonly path?: undefined; readonly missing: string };
export declare function detectLibc(platform?: string): "glibc" | "musl" | undefined;
export declare function platformKey(platform?: string, arch?: string, libc?: string): string;
export declare function prebuiltPackage(key: string): string;
export declare function findPrebuilt(pkgRoot: string, key?: string): Prebuilt;
export declare function loadsInChild(path: string): { ok: true } | { ok: false; error: string };
export declare const MIN_COMPUTE_CAPABILITY: string;
export declare const RELEASE_ARCHS: string;
