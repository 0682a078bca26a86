/**
 * OpenAI tool calling for chat completions: checking `tools` / `tool_choice` / `parallel_tool_calls` and
 * the tool fields of messages, the tool-call format of a chat template, a grammar forcing calls, and the
 * parser of calls out of generated text.
 */

export type { CallFormat, ToolFormat } from "./formats.js";
export { reasoningEndMarkers, TOOL_FORMATS, TOOL_MARKERS, toolFormatOf } from "./formats.js";
export { genericToolGrammar } from "./generic-grammar.js";
export { genericMessages } from "./generic-prompt.js";
export type { ReasoningPrefix } from "./grammar.js";
export { gbnfLiteral, textWithout, toolCallGrammar } from "./grammar.js";
export type { TemplateToolCall, ToolChoice, ToolDef, ToolsRequest } from "./parse.js";
export { parseMessageToolFields, parseTools } from "./parse.js";
export type { ParsedToolCall, ToolCallDelta, ToolCallParserOptions } from "./parser.js";
export { newCallId, ToolCallParser } from "./parser.js";
export type { TemplateCaps } from "./template-caps.js";
export { templateCaps } from "./template-caps.js";
