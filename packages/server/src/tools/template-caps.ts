/**
 * What a chat template can show of a conversation, found as llama.cpp finds it: by rendering small probe
 * conversations and looking for their marker texts in the output. The generic tool-call format writes
 * what the template cannot show as text it can (generic-prompt.ts).
 */

import type { ChatTemplate } from "@minfer/tokenizer";
import type { ParsedMessage } from "../request.js";
import { polyfillMessages } from "./generic-prompt.js";

export interface TemplateCaps {
  /** It renders a system message's text. */
  readonly systemRole: boolean;
  /** It describes the `tools` variable to the model. */
  readonly tools: boolean;
  /** It renders an assistant message's calls (their arguments). */
  readonly toolCalls: boolean;
  /** It renders a tool message's result (only looked at when it renders calls). */
  readonly toolResponses: boolean;
  /** It renders several calls of one message (only looked at when it renders calls). */
  readonly parallelToolCalls: boolean;
  /** It renders a call's arguments only when they are an object, not JSON text. */
  readonly objectArguments: boolean;
  /**
   * How the template writes an assistant message with a call (the text it adds after the generation
   * prompt), shown to the model beside the tools when the template does not describe tools itself;
   * undefined when it shows neither the call's name nor its argument.
   */
  readonly example: string | undefined;
}

/** The tokens the template prints. */
export interface TemplateTokens {
  readonly bos: string;
  readonly eos: string;
}

type Render = (messages: ParsedMessage[], addGenerationPrompt: boolean, tools?: unknown[]) => string;

// The probes' marker texts and conversations (llama.cpp's, so that a template is judged the same).
const USER_NEEDLE = "<User Needle>";
const SYSTEM_NEEDLE = "<System Needle>";
const PROBE_TOOL = {
  name: "some_tool",
  type: "function",
  function: {
    name: "some_tool",
    description: "Some tool.",
    parameters: {
      type: "object",
      properties: { arg: { type: "string", description: "Some argument." } },
      required: ["arg"],
    },
  },
};
const NEEDLE_ARGS = { argument_needle: "print('Hello, World!')" };

const user = (content: string): ParsedMessage => ({ role: "user", content });
const callsMessage = (calls: unknown[]): ParsedMessage => ({
  role: "assistant",
  content: null,
  tool_calls: calls,
});
const call = (name: string, args: unknown, id = "call_1___") => ({
  id,
  type: "function",
  function: { arguments: args, name },
});

/** The caps of `template` with these tokens (probe renders that fail count as showing nothing). */
function probe(template: ChatTemplate, tokens: TemplateTokens): TemplateCaps {
  const render: Render = (messages, addGenerationPrompt, tools) =>
    template.render({
      messages,
      ...(tools ? { tools } : {}),
      addGenerationPrompt,
      bosToken: tokens.bos,
      eosToken: tokens.eos,
      now: new Date(0),
    });
  const raw = (messages: ParsedMessage[], tools?: unknown[]): string => {
    try {
      return render(messages, false, tools);
    } catch {
      return "";
    }
  };
  const shows = (text: string, ...needles: string[]) => needles.some((n) => text.includes(n));
  const argsShown = (text: string) => shows(text, '"argument_needle":', "'argument_needle':");

  const u = user(USER_NEEDLE);
  const systemRole = shows(raw([{ role: "system", content: SYSTEM_NEEDLE }, u]), SYSTEM_NEEDLE);
  const tools = shows(raw([u], [PROBE_TOOL]), "some_tool");
  const stringArgs = argsShown(raw([u, callsMessage([call("ipython", JSON.stringify(NEEDLE_ARGS))])]));
  const objectArgs = argsShown(raw([u, callsMessage([call("ipython", NEEDLE_ARGS)])]));
  const toolCalls = stringArgs || objectArgs;
  const objectArguments = !stringArgs && objectArgs;
  let parallelToolCalls = false;
  let toolResponses = false;
  if (toolCalls) {
    const args = objectArguments ? NEEDLE_ARGS : JSON.stringify(NEEDLE_ARGS);
    const first = call("test_tool1", args);
    const both = raw([u, callsMessage([first, call("test_tool2", args)])]);
    parallelToolCalls = shows(both, "test_tool1") && shows(both, "test_tool2");
    const result = { role: "tool", name: "test_tool1", content: "Some response!", tool_call_id: "call_911_" };
    toolResponses = shows(raw([u, callsMessage([first]), result]), "Some response!");
  }
  const caps = { systemRole, tools, toolCalls, toolResponses, parallelToolCalls, objectArguments };
  return {
    ...caps,
    example: tools ? undefined : example(render, { ...caps, example: undefined }, tokens.eos),
  };
}

/**
 * The text the template adds for an assistant message with a call (`tool_name` with `{"arg1":
 * "some_value"}`), its calls written as content when it does not render calls: the conversation with the
 * call, less the end-of-sequence token it may end with, past what it shares with the prompt that opens the
 * assistant's turn (a `<` is not counted in the shared part: a template may open the turn with a tag that
 * the call's own text replaces).
 */
function example(render: Render, caps: TemplateCaps, eos: string): string | undefined {
  const args = { arg1: "some_value" };
  const withCall = callsMessage([call("tool_name", caps.objectArguments ? args : '{"arg1": "some_value"}')]);
  let prefix: string;
  let full: string;
  try {
    prefix = render(polyfillMessages([user("Hey")], caps), true);
    full = render(polyfillMessages([user("Hey"), withCall], caps), false);
  } catch {
    return undefined;
  }
  const eosAt = full.lastIndexOf(eos);
  if (eosAt === prefix.length - eos.length || (full.endsWith("\n") && eosAt === full.length - eos.length - 1))
    full = full.slice(0, eosAt);
  let shared = 0;
  for (let i = 0; i < prefix.length && i < full.length; i++) {
    if (prefix[i] !== full[i]) break;
    if (prefix[i] === "<") continue;
    shared = i + 1;
  }
  const text = full.slice(shared);
  return text.includes("tool_name") || text.includes("some_value") ? text : undefined;
}

const cache = new WeakMap<ChatTemplate, Map<string, TemplateCaps>>();

/** The caps of `template` rendered with `tokens` (found once per template and tokens). */
export function templateCaps(template: ChatTemplate, tokens: TemplateTokens): TemplateCaps {
  let byTokens = cache.get(template);
  if (!byTokens) {
    byTokens = new Map();
    cache.set(template, byTokens);
  }
  const key = JSON.stringify([tokens.bos, tokens.eos]);
  let caps = byTokens.get(key);
  if (!caps) {
    caps = probe(template, tokens);
    byTokens.set(key, caps);
  }
  return caps;
}
