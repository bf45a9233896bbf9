/**
 * Where a config problem sits, as promtool and compilers say it: `FILE:14:7: remediation.rules[2].action:
 * must be one of …`. The YAML text is parsed once with its node ranges kept (the `yaml` library's
 * `parseDocument` and `LineCounter`); a problem's key, the dotted path the schema and the checks name
 * (`remediation.rules.2.action`), is looked up in that tree. List items are printed as JSONPath and yq name
 * them, `rules[2]`, counted from 0 as the dotted keys always were (the line number is what tells them apart).
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { ConfigError } from '../errors.js';

/** The file a config was read from and where each key of it sits. */
export interface ConfigSource {
  /** the file's name as it was given (printed in front of each position) */
  readonly file: string;
  /**
   * `line:column` (both from 1) of the key at `path`: the key itself for a map entry, the item for a list
   * item; for a key the file does not have inside a list item (a required key missing), that item's.
   * Undefined when the file has neither (a default, an environment override).
   */
  positionOf(path: readonly string[]): string | undefined;
}

/**
 * Parses YAML `text` read from `file`: its value (as `yaml`'s `parse` gives it) and its ConfigSource.
 * A syntax error becomes a ConfigError naming the file, line and column.
 */
export function parseConfigSource(file: string, text: string): { value: unknown; source: ConfigSource } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${line}:${col}`;
  };
  const [error] = doc.errors;
  if (error) {
    throw new ConfigError([`${file}:${at(error.pos[0])}: (yaml): ${error.message.split('\n')[0]}`], {
      cause: error,
    });
  }
  const positionOf = (path: readonly string[]): string | undefined => {
    let node: unknown = doc.contents;
    let item: string | undefined;
    for (const [i, part] of path.entries()) {
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === part);
        if (!pair) return item;
        if (last) return isScalar(pair.key) && pair.key.range ? at(pair.key.range[0]) : item;
        node = pair.value;
      } else if (isSeq(node) && /^\d+$/.test(part)) {
        const found = node.items[Number(part)] as Node | undefined;
        if (!found?.range) return item;
        item = at(found.range[0]);
        if (last) return item;
        node = found;
      } else return item;
    }
    return undefined;
  };
  return { value: doc.toJS(), source: { file, positionOf } };
}

/**
 * `key: problem` lines as printed: list items named as JSONPath and yq name them, `rules[2]` (counted from 0,
 * as the dotted keys counted them), wherever `doc`, the document checked, has a list; with `source`,
 * `file:line:column: ` in front of each line whose key the file has.
 */
export function renderProblems(lines: readonly string[], doc: unknown, source?: ConfigSource): string[] {
  return lines.map((line) => {
    const split = line.indexOf(': ');
    if (split <= 0) return line;
    const path = line.slice(0, split).split('.');
    let node = doc;
    let key = '';
    // The key up to its last list item, dotted and as printed: the problem's text may name a key under it.
    let item: [string, string] | undefined;
    for (const [i, part] of path.entries()) {
      if (Array.isArray(node) && /^\d+$/.test(part)) {
        key += `[${part}]`;
        node = node[Number(part)];
        item = [`${path.slice(0, i + 1).join('.')}.`, `${key}.`];
      } else {
        key += key === '' ? part : `.${part}`;
        node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
      }
    }
    const rest = line.slice(split);
    const text = `${key}${item ? rest.replaceAll(item[0], item[1]) : rest}`;
    const position = source?.positionOf(path);
    return position ? `${source!.file}:${position}: ${text}` : text;
  });
}
