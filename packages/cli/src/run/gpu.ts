import { planOffload } from "@minfer/engine";
import type { GgufFile } from "@minfer/gguf";
import type { Device, DeviceRuntime } from "@minfer/ir";
import { architecture } from "@minfer/models";
import type { Registry } from "@minfer/scheduler";
import { CliError } from "../errors.js";
import { offloadDevice } from "./backends.js";
import type { RunSettings } from "./options.js";

/** What -ngl and --device decided: the offload runtime and the blocks it runs (none: CPU only), and why. */
export interface GpuChoice {
  readonly runtime: DeviceRuntime | undefined;
  readonly layers: number;
  readonly note: string;
}

/**
 * Resolves --device and -ngl against the backends found: `--device cpu` or `-ngl 0` is the CPU
 * only; a count or `all` needs a usable offload device (else an error that says why); `auto`
 * (the default) fits by the device's free memory (the engine's offload plan) and runs on the
 * CPU only when no offload device is usable, saying so with the reason.
 */
export async function chooseGpu(
  file: GgufFile,
  settings: RunSettings,
  registry: Registry,
  host: Device,
): Promise<GpuChoice> {
  const asked = settings.gpuLayers ?? "auto";
  if (settings.device === "cpu") {
    if (asked !== "auto" && asked !== 0)
      throw new CliError(
        "INVALID_ARGUMENT",
        `--device cpu runs every layer on the CPU; -ngl ${asked} asks for layers on a GPU (drop one of them)`,
      );
    return { runtime: undefined, layers: 0, note: "cpu only (--device cpu)" };
  }
  if (asked === 0) return { runtime: undefined, layers: 0, note: "cpu only (-ngl 0)" };
  let device: Device | undefined;
  let why: string;
  try {
    ({ device, why } = offloadDevice(registry, settings.device));
  } catch (e) {
    throw new CliError("INVALID_ARGUMENT", `--device ${settings.device}: ${(e as Error).message}`);
  }
  if (!device) {
    if (asked === "auto") return { runtime: undefined, layers: 0, note: `cpu only (no usable GPU: ${why})` };
    throw new CliError(
      "INVALID_ARGUMENT",
      `-ngl ${asked}: no usable GPU (${why}); use -ngl 0 for the CPU only`,
    );
  }
  if (device.name === host.name)
    throw new CliError(
      "INVALID_ARGUMENT",
      `--device ${device.name} is the host device; name a GPU (minfer devices lists them)`,
    );
  const hp = architecture(file.metadata.architecture).loadHparams(file.metadata);
  let layers: number;
  let how: string;
  if (asked === "all") {
    layers = hp.nLayer;
    how = "-ngl all";
  } else if (asked === "auto") {
    const plan = planOffload(file, {
      device,
      host,
      ...(settings.nCtx !== undefined ? { nCtx: settings.nCtx } : {}),
      ...(settings.nUbatch !== undefined ? { nUbatch: settings.nUbatch } : {}),
      ...(settings.nSeqMax !== undefined ? { nSeqMax: settings.nSeqMax } : {}),
      ...(settings.kvDtype !== undefined ? { kvDtype: settings.kvDtype } : {}),
    });
    layers = plan.layers;
    how = `-ngl auto: ${plan.describe()}`;
  } else {
    layers = Math.min(asked, hp.nLayer);
    how = `-ngl ${asked}`;
  }
  if (layers === 0) return { runtime: undefined, layers: 0, note: `cpu only (${how}: not one layer fits)` };
  const runtime = await device.init();
  return { runtime, layers, note: how };
}
