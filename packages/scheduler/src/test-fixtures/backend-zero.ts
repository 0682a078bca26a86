import { referenceBackend } from "../reference-device.js";

/** A backend whose native binary is absent: it loads and says why it cannot run. */
export const backend = {
  ...referenceBackend({ name: "zero" }),
  score: () => 0,
  diagnostics: () => [
    "native binary missing: build/Release/minfer_zero.node (run pnpm --filter @minfer/backend-zero build)",
  ],
};
