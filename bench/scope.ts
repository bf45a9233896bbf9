/**
 * The scope-pattern row of `npm run bench` (issue 28): a `servers.include` hostname pattern that backtracks
 * exponentially, `([a-z0-9]+-?)+\.example\.net`, matched by the daemon's own scope code (config/scope.ts, RE2
 * through re2js) against hostnames of 70 characters in another domain, in this process. Under V8's backtracking
 * engine a single such hostname of 31 characters took 12–16 s; RE2's time is linear in the hostname's length.
 */
import { compileHostname, inScope } from '../dist/config/scope.js';
import type { Row } from './options.ts';

/** The pattern, as a config file gives it. */
const EVIL = '([a-z0-9]+-?)+\\.example\\.net';

/**
 * Matches EVIL against `servers` long hostnames (all out of scope); the cost per server in µs as a row. Throws
 * when one of them is found in scope (a wrong answer is no measurement).
 */
export function scopeRow(servers = 10_000): Row {
  const hostname = compileHostname(EVIL);
  if (typeof hostname === 'string') throw new Error(`bench: ${EVIL}: ${hostname}`);
  const scope = { include: [{ hostname }], exclude: [] };
  const hosts = Array.from({ length: servers }, (_, i) => `${'a'.repeat(55)}${String(i).padStart(5, '0')}.other.org`);
  const started = performance.now();
  let kept = 0;
  for (const [i, host] of hosts.entries())
    if (inScope(scope, { serverId: String(i), location: 'fra1', hostname: host })) kept++;
  const ms = performance.now() - started;
  if (kept !== 0) throw new Error(`bench: ${EVIL} kept ${kept} hostnames of another domain in scope`);
  return {
    what: 'scope: exponential hostname pattern, per server',
    measured: (ms * 1000) / servers,
    unit: 'µs',
    reference: `\`${EVIL}\` against ${servers.toLocaleString('en')} hostnames of ${hosts[0]!.length} characters in another domain: ${ms.toFixed(0)} ms in all, none in scope`,
    target: 1000,
    rule: '≤ 1 ms (1000 µs) a server',
  };
}
