/** `circuit status` reads each account's breaker from the daemon's exposition: a pure function of its text. */
import { describe, expect, it } from 'vitest';
import { breakersOf } from '../../../src/cli/circuit.js';

describe('breakersOf', () => {
  it.each([
    {
      name: 'two accounts, one open',
      text: [
        '# HELP baremetal_remediation_circuit_open 1 while open',
        '# TYPE baremetal_remediation_circuit_open gauge',
        'baremetal_remediation_circuit_open{account="eu"} 1',
        'baremetal_remediation_circuit_open{account="us"} 0',
      ].join('\n'),
      want: [
        { account: 'eu', open: true },
        { account: 'us', open: false },
      ],
    },
    {
      name: 'another metric with the same prefix is not read',
      text: 'baremetal_remediation_circuit_open_total{account="eu"} 1\nbaremetal_remediation_circuit_open{account="eu"} 0\n',
      want: [{ account: 'eu', open: false }],
    },
    { name: 'no gauge', text: 'baremetal_up 1\n', want: [] },
    {
      name: 'an escaped label value',
      text: 'baremetal_remediation_circuit_open{account="a\\"b"} 1',
      want: [{ account: 'a"b', open: true }],
    },
  ])('$name', ({ text, want }) => {
    expect(breakersOf(text)).toEqual(want);
  });
});
