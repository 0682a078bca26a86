import {
  type GgufArray,
  type GgufFile,
  type GgufKV,
  GgufValueType,
  ggmlTypeByName,
  readGguf,
  valueTypeName,
} from "@minfer/gguf";
import { expectPositionals, type OptionSpec, parseArgs } from "../args.js";

/** Arrays longer than this are shown abbreviated. */
const ARRAY_PREVIEW = 8;

export const inspectOptions: OptionSpec[] = [
  { flags: ["--json"], kind: "boolean", help: "print a JSON report instead of text" },
];

type JsonValue = string | number | boolean | null | JsonValue[] | { [k: string]: JsonValue };

/** The shortest decimal that reads back as the same float32 (0.00001, not 0.000009999999747). */
function shortestF32(v: number): number {
  for (let p = 1; p <= 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

function scalarJson(v: unknown, type?: number): JsonValue {
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  if (typeof v === "number" && type === GgufValueType.FLOAT32) return shortestF32(v);
  return v as JsonValue;
}

function arrayJson(arr: GgufArray): {
  itemType: string;
  length: number;
  items: JsonValue[];
  truncated: boolean;
} {
  const n = arr.items.length;
  const shown = Array.from({ length: Math.min(n, ARRAY_PREVIEW) }, (_, i) => {
    const item = (arr.items as ArrayLike<unknown>)[i];
    return arr.itemType === GgufValueType.ARRAY
      ? (arrayJson(item as GgufArray) as never)
      : scalarJson(item, arr.itemType);
  });
  return { itemType: valueTypeName(arr.itemType), length: n, items: shown, truncated: n > ARRAY_PREVIEW };
}

function kvJson(kv: GgufKV): JsonValue {
  if (kv.type === GgufValueType.ARRAY) return { type: "array", ...arrayJson(kv.value as GgufArray) };
  return { type: valueTypeName(kv.type), value: scalarJson(kv.value, kv.type) };
}

/** The facts `minfer gguf inspect` prints, as data. */
export function inspectReport(file: GgufFile, path: string) {
  const byType = new Map<string, { tensors: number; elements: number; bytes: number }>();
  for (const t of file.tensors) {
    const row = byType.get(t.typeName) ?? { tensors: 0, elements: 0, bytes: 0 };
    row.tensors++;
    row.elements += t.nElements;
    row.bytes += t.byteSize;
    byType.set(t.typeName, row);
  }
  const md = file.metadata;
  return {
    path,
    version: file.version,
    architecture: md.has("general.architecture") ? md.string("general.architecture") : null,
    alignment: file.alignment,
    parts: file.parts.map((p) => ({
      path: p.path ?? null,
      bytes: p.fileSize,
      dataOffset: p.dataOffset,
      tensors: p.tensors.length,
    })),
    metadataCount: md.size,
    tensorCount: file.tensors.length,
    metadata: Object.fromEntries([...md.entries()].map((kv) => [kv.key, kvJson(kv)])),
    tensors: file.tensors.map((t) => ({
      name: t.name,
      type: t.typeName,
      dims: t.dims,
      elements: t.nElements,
      bytes: t.byteSize,
      offset: t.offset,
      part: t.part,
    })),
    totals: {
      elements: file.tensors.reduce((a, t) => a + t.nElements, 0),
      bytes: file.tensors.reduce((a, t) => a + t.byteSize, 0),
      byType: Object.fromEntries(
        [...byType.entries()].sort((a, b) => ggmlTypeByName(a[0]).id - ggmlTypeByName(b[0]).id),
      ),
    },
  };
}

function formatJsonValue(v: JsonValue): string {
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

function formatKv(v: JsonValue): [string, string] {
  const o = v as {
    type: string;
    value?: JsonValue;
    itemType?: string;
    length?: number;
    items?: JsonValue[];
    truncated?: boolean;
  };
  if (o.type !== "array") return [o.type, formatJsonValue(o.value!)];
  const items = o.items!.map((x) =>
    typeof x === "object" && x !== null
      ? `[${(x as { itemType: string }).itemType} × ${(x as { length: number }).length}]`
      : formatJsonValue(x),
  );
  return [`[${o.itemType} × ${o.length}]`, `[${items.join(", ")}${o.truncated ? ", …" : ""}]`];
}

const mib = (n: number) => `${(n / 1048576).toFixed(2)} MiB`;

/** The text form of {@link inspectReport}. */
export function formatInspect(r: ReturnType<typeof inspectReport>): string {
  const out: string[] = [];
  out.push(`${r.path}: GGUF v${r.version}, architecture ${r.architecture ?? "(none)"}`);
  out.push(
    `${r.metadataCount} metadata keys, ${r.tensorCount} tensors, alignment ${r.alignment}, ${r.parts.length} file${r.parts.length > 1 ? "s" : ""}`,
  );
  for (const p of r.parts)
    out.push(`  ${p.path}: ${p.bytes} bytes, data at ${p.dataOffset}, ${p.tensors} tensors`);
  out.push("", "metadata:");
  const keyW = Math.max(...Object.keys(r.metadata).map((k) => k.length), 3);
  const rows = Object.entries(r.metadata).map(([k, v]) => [k, ...formatKv(v)] as const);
  const typeW = Math.max(...rows.map((x) => x[1].length), 4);
  for (const [k, t, v] of rows)
    out.push(`  ${k.padEnd(keyW)}  ${t.padEnd(typeW)}  ${v.length > 160 ? `${v.slice(0, 157)}…` : v}`);
  if (r.tensors.length > 0) {
    out.push("", "tensors:");
    const nameW = Math.max(...r.tensors.map((t) => t.name.length), 4);
    out.push(
      `  ${"#".padStart(4)}  ${"name".padEnd(nameW)}  ${"type".padEnd(7)}  ${"shape".padEnd(20)}  ${"bytes".padStart(12)}  offset`,
    );
    r.tensors.forEach((t, i) => {
      const shape = `[${t.dims.join(", ")}]`;
      out.push(
        `  ${String(i).padStart(4)}  ${t.name.padEnd(nameW)}  ${t.type.padEnd(7)}  ${shape.padEnd(20)}  ${String(t.bytes).padStart(12)}  ${t.offset}${r.parts.length > 1 ? ` (part ${t.part + 1})` : ""}`,
      );
    });
  }
  out.push("", "totals by type:");
  for (const [type, row] of Object.entries(r.totals.byType)) {
    out.push(
      `  ${type.padEnd(7)}  ${String(row.tensors).padStart(5)} tensors  ${String(row.elements).padStart(14)} elements  ${mib(row.bytes).padStart(14)}`,
    );
  }
  out.push(
    `  ${"all".padEnd(7)}  ${String(r.tensorCount).padStart(5)} tensors  ${String(r.totals.elements).padStart(14)} elements  ${mib(r.totals.bytes).padStart(14)}`,
  );
  return out.join("\n");
}

export async function inspectCommand(argv: string[]): Promise<number> {
  const { options, positionals } = parseArgs(argv, inspectOptions);
  const [path] = expectPositionals(positionals, ["FILE"]);
  const file = await readGguf(path!);
  const report = inspectReport(file, path!);
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatInspect(report)}\n`);
  return 0;
}
