/** Ways building, planning or encoding a graph can fail. */
export type IrErrorCode =
  | "SHAPE_MISMATCH"
  | "BAD_DTYPE"
  /** An op's parameter is out of its domain (rope mode, concat dim, top-k k, …). */
  | "INVALID_ARGUMENT"
  | "BAD_VIEW"
  | "BAD_GRAPH"
  | "BAD_PROGRAM"
  /** An op the IR has no shape rule for. */
  | "UNSUPPORTED_OP";

/** The error class of `@minfer/ir`: names the node, the op and the shapes when it is about one. */
export class IrError extends Error {
  override readonly name = "IrError";
  readonly code: IrErrorCode;
  /** The node concerned, when there is one. */
  readonly node: string | undefined;

  constructor(code: IrErrorCode, message: string, node?: string) {
    super(node !== undefined ? `${node}: ${message}` : message);
    this.code = code;
    this.node = node;
  }
}
