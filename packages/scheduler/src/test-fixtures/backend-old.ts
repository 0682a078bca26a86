import { referenceBackend } from "../reference-device.js";

/** A backend built against another contract version. */
export const backend = { ...referenceBackend({ name: "old" }), apiVersion: 99 };
