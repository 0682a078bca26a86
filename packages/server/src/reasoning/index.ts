/**
 * llama-server's reasoning handling for chat: a model's think block split off its text into
 * `reasoning_content` (`--reasoning-format`, `reasoning_format`), and a token budget for the block
 * (`--reasoning-budget`).
 */

export type { BudgetRequest, BudgetTokenizer, ReasoningBudgetSpec } from "./budget.js";
export { budgetFor, ReasoningBudget } from "./budget.js";
export type { ReasoningSettings } from "./options.js";
export { REASONING_DEFAULTS, reasoningSettings } from "./options.js";
export type { ChatOutputOptions, ChatReading } from "./output.js";
export { ChatOutput, chatOutput, thinkBeforeCalls } from "./output.js";
export type { ReasoningSplitterOptions, Split } from "./splitter.js";
export { ReasoningSplitter } from "./splitter.js";
export type { ReasoningFormat, ThinkTags } from "./tags.js";
export {
  isReasoningFormat,
  parseReasoningFormat,
  promptOpensThink,
  REASONING_FORMATS,
  thinkTagsOf,
} from "./tags.js";
