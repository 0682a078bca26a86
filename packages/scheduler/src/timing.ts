import { opSpec } from "@minfer/ir";
import { formatTable } from "./format-table.js";

/** One measured entry: a node, or a copy between devices. */
export interface TimingRow {
  /** Op name (`"MUL_MAT"`), or `"COPY"`. */
  readonly op: string;
  /** The node's name, or the copied tensor's. */
  readonly name: string;
  /** The device that ran it (`"a → b"` for copies). */
  readonly device: string;
  readonly micros: number;
}

/** Per-op timing of one run. */
export interface TimingReport {
  readonly rows: readonly TimingRow[];
  readonly totalMicros: number;
  /** The table: op, node name, device, µs, % of total; then the total. */
  format(): string;
}

export function opLabel(op: number): string {
  return opSpec(op)?.name ?? `op ${op}`;
}

export function timingReport(rows: readonly TimingRow[]): TimingReport {
  const total = rows.reduce((s, r) => s + r.micros, 0);
  return {
    rows,
    totalMicros: total,
    format: () =>
      `${formatTable(
        ["op", "node", "device", "µs", "%"],
        rows.map((r) => [
          r.op,
          r.name,
          r.device,
          r.micros.toFixed(1),
          total > 0 ? ((100 * r.micros) / total).toFixed(1) : "0.0",
        ]),
        [3, 4],
      )}\ntotal ${total.toFixed(1)} µs over ${rows.length} entries`,
  };
}
