/**
 * Runs the tool calls of one model response: a call that touches a path another call before
 * it also touches starts once that call has ended, so calls on one file run one after
 * another in the order the model wrote them (two parallel edits of one file would each read
 * it before either wrote, and one edit would be lost). Every other call starts at once.
 * Results come back in call order. `run` is expected never to reject (the tool-call state
 * machine answers every failure); if it does, the calls after it on its paths still run.
 */
export function runInPathOrder<C, R>(calls: readonly C[], touches: (call: C) => readonly string[], run: (call: C) => Promise<R>): Promise<R[]> {
  const lastOnPath = new Map<string, Promise<unknown>>();
  return Promise.all(
    calls.map((call) => {
      const paths = [...new Set(touches(call))];
      const before = paths.flatMap((path) => lastOnPath.get(path) ?? []);
      const result = before.length === 0 ? run(call) : Promise.all(before).then(() => run(call));
      const settled = result.catch(() => undefined);
      for (const path of paths) lastOnPath.set(path, settled);
      return result;
    }),
  );
}
