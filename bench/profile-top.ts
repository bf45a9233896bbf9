/**
 * The heaviest self-time entries of a V8 CPU profile (`node --cpu-prof`, or `bench/size.ts --profile FILE`):
 * each function (name, file:line) with the time sampled in it, summed over its nodes, and its share of the
 * non-idle time; `(idle)` is left out of the shares. A sampling heap profile (`bench/size.ts --alloc-profile
 * FILE`, `node --heap-prof`) is read the same way: the bytes allocated in each function. Paths are shortened
 * to the package or to dist/.
 *
 *   node bench/profile-top.ts steady.cpuprofile|steady.heapprofile [--top 15]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
/** A sampling heap profile: a tree of frames, each with the bytes sampled in it. */
interface HeapNode {
  callFrame: ProfileNode['callFrame'];
  selfSize: number;
  children: HeapNode[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '15' } },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/profile-top.ts FILE.cpuprofile [--top 15]');
const parsed = JSON.parse(readFileSync(file, 'utf8')) as Profile | { head: HeapNode };

/** A frame's place: the package (node_modules/NAME) or the path from dist/, and its line (1-based). */
function where(frame: ProfileNode['callFrame']): string {
  if (!frame.url) return '';
  const url = frame.url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  const path = pkg ? `${pkg[1]}/${pkg[2]}` : url.replace(/^.*?\/(dist|bench)\//, '$1/');
  return `${path}:${frame.lineNumber + 1}`;
}
const keyOf = (frame: ProfileNode['callFrame']) => `${frame.functionName || '(anonymous)'} ${where(frame)}`.trim();

/** Self cost per function: µs of a CPU profile, bytes of a heap profile. */
const self = new Map<string, number>();
const add = (key: string, amount: number) => self.set(key, (self.get(key) ?? 0) + amount);
const heap = 'head' in parsed;
if ('head' in parsed) {
  const walk = (node: HeapNode) => {
    add(keyOf(node.callFrame), node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(parsed.head);
} else {
  const nodeKey = new Map(parsed.nodes.map((node) => [node.id, keyOf(node.callFrame)]));
  for (const [i, id] of parsed.samples.entries()) add(nodeKey.get(id)!, parsed.timeDeltas[i] ?? 0);
}
self.delete('(idle)');
const total = [...self.values()].reduce((a, b) => a + b, 0);
const amount = (n: number) => (heap ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${(n / 1000).toFixed(0)} ms`);
console.log(`${file}: ${amount(total)} sampled${heap ? ' (allocated, freed or not)' : ', not idle'}\n`);
console.log(`| # | ${heap ? 'allocated' : 'self time'} | share | function (where) |`);
console.log('|---|---|---|---|');
const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
for (const [i, [key, n]] of top.entries())
  console.log(`| ${i + 1} | ${amount(n)} | ${((100 * n) / total).toFixed(1)} % | \`${key}\` |`);
