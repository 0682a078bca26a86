/**
 * Routes Ctrl+C (SIGINT) to `handler` instead of killing the process; a second Ctrl+C exits at
 * once with status 130. Returns the function that removes the listener again.
 */
export function onInterrupt(handler: () => void): () => void {
  let count = 0;
  const listener = () => {
    if (++count > 1) process.exit(130);
    handler();
  };
  process.on("SIGINT", listener);
  return () => {
    process.off("SIGINT", listener);
  };
}
