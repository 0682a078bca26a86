// The prebuilt targets: which platform package each fills, with which binary, for which CPU.
export const TARGETS = {
  "cpu-x64": {
    package: "@minfer/backend-cpu-linux-x64-gnu",
    dir: "packages/backend-cpu-linux-x64-gnu",
    binary: "minfer_cpu.node",
    arch: "x64",
  },
  "cpu-arm64": {
    package: "@minfer/backend-cpu-linux-arm64-gnu",
    dir: "packages/backend-cpu-linux-arm64-gnu",
    binary: "minfer_cpu.node",
    arch: "arm64",
  },
  "cuda-x64": {
    package: "@minfer/backend-cuda-linux-x64-gnu",
    dir: "packages/backend-cuda-linux-x64-gnu",
    binary: "minfer_cuda.node",
    arch: "x64",
  },
};
