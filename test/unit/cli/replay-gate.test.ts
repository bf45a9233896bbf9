/**
 * What the outage gate read, as the journal says it (src/cli/replay-gate.ts): the blocking alert named in a
 * `denied_blocked` row (its labels as the message quotes them, escapes and all), none for a power row decided
 * past the gate, unknown otherwise.
 */
import { describe, expect, it } from 'vitest';
import { gateReading } from '../../../src/cli/replay-gate.js';
import type { JournalEntry } from '../../../src/store/rows.js';

const row = (over: Partial<JournalEntry>): JournalEntry =>
  ({ id: 7, action: 'powercycle', decision: 'executed', message: null, createdAt: 0, ...over }) as JournalEntry;

describe('gateReading', () => {
  it('reads the blocking alert a denial names, its label values unescaped', () => {
    const message =
      'power actions are blocked while DatacenterOutage{dc="fra1", note="a \\"quoted\\" word"} fires (and 1 more) (remediation.safety.block_while_firing: alertname="DatacenterOutage"); nothing sent to server 100001';
    const reading = gateReading([row({ decision: 'denied_blocked', message })]);
    expect(reading).toMatchObject({
      alerts: [{ labels: { alertname: 'DatacenterOutage', dc: 'fra1', note: 'a "quoted" word' }, state: 'active' }],
    });
  });

  it.each([
    ['executed', { alerts: [] }],
    ['cooldown', { alerts: [] }],
    ['awaiting_approval', { alerts: [] }],
    ['denied_under_attack', { unknown: 'the recorded decision did not read Alertmanager' }],
    ['duplicate', { unknown: 'the recorded decision did not read Alertmanager' }],
  ])('a power row decided %s: %j', (decision, reading) => {
    expect(gateReading([row({ decision: decision as JournalEntry['decision'] })])).toEqual(reading);
  });

  it('a denial for want of Alertmanager, and a firewall row, say nothing of an alert', () => {
    const unknown = row({
      decision: 'denied_blocked',
      message: 'whether an outage alert fires is unknown: Alertmanager cannot be read (…)',
    });
    expect(gateReading([unknown])).toEqual({ unknown: 'journal entry 7 was denied as Alertmanager could not be read' });
    expect(gateReading([row({ action: 'firewall_state' })])).toEqual({
      unknown: 'the recorded decision did not read Alertmanager',
    });
  });

  it.each([
    { name: 'by an approver (the approval ran past the gate)', approver: 'alice', reading: { alerts: [] } },
    {
      name: 'by the denial guard, before the gate (no approver on the row)',
      approver: null,
      reading: { unknown: 'the recorded decision did not read Alertmanager' },
    },
  ])('a power row denied $name', ({ approver, reading }) => {
    expect(gateReading([row({ decision: 'denied_by_approver', approver })])).toEqual(reading);
  });
});
