// The IQ2_XXS / IQ2_XS / IQ2_S quantizers (iq2-quant.ts): errors against llama.cpp's on the same
// data, and the edge rows of iquant-cases.ts. llama.cpp quantizes IQ2_XXS and IQ2_XS only from an
// importance (so does quantize()): they have no plain figures.
import { iquantCases } from "./iquant-cases.js";

// llama.cpp's figures (how: iquant-cases.ts). Measured here (weighted): IQ2_XXS 0.23885 (0.906×),
// IQ2_XS 0.20353 (0.920×), IQ2_S 0.18417 (0.918×; plain 0.24599, 0.929×).
iquantCases({
  name: "IQ2_XXS",
  bytes: 66,
  llama: {
    normal: { weighted: 0.263622732 },
    spikes: { weighted: 0.146606265 },
    outliers: { weighted: 4.881437726 },
  },
  bound: { weighted: 0.93 },
  constantTol: 1e-3,
  symmetric: true,
});

iquantCases({
  name: "IQ2_XS",
  bytes: 74,
  llama: {
    normal: { weighted: 0.221119618 },
    spikes: { weighted: 0.113034805 },
    outliers: { weighted: 3.879197624 },
  },
  bound: { weighted: 0.94 },
  constantTol: 1e-3,
  symmetric: true,
});

iquantCases({
  name: "IQ2_S",
  bytes: 82,
  llama: {
    normal: { plain: 0.264839964, weighted: 0.20058032 },
    spikes: { plain: 0.144868347, weighted: 0.106304552 },
    outliers: { plain: 4.657994305, weighted: 3.629533025 },
  },
  bound: { plain: 0.95, weighted: 0.94 },
  constantTol: 1e-3,
  symmetric: true,
});
