import { describe, expect, it } from 'vitest';
import { TermStarts } from '../../../src/daemon/replication.js';

/** A replica's leases as TermStarts sees them: the account's epoch while it leads it, else undefined. */
function leases() {
  const held = new Map<string, string>();
  const terms = new TermStarts(
    (account) => held.has(account),
    (account) => held.get(account),
  );
  return { held, terms };
}

describe('TermStarts: when the current term of an account began', () => {
  it('gives the start of the term begun under the current lease; nothing while not leading', () => {
    const { held, terms } = leases();
    expect(terms.ledSince('a')).toBeUndefined();
    held.set('a', '1');
    expect(terms.ledSince('a')).toBeUndefined();
    terms.began('a', 1_000);
    expect(terms.ledSince('a')).toBe(1_000);
    held.delete('a');
    expect(terms.ledSince('a')).toBeUndefined();
  });

  it('never gives a previous term’s start once the term ended, until the next term begins', () => {
    const { held, terms } = leases();
    held.set('a', '1');
    terms.began('a', 1_000);
    held.delete('a');
    terms.ended('a');
    // Claimed again: the lease is held before the new term's duties began.
    held.set('a', '3');
    expect(terms.ledSince('a')).toBeUndefined();
    terms.began('a', 5_000);
    expect(terms.ledSince('a')).toBe(5_000);
  });

  it('does not reuse the old start when the lease is lost and claimed again before the old term’s end ran', () => {
    const { held, terms } = leases();
    held.set('a', '1');
    terms.began('a', 1_000);
    // Lost (another replica led under epoch 2) and claimed again under epoch 3; `ended` has not run yet.
    held.set('a', '3');
    expect(terms.ledSince('a')).toBeUndefined();
    terms.began('a', 5_000);
    expect(terms.ledSince('a')).toBe(5_000);
  });

  it('with one leader (no epochs) a start ends with its term', () => {
    let leading = true;
    const terms = new TermStarts(
      () => leading,
      () => undefined,
    );
    terms.began('a', 1_000);
    expect(terms.ledSince('a')).toBe(1_000);
    leading = false;
    terms.ended('a');
    leading = true;
    expect(terms.ledSince('a')).toBeUndefined();
  });
});
