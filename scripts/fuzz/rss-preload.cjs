// Preloaded (node --require) into each `minfer run` of the fuzzer: at exit, the process's peak
// resident set size in KiB goes to FILE.rss, FILE being the model given with -m.
const model = process.argv[process.argv.indexOf("-m") + 1];
if (process.argv.includes("-m") && model) {
  process.on("exit", () => {
    try {
      require("node:fs").writeFileSync(`${model}.rss`, String(process.resourceUsage().maxRSS));
    } catch {}
  });
}
