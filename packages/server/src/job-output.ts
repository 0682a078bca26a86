import type { TokenLogprob } from "@minfer/sampler";
import type { Job, JobFinish, PostSampling } from "./job.js";

// A job's output, the part of a step that the next decode does not need: the text of its tokens
// (detokenized, stop strings matched) and the reports of them (`onToken`: an SSE write).

/** A token a job sampled and accepted, whose output is still to come. */
export interface SampledToken {
  readonly id: number;
  /** Present when the job asked for log-probabilities. */
  readonly logprob?: number;
  readonly top?: readonly TokenLogprob[];
  readonly post?: PostSampling;
}

/** How a job ends once its output is out; `stopped`: no held-back text is flushed. */
export interface Ending {
  readonly finish: JobFinish;
  readonly stopped: boolean;
}

/**
 * Detokenizes `t`, matches the job's stop strings and reports the released text; returns whether
 * a stop string ended the text (what it released is then cut before the stop string).
 */
export function emitToken(j: Job, t: SampledToken): boolean {
  const r = j.stops.push(j.decoder.push(t.id));
  j.text += r.text;
  if (r.stopped) j.stopWord = r.stop;
  const lp =
    t.logprob !== undefined
      ? { logprob: t.logprob, top: t.top ?? [], ...(t.post ? { post: t.post } : {}) }
      : {};
  j.spec.onToken?.({ token: t.id, text: r.text, ...lp });
  return r.stopped;
}

/**
 * At the end of a job not cut by a stop string: the text held back (half a character, a possible
 * stop string's start) is released and reported, unless the job was aborted. Returns the finish,
 * "stop" when the held-back text held a stop string.
 */
export function flushText(j: Job, finish: JobFinish): JobFinish {
  const rest = j.stops.push(j.decoder.flush());
  if (rest.stopped) j.stopWord = rest.stop;
  const tail = rest.stopped ? rest.text : rest.text + j.stops.flush();
  j.text += tail;
  if (tail && finish !== "abort")
    try {
      j.spec.onToken?.({ token: -1, text: tail });
    } catch {
      // the consumer is gone; the result still resolves
    }
  return rest.stopped ? "stop" : finish;
}
