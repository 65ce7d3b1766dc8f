/**
 * Layers, top to bottom (each may import only from itself and the layers below it, type-only
 * imports included):
 *   main / index / cli / server / client  →  runtime  →  core  →  engines  →  tools  →  llm  →  store  →  config  →  base
 * base = src/base, src/errors.ts, src/schema.ts, src/version.ts. core and engines are one
 * level in the design (core runs engines); engines never reach into core.
 */
const LAYERS = [
  ["base", "^src/(base/|errors\\.ts|schema\\.ts|version\\.ts)"],
  ["config", "^src/config/"],
  ["store", "^src/store/"],
  ["llm", "^src/llm/"],
  ["tools", "^src/tools/"],
  ["engines", "^src/engines/"],
  ["core", "^src/core/"],
  ["runtime", "^src/runtime\\.ts"],
  ["top", "^src/(main\\.ts|index\\.ts|cli/|server/|client/|dashboard/)"],
];

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map(([name, path], i) => ({
      name: `no-upward-from-${name}`,
      comment: `${name} may import only from its own layer and those below it`,
      severity: "error",
      from: { path },
      to: { path: LAYERS.slice(i + 1).map(([, p]) => p).join("|") },
    })),
    {
      name: "store-drivers-apart",
      comment: "each driver has its own dialect; what they share (row converters, the migration runner) lives in src/store/",
      severity: "error",
      from: { path: "^src/store/(sqlite|postgres)/" },
      to: { path: "^src/store/(sqlite|postgres)/", pathNot: "^src/store/$1/" },
    },
    {
      name: "cluster-wraps",
      comment: "the cluster wraps the single-node core (its placement, fences and event-log writer are chosen in runtime.ts); core outside core/cluster never imports it",
      severity: "error",
      from: { path: "^src/core/", pathNot: "^src/core/cluster/" },
      to: { path: "^src/core/cluster/" },
    },
    { name: "no-circular", severity: "error", from: { path: "^src/" }, to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } }, comment: "value imports never form a cycle (type-only cycles are erased at build)" },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^(dist|node_modules)/" },
  },
};
