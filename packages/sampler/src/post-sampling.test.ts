import { describe, expect, it } from "vitest";
import { Sampler } from "./sampler.js";

// Post-sampling probabilities: the distribution a token was drawn from after the truncation stages
// and the temperature, checked against a softmax computed here.

const softmax = (xs: number[], t: number) => {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp((x - m) / t));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
};

describe("postSamplingProbs", () => {
  it("is the softmax of the kept candidates at the temperature, most probable first", () => {
    const logits = new Float32Array([0.5, 3, 1, 2.5, -1, 2]);
    const s = new Sampler({ topK: 3, topP: 1, minP: 0, temperature: 0.7, seed: 3 });
    const token = s.sample(logits);
    const r = s.postSamplingProbs(token, 10);
    const kept = [1, 3, 5]; // the three largest logits
    const p = softmax(
      kept.map((i) => logits[i]!),
      0.7,
    );
    expect(r.top.map((x) => x.token)).toEqual(kept);
    r.top.forEach((x, i) => {
      expect(x.p).toBeCloseTo(p[i]!, 6);
    });
    expect(r.p).toBeCloseTo(p[kept.indexOf(token)]!, 6);
    expect(s.postSamplingProbs(token, 2).top).toHaveLength(2);
  });

  it("top-p cuts what it keeps; greedy and a single candidate are the token alone", () => {
    const logits = new Float32Array([4, 3.9, 0, -2]);
    const s = new Sampler({ topK: 0, topP: 0.5, minP: 0, temperature: 1, seed: 1 });
    const t = s.sample(logits);
    const r = s.postSamplingProbs(t, 10);
    expect(r.top.length).toBeLessThan(4);
    expect(r.top.reduce((a, x) => a + x.p, 0)).toBeCloseTo(1, 6);
    const g = new Sampler({ temperature: 0 });
    const gt = g.sample(logits);
    expect(g.postSamplingProbs(gt, 5)).toEqual({ p: 1, top: [{ token: 0, p: 1 }] });
  });
});
