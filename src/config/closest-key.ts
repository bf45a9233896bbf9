/**
 * The "did you mean" of an unknown config key: the known key closest to it by edit distance (Levenshtein:
 * insertions, deletions, substitutions), only when it is close enough to be a typo (`requre_approval` →
 * `require_approval`), never a guess between unrelated words.
 */

/** Edit distance between `a` and `b`, one row of the table at a time. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/**
 * The key of `known` closest to `key`, when at most a third of `key`'s characters (at least 1, at most 3) are
 * off; the first of equally close ones. Undefined when none is that close.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}
