import type { Device } from "@minfer/ir";
import { Registry } from "@minfer/scheduler";

let discovered: Promise<Registry> | undefined;

/**
 * The backends of this process, discovered once through the scheduler's registry (its list of
 * known backend packages). The packages are imported from here, where the CLI's dependencies
 * resolve; nothing in the CLI names a backend package.
 */
export function backends(): Promise<Registry> {
  discovered ??= Registry.discover({ importModule: (specifier) => import(specifier) });
  return discovered;
}

/** The host device (the CPU): the registry's error names why it is missing and how to fix it. */
export function hostDevice(registry: Registry): Device {
  return registry.device("cpu");
}

/**
 * The device offloaded layers go to: `asked` (a device or backend name, from --device), else the
 * first GPU of the best backend; undefined when none is usable (with the registry's reasons).
 */
export function offloadDevice(
  registry: Registry,
  asked: string | undefined,
): { device: Device | undefined; why: string } {
  if (asked !== undefined) return { device: registry.device(asked), why: `--device ${asked}` };
  const gpu = registry.devices().find((d) => d.type !== "cpu");
  if (gpu) return { device: gpu, why: "" };
  const reasons = [...registry.diagnostics().values()]
    .filter((d) => d.backend !== "cpu" && d.status !== "not-installed")
    .map((d) => `${d.backend ?? d.package}: ${d.reason}`);
  return { device: undefined, why: reasons.join("; ") || "no GPU backend is installed" };
}
