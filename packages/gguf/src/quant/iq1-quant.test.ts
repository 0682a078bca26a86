// The IQ1_S / IQ1_M quantizers (iq1-quant.ts): errors against llama.cpp's on the same data, and the
// edge rows of iquant-cases.ts. llama.cpp quantizes them only from an importance (so does
// quantize()): they have no plain figures.
import { iquantCases } from "./iquant-cases.js";

// llama.cpp's figures (how: iquant-cases.ts). Measured here (weighted): IQ1_S 0.37622 (0.967×),
// IQ1_M 0.32065 (0.967×). (The least-squares fit alone gives 0.90×; the unit-gain block scale of
// iq1-quant.ts trades that for a lower KL divergence in a model.)
iquantCases({
  name: "IQ1_S",
  bytes: 50,
  llama: {
    normal: { weighted: 0.388890987 },
    spikes: { weighted: 0.165118105 },
    outliers: { weighted: 4.885202268 },
  },
  bound: { weighted: 0.99 },
  constantTol: 1e-3,
  symmetric: false,
});

iquantCases({
  name: "IQ1_M",
  bytes: 56,
  llama: {
    normal: { weighted: 0.33153578 },
    spikes: { weighted: 0.133960279 },
    outliers: { weighted: 3.968724728 },
  },
  bound: { weighted: 0.99 },
  constantTol: 1e-3,
  symmetric: false,
});
