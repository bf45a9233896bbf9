/**
 * What a heap snapshot (`v8.writeHeapSnapshot`, `.heapsnapshot`) is made of, as tables for bench/README.md: the
 * total (the live heap after the collection the snapshot makes), by V8 node type (code, strings, arrays…), the
 * constructors by retained size (the objects only they keep alive, as Chrome's Summary view adds them up) and
 * the single objects that retain most, each with the edge it hangs from (`owner.edge`), which names the
 * container (a Map of the daemon's, prom-client's `hashMap`…).
 *
 *   node --max-old-space-size=6000 bench/heap-summary.ts FILE [--top 25] [--per 10000] [--expand AccountState]
 *
 * `--expand NAME` lists what the largest object of that constructor retains, one level down the dominator tree.
 * `--per N` adds a column of bytes per N (servers). Retained sizes come from the dominator tree (Cooper, Harvey
 * and Kennedy's iterative algorithm) over every edge but weak ones.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: {
    top: { type: 'string', default: '25' },
    per: { type: 'string' },
    expand: { type: 'string', multiple: true },
  },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/heap-summary.ts FILE [--top 25] [--per 10000]');
const top = Number(values.top);
const per = values.per === undefined ? undefined : Number(values.per);

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[]];
      edge_fields: string[];
      edge_types: [string[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}
const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const { meta } = snap.snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
  meta.node_fields.indexOf(f),
) as [number, number, number, number];
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [
  number,
  number,
  number,
];
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const WEAK = edgeTypes.indexOf('weak');
const nodes = snap.nodes;
const edges = snap.edges;
const count = nodes.length / NF;

// First edge of each node, and the edges' target node indexes.
const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += nodes[i * NF + nEdges]! * EF;
}
firstEdge[count] = edges.length;
const target = (e: number) => edges[e + eTo]! / NF;
const self = (i: number) => nodes[i * NF + nSelf]!;
const typeOf = (i: number) => nodeTypes[nodes[i * NF + nType]!]!;
const nameOf = (i: number) => snap.strings[nodes[i * NF + nName]!]!;
const strong = (e: number) => edges[e + eType] !== WEAK;

// Post-order of a depth-first walk from the root (node 0) over strong edges.
const order = new Int32Array(count).fill(-1);
const postorder: number[] = [];
{
  const stack = [0];
  const cursor = new Uint32Array(count);
  order[0] = -2;
  cursor[0] = firstEdge[0]!;
  while (stack.length > 0) {
    const n = stack[stack.length - 1]!;
    let pushed = false;
    while (cursor[n]! < firstEdge[n + 1]!) {
      const e = cursor[n]!;
      cursor[n] = e + EF;
      if (!strong(e)) continue;
      const t = target(e);
      if (order[t] !== -1) continue;
      order[t] = -2;
      cursor[t] = firstEdge[t]!;
      stack.push(t);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      order[n] = postorder.length;
      postorder.push(n);
    }
  }
}
const reachable = postorder.length;
// Predecessors (strong edges between reachable nodes), by post-order number.
const predCount = new Uint32Array(reachable + 1);
for (let n = 0; n < count; n++) {
  if (order[n]! < 0) continue;
  for (let e = firstEdge[n]!; e < firstEdge[n + 1]!; e += EF)
    if (strong(e) && order[target(e)]! >= 0) predCount[order[target(e)]!]!++;
}
const predStart = new Uint32Array(reachable + 1);
for (let i = 0; i < reachable; i++) predStart[i + 1] = predStart[i]! + predCount[i]!;
const preds = new Uint32Array(predStart[reachable]!);
const fill = predStart.slice();
for (let n = 0; n < count; n++) {
  if (order[n]! < 0) continue;
  for (let e = firstEdge[n]!; e < firstEdge[n + 1]!; e += EF)
    if (strong(e) && order[target(e)]! >= 0) preds[fill[order[target(e)]!]!++] = order[n]!;
}
// Dominators by post-order number; the root is the last.
const rootPo = reachable - 1;
const idom = new Int32Array(reachable).fill(-1);
idom[rootPo] = rootPo;
for (let changed = true; changed; ) {
  changed = false;
  for (let b = rootPo - 1; b >= 0; b--) {
    let next = -1;
    for (let p = predStart[b]!; p < predStart[b + 1]!; p++) {
      let a = preds[p]!;
      if (idom[a] === -1) continue;
      if (next === -1) {
        next = a;
        continue;
      }
      let c = next;
      while (a !== c) {
        while (a < c) a = idom[a]!;
        while (c < a) c = idom[c]!;
      }
      next = a;
    }
    if (next !== -1 && idom[b] !== next) {
      idom[b] = next;
      changed = true;
    }
  }
}
const retained = new Float64Array(reachable);
for (let b = 0; b < reachable; b++) retained[b]! += self(postorder[b]!);
for (let b = 0; b < rootPo; b++) if (idom[b]! >= 0) retained[idom[b]!]! += retained[b]!;

/** How a node is called in the tables: an object's constructor, else its type (and a string's first characters). */
function label(n: number): string {
  const type = typeOf(n);
  if (type === 'object' || type === 'closure' || type === 'native' || type === 'synthetic') return nameOf(n);
  if (type === 'hidden' || type === 'array' || type === 'object shape' || type === 'code')
    return `(${type}) ${nameOf(n)}`.slice(0, 60);
  return `(${type})`;
}
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const perText = (b: number) => (per ? ` | ${((b / per) | 0).toLocaleString('en')} B` : '');
const perHead = per ? ` | per ${per.toLocaleString('en')}` : '';

let total = 0;
const byType = new Map<string, number>();
for (let b = 0; b < reachable; b++) {
  const n = postorder[b]!;
  total += self(n);
  byType.set(typeOf(n), (byType.get(typeOf(n)) ?? 0) + self(n));
}
console.log(`${file}: ${count} nodes, ${reachable} reachable; ${mib(total)} in all (self sizes of the reachable)\n`);
console.log(`| node type | self size${perHead} |\n|---|---|${per ? '---|' : ''}`);
for (const [type, size] of [...byType].sort((a, b) => b[1] - a[1]))
  console.log(`| ${type} | ${mib(size)}${perText(size)} |`);

// By constructor: the retained size of each node not dominated by another of the same label (no double count).
const labelIds = new Map<string, number>();
const labelOf = new Int32Array(reachable);
for (let b = 0; b < reachable; b++) {
  const l = label(postorder[b]!);
  let id = labelIds.get(l);
  if (id === undefined) {
    id = labelIds.size;
    labelIds.set(l, id);
  }
  labelOf[b] = id;
}
const byLabel = new Map<string, { retained: number; self: number; count: number }>();
const labels = [...labelIds.keys()];
const sums = labels.map(() => ({ retained: 0, self: 0, count: 0 }));
for (let b = 0; b < rootPo; b++) {
  const id = labelOf[b]!;
  const entry = sums[id]!;
  entry.self += self(postorder[b]!);
  entry.count++;
  let d = idom[b]!;
  while (d !== rootPo && labelOf[d] !== id) d = idom[d]!;
  if (d === rootPo) entry.retained += retained[b]!;
}
for (const [i, l] of labels.entries()) byLabel.set(l, sums[i]!);
console.log(`\n| constructor (or type) | count | self | retained${perHead} |\n|---|---|---|---|${per ? '---|' : ''}`);
for (const [l, e] of [...byLabel].sort((a, b) => b[1].retained - a[1].retained).slice(0, top))
  console.log(`| \`${l}\` | ${e.count} | ${mib(e.self)} | ${mib(e.retained)}${perText(e.retained)} |`);

// The single objects that retain most, below the (GC roots) level, with the edge from their dominator.
function edgeName(from: number, to: number): string {
  for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += EF) {
    if (target(e) !== to) continue;
    const type = edgeTypes[edges[e + eType]!];
    const name = edges[e + eName]!;
    return type === 'element' || type === 'hidden' ? `[${name}]` : String(snap.strings[name]);
  }
  return '?';
}
/** An object's `name` property when it is a string (a metric's name), for the tables. */
function ownName(n: number): string {
  for (let e = firstEdge[n]!; e < firstEdge[n + 1]!; e += EF) {
    if (edgeTypes[edges[e + eType]!] !== 'property' || snap.strings[edges[e + eName]!] !== 'name') continue;
    const t = target(e);
    if (typeOf(t).includes('string')) return ` ${nameOf(t).slice(0, 70)}`;
  }
  return '';
}
/** An object's first property names, `{a, b, c}`, to tell one kind of plain object from another. */
function fields(n: number): string {
  if (typeOf(n) !== 'object') return '';
  const names: string[] = [];
  for (let e = firstEdge[n]!; e < firstEdge[n + 1]! && names.length < 6; e += EF)
    if (edgeTypes[edges[e + eType]!] === 'property') {
      const name = snap.strings[edges[e + eName]!]!;
      if (name !== '__proto__' && name !== 'map') names.push(name);
    }
  return names.length > 0 ? ` {${names.join(', ')}}` : '';
}
function row(b: number): string {
  const n = postorder[b]!;
  const d = postorder[idom[b]!]!;
  const from = idom[b] === rootPo ? '(held on several paths)' : `\`${label(d)}\`.${edgeName(d, n)}`;
  return `| \`${label(n)}\`${ownName(n)} | ${mib(retained[b]!)}${perText(retained[b]!)} | ${from} |`;
}
// An object that only restates its dominator (a Map's table, the one field of a wrapper) is left out.
console.log(`\n| object | retained${perHead} | hangs from |\n|---|---|${per ? '---|' : ''}---|`);
const objects = [...Array(rootPo).keys()]
  .filter((b) => ['object', 'closure', 'array'].includes(typeOf(postorder[b]!)))
  .filter((b) => idom[b] === rootPo || retained[b]! < 0.9 * retained[idom[b]!]!)
  .sort((a, b) => retained[b]! - retained[a]!)
  .slice(0, top);
for (const b of objects) console.log(row(b));

for (const name of values.expand ?? []) {
  let biggest = -1;
  for (let b = 0; b < rootPo; b++)
    if (nameOf(postorder[b]!) === name && (biggest === -1 || retained[b]! > retained[biggest]!)) biggest = b;
  if (biggest === -1) continue;
  // Down through the objects that restate their dominator (a Map and its table), then what that holds, grouped
  // by constructor and the edge it hangs from (10,000 server records are one row).
  const children = (of: number) => [...Array(rootPo).keys()].filter((b) => idom[b] === of);
  let at = biggest;
  const chain = [row(at)];
  for (let kids = children(at); kids.length > 0; kids = children(at)) {
    const largest = kids.reduce((a, b) => (retained[b]! > retained[a]! ? b : a));
    if (retained[largest]! < 0.9 * retained[at]!) break;
    at = largest;
    chain.push(row(at));
  }
  const groups = new Map<string, { count: number; retained: number }>();
  for (const b of children(at)) {
    const n = postorder[b]!;
    const edge = edgeName(postorder[at]!, n).replace(/^\[?\d+\]?$/, '[i]');
    const key = `\`${label(n)}\`${ownName(n)}${fields(n)} | ${edge}`;
    const group = groups.get(key) ?? { count: 0, retained: 0 };
    group.count++;
    group.retained += retained[b]!;
    groups.set(key, group);
  }
  console.log(`\nWhat the largest \`${name}\` retains (${mib(retained[biggest]!)}):\n`);
  console.log(`| object | retained${perHead} | hangs from |\n|---|---|${per ? '---|' : ''}---|`);
  for (const line of chain) console.log(line);
  console.log(`\n| what it holds | count | retained${perHead} | edge |\n|---|---|---|${per ? '---|' : ''}---|`);
  for (const [key, group] of [...groups].sort((a, b) => b[1].retained - a[1].retained).slice(0, top)) {
    const [what, edge] = key.split(' | ');
    console.log(`| ${what} | ${group.count} | ${mib(group.retained)}${perText(group.retained)} | ${edge} |`);
  }
}
