// A server stand-in for orphan-children.test.ts: starts a ChildPool with warm custom-tool
// processes, prints their pids as one JSON line, then idles until it is killed.
const [poolModule, runnerPath, warm] = process.argv.slice(2);
const { ChildPool } = await import(poolModule);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const pool = new ChildPool({ runnerPath, cwd: process.cwd(), env: process.env, log: quiet, warm: Number(warm) });
pool.prewarm();
process.stdout.write(`${JSON.stringify(pool.pids())}\n`);
setInterval(() => undefined, 60_000);
