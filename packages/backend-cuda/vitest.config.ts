import { defineConfig } from "vitest/config";

// CI is a busy 2-core machine running several packages' tests at once: vitest's 5 s default is
// too tight for the heavier cases, so a stuck test is caught by a larger bound instead.
export default defineConfig({ test: { testTimeout: 60_000, hookTimeout: 60_000 } });
