import { defineConfig } from "vitest/config";

// Whole-model tests run many graph executions; on a busy 2-core CI machine they take seconds.
export default defineConfig({ test: { testTimeout: 120_000, hookTimeout: 60_000 } });
