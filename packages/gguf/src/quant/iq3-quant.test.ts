// The IQ3_XXS / IQ3_S quantizers (iq3-quant.ts): errors against llama.cpp's on the same data, and
// the edge rows of iquant-cases.ts.
import { iquantCases } from "./iquant-cases.js";

// llama.cpp's figures (how: iquant-cases.ts). Measured here: IQ3_XXS plain 0.17977 (0.84×),
// weighted 0.11612 (0.914×); IQ3_S plain 0.12977 (0.79×), weighted 0.09151 (0.872×).
iquantCases({
  name: "IQ3_XXS",
  bytes: 98,
  llama: {
    normal: { plain: 0.214008721, weighted: 0.12704924 },
    spikes: { plain: 0.108170657, weighted: 0.070174939 },
    outliers: { plain: 2.540360637, weighted: 2.171981371 },
  },
  bound: { plain: 0.87, weighted: 0.94 },
  constantTol: 1e-3,
  symmetric: true,
});

iquantCases({
  name: "IQ3_S",
  bytes: 110,
  llama: {
    normal: { plain: 0.165121638, weighted: 0.104976268 },
    spikes: { plain: 0.191738761, weighted: 0.144267207 },
    outliers: { plain: 2.182536901, weighted: 2.048350814 },
  },
  bound: { plain: 0.82, weighted: 0.9 },
  constantTol: 1e-3,
  symmetric: true,
});
