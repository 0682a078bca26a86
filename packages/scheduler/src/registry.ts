import { BACKEND_API_VERSION, type BackendEntry, type Device } from "@minfer/ir";
import { SchedulerError } from "./errors.js";
import { REFERENCE_BACKEND, referenceBackend } from "./reference-device.js";

/**
 * The one list of backend packages the registry looks for, in no particular order (score
 * decides). Adding a backend means adding its package here and nothing else. (@minfer/backend-metal
 * joins when it has kernels and is published.)
 */
export const KNOWN_BACKEND_PACKAGES: readonly string[] = ["@minfer/backend-cpu", "@minfer/backend-cuda"];

/** What became of one package the registry tried. */
export type DiagnosticStatus = "loaded" | "not-installed" | "failed" | "wrong-api-version" | "unusable";

export interface BackendDiagnostic {
  /** The package name or module specifier tried. */
  readonly package: string;
  readonly status: DiagnosticStatus;
  /** The backend's name when the entry was read (`"cpu"`, …). */
  readonly backend: string | undefined;
  /** One line: why it was skipped, or what loaded. */
  readonly reason: string;
  /** The backend's own `diagnostics()` lines, when it has an entry. */
  readonly details: readonly string[];
}

/** Options of {@link Registry.discover}. */
export interface RegistryOptions {
  /**
   * Further package names or module specifiers (absolute paths, file: URLs) to try after the
   * known list, e.g. from configuration. Default: none.
   */
  packages?: readonly string[];
  /** Replaces {@link KNOWN_BACKEND_PACKAGES} (tests use it to try only their own modules). Default: the known list. */
  known?: readonly string[];
  /** Backend entries given directly (already imported), kept as if loaded. Default: none. */
  entries?: readonly BackendEntry[];
  /**
   * Adds the TypeScript reference backend (`"reference"`, score 1) — the null device for tests
   * and the oracle of the conformance suite. Default: false (nothing falls back to it silently).
   */
  reference?: boolean;
  /**
   * Loads one module. Default: `(specifier) => import(specifier)` from this package. An
   * application whose backends are its own dependencies passes its own `import` so they resolve
   * from it: `{ importModule: (s) => import(s) }`.
   */
  importModule?: (specifier: string) => Promise<unknown>;
}

/** The backend name a package is expected to provide (`@minfer/backend-cuda` → `cuda`). */
function expectedName(pkg: string): string | undefined {
  return /backend-([a-z0-9]+)$/.exec(pkg)?.[1];
}

function errorCode(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e
    ? String((e as { code: unknown }).code)
    : undefined;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function isBackendEntry(v: unknown): v is BackendEntry {
  if (typeof v !== "object" || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    typeof e.apiVersion === "number" &&
    typeof e.name === "string" &&
    typeof e.score === "function" &&
    typeof e.devices === "function"
  );
}

/**
 * The backends found on this host. Discovery happens once (`Registry.discover`): every known
 * package (plus those named by configuration) is imported; an entry is kept when it loads, has
 * this IR's API version and a score above 0. Why any other was skipped is in `diagnostics()`.
 */
export class Registry {
  readonly #backends: readonly BackendEntry[];
  readonly #diagnostics: ReadonlyMap<string, BackendDiagnostic>;

  private constructor(backends: BackendEntry[], diagnostics: Map<string, BackendDiagnostic>) {
    const score = new Map(backends.map((b) => [b, b.score()]));
    this.#backends = backends.sort((a, b) => score.get(b)! - score.get(a)!);
    this.#diagnostics = diagnostics;
  }

  /** Imports every candidate package once and builds the registry. */
  static async discover(options: RegistryOptions = {}): Promise<Registry> {
    const load = options.importModule ?? ((s: string) => import(s));
    const candidates = [
      ...new Set([...(options.known ?? KNOWN_BACKEND_PACKAGES), ...(options.packages ?? [])]),
    ];
    const diagnostics = new Map<string, BackendDiagnostic>();
    const kept: BackendEntry[] = [];
    const keep = (pkg: string, entry: unknown) => {
      const d = Registry.#judge(pkg, entry);
      diagnostics.set(pkg, d);
      if (d.status === "loaded") kept.push(entry as BackendEntry);
    };
    const results = await Promise.all(
      candidates.map(async (pkg) => {
        try {
          return { pkg, module: (await load(pkg)) as Record<string, unknown> };
        } catch (e) {
          return { pkg, error: e };
        }
      }),
    );
    for (const r of results) {
      if ("error" in r) {
        diagnostics.set(r.pkg, Registry.#loadFailure(r.pkg, r.error));
        continue;
      }
      if (!("backend" in r.module)) {
        diagnostics.set(r.pkg, {
          package: r.pkg,
          status: "failed",
          backend: undefined,
          reason: `failed to load: ${r.pkg} does not export \`backend\` (a BackendEntry); is it built? (pnpm --filter ${r.pkg} build)`,
          details: [],
        });
        continue;
      }
      keep(r.pkg, r.module.backend);
    }
    for (const entry of options.entries ?? []) keep(`(entry) ${entry.name}`, entry);
    if (options.reference) keep(`(builtin) ${REFERENCE_BACKEND}`, referenceBackend());
    return new Registry(kept, diagnostics);
  }

  static #loadFailure(pkg: string, e: unknown): BackendDiagnostic {
    const code = errorCode(e);
    const text = message(e);
    const notFound = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
    // "Cannot find package 'x'" (the package itself is absent) vs. a file inside it (not built).
    if (
      notFound &&
      (text.includes(`'${pkg}'`) || text.includes(`"${pkg}"`) || text.includes(`package '${pkg}`))
    ) {
      return {
        package: pkg,
        status: "not-installed",
        backend: expectedName(pkg),
        reason: `not installed (install it: npm i ${pkg})`,
        details: [],
      };
    }
    const hint = notFound ? ` (is it built? pnpm --filter ${pkg} build)` : "";
    return {
      package: pkg,
      status: "failed",
      backend: expectedName(pkg),
      reason: `failed to load: ${text.split("\n")[0]}${hint}`,
      details: [],
    };
  }

  static #judge(pkg: string, entry: unknown): BackendDiagnostic {
    if (!isBackendEntry(entry)) {
      return {
        package: pkg,
        status: "failed",
        backend: expectedName(pkg),
        reason:
          "failed to load: its `backend` export is not a BackendEntry (apiVersion, name, score, devices)",
        details: [],
      };
    }
    const details = entry.diagnostics?.() ?? [];
    if (entry.apiVersion !== BACKEND_API_VERSION) {
      return {
        package: pkg,
        status: "wrong-api-version",
        backend: entry.name,
        reason:
          `wrong API version: ${pkg} implements backend API ${entry.apiVersion}, this scheduler's @minfer/ir ` +
          `speaks ${BACKEND_API_VERSION}; install matching versions of ${pkg} and @minfer/ir`,
        details,
      };
    }
    const score = entry.score();
    if (!(score > 0)) {
      return {
        package: pkg,
        status: "unusable",
        backend: entry.name,
        reason: `score 0: not usable on this host${details.length ? `: ${details.join("; ")}` : ""}`,
        details,
      };
    }
    return {
      package: pkg,
      status: "loaded",
      backend: entry.name,
      reason: `loaded backend "${entry.name}" (score ${score}, ${entry.devices().length} device(s))`,
      details,
    };
  }

  /** Usable backends, best score first. */
  backends(): readonly BackendEntry[] {
    return this.#backends;
  }

  /** Every device of every usable backend, best backend first. */
  devices(): readonly Device[] {
    return this.#backends.flatMap((b) => b.devices());
  }

  /** Package → what became of it (loaded, or why it was skipped), in the order tried. */
  diagnostics(): ReadonlyMap<string, BackendDiagnostic> {
    return this.#diagnostics;
  }

  /** The diagnostics as text lines, one per package, for a startup report. */
  report(): string[] {
    return [...this.#diagnostics.values()].map((d) => `${d.package}: ${d.reason}`);
  }

  /** The usable backend named `name`, or `undefined`. */
  backend(name: string): BackendEntry | undefined {
    return this.#backends.find((b) => b.name === name);
  }

  /** The usable backend named `name`; a missing one is one error that says why and what to do. */
  require(name: string): BackendEntry {
    const b = this.backend(name);
    if (b) return b;
    throw this.#missing(name, "backend");
  }

  /**
   * A device by its name (`"cuda:0"`) or its backend's name (`"cuda"`: that backend's first
   * device); a missing one is one error that says why and what to do.
   */
  device(name: string): Device {
    const all = this.devices();
    const d = all.find((x) => x.name === name) ?? this.backend(name)?.devices()[0];
    if (d) return d;
    throw this.#missing(name, "device");
  }

  #missing(name: string, what: "backend" | "device"): SchedulerError {
    const base = name.split(":")[0]!;
    const diag = [...this.#diagnostics.values()].find((d) => d.backend === base);
    const available = this.devices().map((d) => d.name);
    const availableText = available.length ? available.join(", ") : "none";
    let text: string;
    if (diag) {
      const why: Record<DiagnosticStatus, string> = {
        "not-installed": `${diag.package} is not installed; install it (npm i ${diag.package})`,
        failed: `${diag.package} ${diag.reason}`,
        "wrong-api-version": `${diag.package} was refused: ${diag.reason.replace(/^wrong API version: /, "")}`,
        unusable: `${diag.package} loaded but reports ${diag.reason}`,
        loaded: `backend "${base}" has no device named "${name}"`,
      };
      text = `${what} "${name}" is not available: ${why[diag.status]}. Devices available: ${availableText}.`;
    } else {
      const tried = [...this.#diagnostics.keys()].join(", ") || "none";
      text =
        `${what} "${name}" is not available: no package providing it was tried (tried: ${tried}); ` +
        `name its package in RegistryOptions.packages. Devices available: ${availableText}.`;
    }
    return new SchedulerError("BACKEND_MISSING", text, { name, diagnostic: diag });
  }
}
