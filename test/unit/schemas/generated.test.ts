import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { declarationModules, renderSchemas } from '../../../scripts/schemas.ts';
import { configFileSchema } from '../../../src/config/schema.js';
import { webhookSchema } from '../../../src/remediation/webhook.js';

// The generated plain JSON Schema modules rendered in memory from the TypeBox declarations of src/ (not dist/),
// compared with the committed files (issue 53: the daemon validates with them and never loads TypeBox).
const src = fileURLToPath(new URL('../../../src/', import.meta.url));
const modules = await renderSchemas((module) => import(`../../../src/${module}`));

describe('generated JSON Schema modules', () => {
  it.each(Object.keys(modules).map((path) => [path] as const))(
    'src/%s is up to date (else: run npm run schemas)',
    (path) => {
      const committed = readFileSync(`${src}${path}`, 'utf8');
      expect(committed === modules[path], `src/${path} differs from its declaration: run npm run schemas`).toBe(true);
    },
  );

  it('has one generated module per declaration, and no other', () => {
    expect(declarationModules().length).toBeGreaterThanOrEqual(6);
    expect(globSync('**/generated/*.ts', { cwd: src }).sort()).toEqual(Object.keys(modules).sort());
  });

  it('is plain data: no TypeBox mark, enumerable or not, survives', async () => {
    const marks = (value: unknown): string[] =>
      value !== null && typeof value === 'object'
        ? Object.getOwnPropertyNames(value).flatMap((key) =>
            key.startsWith('~') ? [key] : marks((value as Record<string, unknown>)[key]),
          )
        : [];
    const declared = await import('../../../src/config/config-file.schema.js');
    expect(marks(declared.configFileSchema).length).toBeGreaterThan(0);
    expect(marks(configFileSchema)).toEqual([]);
    expect(marks(webhookSchema)).toEqual([]);
  });

  it('validates as its declaration does: the same errors for the same document', async () => {
    const declared = await import('../../../src/remediation/webhook.schema.js');
    const bad = { version: '4', status: 'firing', alerts: [{ status: 'gone', labels: { 'a-b': 'x' } }] };
    const errors = (schema: object) => {
      const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
      validate(bad);
      return validate.errors;
    };
    expect(errors(webhookSchema)).toEqual(errors(declared.webhookSchema));
    expect(errors(webhookSchema)?.length).toBeGreaterThan(2);
  });
});
