import { referenceBackend } from "../reference-device.js";

/** A well-formed backend for registry tests. */
export const backend = referenceBackend({ name: "good", score: 5 });
