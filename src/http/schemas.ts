/**
 * Shapes of what clients of this daemon's HTTP API send, defined once: the identifiers operators name, and
 * querystring integers. Bodies are validated by fastify's Ajv with type coercion off (see app.ts), so a
 * number where a string is expected is a 400, never silently turned into that string.
 */
import { BadRequestError } from '../errors.js';

/**
 * An identifier as the API gives them (`100001`, `colo-1`, `transit-1`): a letter or digit, then up to 63
 * letters, digits, `_`, `.`, `:` or `-`. No whitespace, no `/`, nothing a log or a URL would need escaping for.
 */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$';

/** JSON Schema of an identifier (server_id of operator bodies, paths and queries). */
export const idSchema = { type: 'string', pattern: ID_PATTERN } as const;

/**
 * JSON Schema of a querystring integer: query values are always strings, so the value is checked as text
 * and turned into a number by `queryInteger`, never coerced by Ajv (a repeated parameter is an array: 400).
 */
export const queryIntegerSchema = { type: 'string' } as const;

/** Plain decimal digits without sign, exponent, fraction or leading zero. */
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * The integer a querystring parameter names, within `min`…`max`; `undefined` when it is absent.
 * Throws BadRequestError with a plain sentence for anything else: `Infinity`, `1e3`, `NaN`, `-0`, `016`,
 * `1.5`, an empty value, or a number out of range.
 */
export function queryInteger(
  name: string,
  text: string | undefined,
  range: { min: number; max: number },
): number | undefined {
  if (text === undefined) return undefined;
  const value = DECIMAL.test(text) ? Number(text) : Number.NaN;
  if (!(value >= range.min && value <= range.max)) {
    const shown = text.length > 24 ? `${text.slice(0, 24)}…` : text;
    throw new BadRequestError(
      `${name} must be a whole number from ${range.min} to ${range.max} (got ${JSON.stringify(shown)})`,
    );
  }
  return value;
}

/** An account name as the config allows it (`accounts[].name`); whether it is configured is checked by the route. */
export const accountSchema = { type: 'string', pattern: '^[a-z0-9_-]{1,32}$' } as const;

/**
 * The entry of account `name` (a body's `account`, a `?account=`) in a map keyed by the configured accounts,
 * or BadRequestError (400 `BM_ERR_BAD_REQUEST`) naming `field`: left out with several accounts, or not
 * configured. Left out with one account, it is that one.
 */
export function configuredAccount<T>(
  accounts: ReadonlyMap<string, T>,
  name: string | undefined,
  field: string,
): { account: string; entry: T } {
  const entry = name === undefined ? (accounts.size === 1 ? [...accounts.values()][0] : undefined) : accounts.get(name);
  const configured = [...accounts.keys()];
  if (entry === undefined)
    throw new BadRequestError(
      `${field}: ${name === undefined ? 'required with several accounts' : `unknown account ${JSON.stringify(name)}`} (configured: ${configured.join(', ')})`,
    );
  return { account: name ?? configured[0]!, entry };
}
