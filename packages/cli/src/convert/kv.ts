// GGUF metadata entries of the types the converter writes.
import { type GgufKV, GgufValueType } from "@minfer/gguf";

export const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
export const f32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.FLOAT32, value });
export const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });
export const bool = (key: string, value: boolean): GgufKV => ({ key, type: GgufValueType.BOOL, value });

export const strArray = (key: string, items: string[]): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.STRING, items },
});

export const i32Array = (key: string, items: Int32Array): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.INT32, items },
});

export const f32Array = (key: string, items: Float32Array): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.FLOAT32, items },
});

export const boolArray = (key: string, items: boolean[]): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.BOOL, items },
});

export const u8Array = (key: string, items: Uint8Array): GgufKV => ({
  key,
  type: GgufValueType.ARRAY,
  value: { itemType: GgufValueType.UINT8, items },
});
