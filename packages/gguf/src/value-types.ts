/** GGUF metadata value types (the `gguf_type` enum of the format). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** A GGUF metadata value type id. */
export type GgufValueTypeId = (typeof GgufValueType)[keyof typeof GgufValueType];

const NAMES = Object.fromEntries(
  Object.entries(GgufValueType).map(([k, v]) => [v, k.toLowerCase()]),
) as Record<number, string>;

/** `"uint32"`, `"string"`, ... for a value type id; `"type N"` for an id outside the enum. */
export function valueTypeName(type: number): string {
  return NAMES[type] ?? `type ${type}`;
}

/** Whether `type` is a value type id of the format. */
export function isValueType(type: number): type is GgufValueTypeId {
  return Number.isInteger(type) && type >= 0 && type <= 12;
}

/** Encoded size of a fixed-size scalar type; 0 for string and array (variable length). */
export function scalarSize(type: GgufValueTypeId): number {
  switch (type) {
    case GgufValueType.UINT8:
    case GgufValueType.INT8:
    case GgufValueType.BOOL:
      return 1;
    case GgufValueType.UINT16:
    case GgufValueType.INT16:
      return 2;
    case GgufValueType.UINT32:
    case GgufValueType.INT32:
    case GgufValueType.FLOAT32:
      return 4;
    case GgufValueType.UINT64:
    case GgufValueType.INT64:
    case GgufValueType.FLOAT64:
      return 8;
    default:
      return 0;
  }
}

/** The fewest bytes one value of `type` can take in a file (used to reject impossible counts). */
export function minEncodedSize(type: GgufValueTypeId): number {
  if (type === GgufValueType.STRING) return 8; // u64 length, possibly empty
  if (type === GgufValueType.ARRAY) return 12; // u32 item type + u64 count
  return scalarSize(type);
}
