import { defineConfig } from "vitest/config";

// The CLI tests spawn the built binary; give them time on a 2-core machine.
export default defineConfig({ test: { testTimeout: 60_000 } });
