/**
 * The server's layers, lowest first: a module may import its own layer and the ones below, never one above,
 * and no import circle anywhere. Entry points (index.ts, cluster.ts, *-cli.ts), tests and test support sit on
 * top and may import anything. The browser (app/, components/) reaches the server only through its contracts.
 * docs/architecture.md draws the same picture. Run by `npm run lint` (`npm run deps` alone).
 */
const layers = [
  ["contracts", "^server/(contracts/|errors\\.ts$|log\\.ts$)"],
  ["infrastructure", "^server/(db|redis|embedded)/"],
  ["plumbing", "^server/(limits|realtime|outbox)/"],
  ["sessions", "^server/(sessions|users)/"],
  ["reading", "^server/unread/"],
  ["sending", "^server/messages/"],
  ["membership", "^server/conversations/"],
  ["edges", "^server/(http/|modules\\.ts$|env\\.ts$)"],
  ["app", "^server/app\\.ts$"],
  ["lab", "^server/lab/"],
];
const top = "(^server/(index|cluster)\\.ts$|-cli\\.ts$|\\.test\\.ts$|^server/testing/|/bench/)";

const layering = layers.slice(0, -1).map(([name, path], i) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} must not import a layer above it (${layers
    .slice(i + 1)
    .map(([n]) => n)
    .join(", ")})`,
  severity: "error",
  from: { path, pathNot: top },
  to: {
    path: layers
      .slice(i + 1)
      .map(([, p]) => `(${p})`)
      .join("|"),
  },
}));

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", from: {}, to: { circular: true } },
    ...layering,
    {
      name: "client-only-through-contracts",
      comment: "The browser bundle may import the server's contracts (types and input schemas) and nothing else",
      severity: "error",
      from: { path: "^(app|components)/", pathNot: "\\.test\\.tsx?$|fake-transport\\.ts$" },
      to: { path: "^server/", pathNot: "^server/contracts/" },
    },
    {
      name: "lab-is-optional",
      comment: "Only the entry point (dynamically) and tests load the lab: LAB=0 leaves it out of the server",
      severity: "error",
      from: { path: "^server/", pathNot: `^server/lab/|${top}` },
      to: { path: "^server/lab/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|\\.next|\\.data|server/db/generated)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
