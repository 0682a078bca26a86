/** The server's reasoning settings (llama-server's `--reasoning-format`, `--reasoning-budget`, `--reasoning-budget-message`). */

import { ServerError } from "../server-error.js";
import { isReasoningFormat, REASONING_FORMATS, type ReasoningFormat } from "./tags.js";

export interface ReasoningSettings {
  /** Default of requests without `reasoning_format`. */
  readonly format: ReasoningFormat;
  /** Tokens a think block may hold; -1: no limit. */
  readonly budget: number;
  /** Text forced before the end tag when the budget is spent ("" : none). */
  readonly budgetMessage: string;
}

/** llama-server's defaults: `auto` (thinking in reasoning_content), no budget, no message. */
export const REASONING_DEFAULTS: ReasoningSettings = Object.freeze({
  format: "auto",
  budget: -1,
  budgetMessage: "",
});

/** The settings from ServerOptions' fields, checked (a ServerError INVALID_ARGUMENT naming the option). */
export function reasoningSettings(o: {
  reasoningFormat?: ReasoningFormat | undefined;
  reasoningBudget?: number | undefined;
  reasoningBudgetMessage?: string | undefined;
}): ReasoningSettings {
  const format = o.reasoningFormat ?? REASONING_DEFAULTS.format;
  if (!isReasoningFormat(format))
    throw new ServerError(
      "INVALID_ARGUMENT",
      `reasoningFormat must be one of ${REASONING_FORMATS.join(", ")}, got ${JSON.stringify(format)}`,
    );
  const budget = o.reasoningBudget ?? REASONING_DEFAULTS.budget;
  if (!Number.isSafeInteger(budget) || budget < -1)
    throw new ServerError(
      "INVALID_ARGUMENT",
      `reasoningBudget must be -1 (no limit) or an integer >= 0, got ${String(budget)}`,
    );
  const budgetMessage = o.reasoningBudgetMessage ?? REASONING_DEFAULTS.budgetMessage;
  if (typeof budgetMessage !== "string")
    throw new ServerError("INVALID_ARGUMENT", "reasoningBudgetMessage must be a string");
  return { format, budget, budgetMessage };
}
