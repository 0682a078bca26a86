import type { Device } from "@minfer/ir";
import type { BackendDiagnostic, Registry } from "@minfer/scheduler";
import { type OptionSpec, parseArgs } from "../args.js";
import { CliError } from "../errors.js";
import { backends } from "./backends.js";

export const devicesOptions: OptionSpec[] = [
  { flags: ["--json"], kind: "boolean", help: "print one JSON object instead of text" },
  { flags: ["--verbose"], kind: "boolean", help: "also print each backend's own diagnostics" },
];

/** One device as listed: its name, type, memory and what the backend says it is. */
export interface DeviceListing {
  readonly name: string;
  readonly type: Device["type"];
  readonly memory: { readonly free: number; readonly total: number };
  readonly properties: Readonly<Record<string, string | number>>;
}

/** One backend package as listed: whether it loaded, its devices, and why not when unusable. */
export interface BackendListing {
  readonly backend: string;
  readonly package: string;
  readonly status: BackendDiagnostic["status"];
  /** Why it cannot be used (absent when it loaded). */
  readonly reason?: string;
  readonly devices: readonly DeviceListing[];
  readonly details: readonly string[];
}

/** The reason a diagnostic gives, shortened to its `unusable:` lines when the backend has them. */
function reasonOf(d: BackendDiagnostic): string {
  if (d.status !== "unusable") return d.reason;
  const lines = d.details.filter((l) => /unusable/.test(l)).map((l) => l.replace(/^[a-z]+: unusable: /, ""));
  return lines.length ? lines.join("; ") : d.reason;
}

/** Every backend the registry tried, with its devices (the registry's view, nothing re-probed). */
export function listDevices(registry: Registry): BackendListing[] {
  return [...registry.diagnostics().values()].map((d) => {
    const entry = d.status === "loaded" && d.backend !== undefined ? registry.backend(d.backend) : undefined;
    const devices = (entry?.devices() ?? []).map((dev) => ({
      name: dev.name,
      type: dev.type,
      memory: dev.memory(),
      properties: dev.properties?.() ?? {},
    }));
    return {
      backend: d.backend ?? d.package,
      package: d.package,
      status: d.status,
      ...(d.status !== "loaded" ? { reason: reasonOf(d) } : {}),
      devices,
      details: d.details,
    };
  });
}

const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;

function describeProperties(p: Readonly<Record<string, string | number>>): string {
  return Object.entries(p)
    .map(([k, v]) => `${k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)} ${v}`)
    .join(", ");
}

/** The listing as text: a line per backend, an indented line per device. */
export function formatDevices(list: readonly BackendListing[], verbose: boolean): string {
  const lines: string[] = [];
  for (const b of list) {
    const status = b.status === "loaded" ? "usable" : b.status;
    lines.push(`${b.backend.padEnd(6)} ${status.padEnd(13)} ${b.package}${b.reason ? `: ${b.reason}` : ""}`);
    for (const d of b.devices) {
      const props = describeProperties(d.properties);
      lines.push(
        `  ${d.name}: ${d.type}, ${gib(d.memory.free)} free of ${gib(d.memory.total)}${props ? `; ${props}` : ""}`,
      );
    }
    if (verbose) for (const line of b.details) lines.push(`    ${line}`);
  }
  return lines.join("\n");
}

/** `minfer devices`: every backend, whether it loaded, its devices, and why not when unusable. */
export async function devicesCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, devicesOptions);
  if (positionals.length > 0)
    throw new CliError(
      "EXTRA_ARGUMENT",
      `unexpected argument "${positionals[0]}" (minfer devices takes none)`,
    );
  const list = listDevices(await backends());
  if (options.json) process.stdout.write(`${JSON.stringify({ backends: list }, null, 2)}\n`);
  else process.stdout.write(`${formatDevices(list, Boolean(options.verbose))}\n`);
  return 0;
}
