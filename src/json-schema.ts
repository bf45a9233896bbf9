/**
 * Small TypeBox builders for the shapes this project's schemas share (config file, webhook and operator
 * bodies), each emitting exactly the JSON Schema Ajv validates with, and the type derived from it. Build time
 * only: the `*.schema.ts` declarations use them, and scripts/schemas.ts generates the plain JSON Schema the
 * daemon loads (issue 53: nothing at run time loads TypeBox).
 */
import { Type, type TSchema } from 'typebox';

interface Annotations {
  default?: unknown;
  description?: string;
  /** docs only (config/schema.ts): what the value counts */
  unit?: string;
  /** docs only (config/schema.ts): a configuration reload applies it */
  reloadable?: boolean;
}

/** Exactly these JSON values (`enum`: Ajv's error lists them; never a coercion). */
export const oneOf = <const T extends readonly (string | number)[]>(
  values: T,
  options: Annotations & { default?: T[number] } = {},
) => Type.Unsafe<T[number]>({ enum: [...values], ...options });

/** Exactly this value (`const`). */
export const exactly = <const T extends string>(value: T) => Type.Unsafe<T>({ const: value });

/** A mapping of strings to strings (labels, matchers, users). */
export const stringMap = (options: Annotations & { default?: Record<string, string> } = {}) =>
  Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' }, ...options });

/** An object whose unknown keys are errors. */
export const strictObject = <T extends Record<string, TSchema>>(properties: T, options: Annotations = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });
