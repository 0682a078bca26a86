import { CliError } from "./errors.js";

/** One option: its spellings (llama.cpp's where it has one) and what its value is. */
export interface OptionSpec {
  /** Every spelling, e.g. `["-t", "--threads"]`. The first long one names the parsed value. */
  readonly flags: readonly string[];
  readonly kind: "string" | "integer" | "number" | "boolean";
  readonly help: string;
  /** Shown in usage as the value's name. */
  readonly metavar?: string;
  /** A string option that may be given several times; its value is the array of all of them. */
  readonly repeat?: boolean;
}

export type ParsedOptions = Record<string, string | number | boolean | string[] | undefined>;

/** The key a spec's value is stored under: its long flag without dashes, camel-cased. */
export function optionKey(spec: OptionSpec): string {
  const long = spec.flags.find((f) => f.startsWith("--")) ?? spec.flags[0]!;
  return long.replace(/^-+/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

function convert(spec: OptionSpec, flag: string, raw: string): string | number {
  if (spec.kind === "string") return raw;
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || (spec.kind === "integer" && !Number.isInteger(n))) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `${flag} expects ${spec.kind === "integer" ? "an integer" : "a number"}, got "${raw}"`,
    );
  }
  return n;
}

/**
 * Parses `argv` against `specs`: `--flag value`, `--flag=value`, `-t 4`, booleans without a value,
 * `--` ends options. Anything unknown is an error that lists the valid options.
 */
export function parseArgs(
  argv: readonly string[],
  specs: readonly OptionSpec[],
): { options: ParsedOptions; positionals: string[] } {
  const byFlag = new Map<string, OptionSpec>();
  for (const s of specs) for (const f of s.flags) byFlag.set(f, s);
  const options: ParsedOptions = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-" || /^-\d/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = byFlag.get(flag);
    if (!spec) {
      const valid = specs.map((s) => s.flags.join("/")).join(", ");
      throw new CliError(
        "UNKNOWN_OPTION",
        `unknown option ${flag}${valid ? `; valid options: ${valid}` : ""}`,
      );
    }
    const key = optionKey(spec);
    if (spec.kind === "boolean") {
      if (eq > 0) throw new CliError("INVALID_ARGUMENT", `${flag} takes no value`);
      options[key] = true;
      continue;
    }
    let raw: string | undefined;
    if (eq > 0) raw = arg.slice(eq + 1);
    else {
      raw = argv[i + 1];
      i++;
    }
    if (raw === undefined)
      throw new CliError("MISSING_VALUE", `${flag} needs a value (${spec.metavar ?? spec.kind})`);
    const value = convert(spec, flag, raw);
    if (spec.repeat) options[key] = [...((options[key] as string[] | undefined) ?? []), String(value)];
    else options[key] = value;
  }
  return { options, positionals };
}

/** Usage lines for a set of options. */
export function formatOptions(specs: readonly OptionSpec[]): string {
  const rows = specs.map((s) => [
    `${s.flags.join(", ")}${s.kind === "boolean" ? "" : ` ${s.metavar ?? s.kind.toUpperCase()}`}${s.repeat ? " …" : ""}`,
    s.help,
  ]);
  const w = Math.max(0, ...rows.map((r) => r[0]!.length));
  return rows.map(([a, b]) => `  ${a!.padEnd(w)}  ${b}`).join("\n");
}

/** Exactly `names.length` positionals, or an error naming what is missing or extra. */
export function expectPositionals(positionals: string[], names: readonly string[]): string[] {
  if (positionals.length < names.length) {
    throw new CliError("MISSING_ARGUMENT", `missing ${names.slice(positionals.length).join(" ")}`);
  }
  if (positionals.length > names.length) {
    throw new CliError("EXTRA_ARGUMENT", `unexpected argument "${positionals[names.length]}"`);
  }
  return positionals;
}
