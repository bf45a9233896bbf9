/**
 * The layering of src/ (see docs/architecture.md), checked by `npm run lint:layers` in `npm test`. Data flows
 * one way — config → upstream → collectors → metrics / graphs → HTTP, and HTTP → remediation → store — and a
 * lower layer never imports a higher one, type imports included (the swc parser keeps `import type`
 * declarations, which TypeScript would erase). The files at the top of src/ that wire things up (main, cli,
 * daemon, app, accounts) may import anything below them; the leaf modules there (errors, logger, …) are lowest.
 */
const layers = [
  // lowest first: a module may import its own layer and any layer listed before it
  ['src/(errors|logger|version|slices|scrub|json-schema)\\.ts$'],
  ['src/config/'],
  ['src/upstream/', 'src/simulator/'],
  ['src/graphs/'],
  ['src/store/'],
  ['src/metrics/'],
  ['src/collectors/'],
  ['src/remediation/'],
  ['src/scheduler/'],
  ['src/ha/'],
  ['src/http/'],
];
const layerOf = layers.map((paths) => `(${paths.join('|')})`);
const forbidden = [
  {
    name: 'no-circular',
    comment: 'a file-level import cycle (type imports included)',
    severity: 'error',
    from: {},
    to: { circular: true },
  },
  {
    name: 'no-folder-circular',
    comment: 'two folders of src/ import each other',
    severity: 'error',
    scope: 'folder',
    from: { path: '^src/' },
    to: { circular: true },
  },
  ...layerOf.slice(0, -1).map((lower, i) => ({
    name: `layer-${i}-imports-higher`,
    comment: `${lower} is below ${layerOf.slice(i + 1).join(', ')}: it may not import them`,
    severity: 'error',
    from: { path: `^${lower}` },
    to: { path: `^(${layerOf.slice(i + 1).join('|')}|src/[^/]+\\.ts$)`, pathNot: `^${layers.slice(0, 1)[0][0]}` },
  })),
];
module.exports = {
  forbidden,
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
