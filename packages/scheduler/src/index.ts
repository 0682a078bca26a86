/**
 * The backend registry, device assignment, graph splits, the arena allocator, lowering to
 * programs, the executor, the graph cache, and a TypeScript float64 reference device.
 * @module @minfer/scheduler
 */

export type { AllocationPlan, AllocatorOptions, AllocatorStats } from "./allocator.js";
export { Allocator } from "./allocator.js";
export type { Assignment, AssignOptions, Crossing, NodePlacement, Split } from "./assign.js";
export { assign } from "./assign.js";
export type { SchedulerErrorCode } from "./errors.js";
export { SchedulerError } from "./errors.js";
export type { ExecutionContext, ExecutorOptions, RunResult } from "./executor.js";
export { Executor } from "./executor.js";
export type { GraphCacheOptions, GraphCacheStats } from "./graph-cache.js";
export { cacheKey, GraphCache } from "./graph-cache.js";
export { describeNode, extent, opQuery } from "./layout.js";
export type { ArenaItem, ArenaItemKind } from "./liveness.js";
export { arenaItems } from "./liveness.js";
export type {
  BufferRef,
  CopyStep,
  ExecutionPlan,
  Location,
  LowerOptions,
  SplitProgram,
  TensorBinding,
} from "./plan.js";
export { lower } from "./plan.js";
export { decodeValues, encodeValues } from "./reference/dtype-io.js";
export type { ReferenceBackendOptions } from "./reference-device.js";
export { REFERENCE_BACKEND, referenceBackend } from "./reference-device.js";
export type { BackendDiagnostic, DiagnosticStatus, RegistryOptions } from "./registry.js";
export { KNOWN_BACKEND_PACKAGES, Registry } from "./registry.js";
export type { PreparedGraph, SchedulerOptions } from "./scheduler.js";
export { Scheduler } from "./scheduler.js";
export type { TimingReport, TimingRow } from "./timing.js";
