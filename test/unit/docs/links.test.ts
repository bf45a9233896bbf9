import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const pages = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Markdown text outside fenced code blocks. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces → `-`, repeats `-1`. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const headings = prose(readFileSync(file, 'utf8')).match(/^#{1,6} .+$/gm) ?? [];
  return new Set(
    headings.map((h) => {
      const base = h
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/ /g, '-');
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      return n ? `${base}-${n}` : base;
    }),
  );
}

describe('documentation links', () => {
  it.each(pages.map((p) => [p] as const))('%s links only to files and anchors inside the repository', (page) => {
    const text = prose(readFileSync(join(root, page), 'utf8'));
    const problems: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^(https?:|mailto:)/.test(target!)) continue;
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const file = path ? resolve(dirname(join(root, page)), path) : join(root, page);
      if (relative(root, file).startsWith('..') || /^[a-z]+:/i.test(path))
        problems.push(`${target}: outside the repository`);
      else if (!existsSync(file)) problems.push(`${target}: no such file`);
      else if (anchor && statSync(file).isFile() && file.endsWith('.md') && !anchors(file).has(anchor))
        problems.push(`${target}: no such anchor`);
    }
    expect(problems).toEqual([]);
  });
});
