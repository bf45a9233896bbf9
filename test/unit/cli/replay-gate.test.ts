/**
 * What the outage gate read, as the journal says it (src/cli/replay-gate.ts): the reading a row recorded (its
 * `gate`) when it has one; for older rows, the blocking alert named in a `denied_blocked` row (its labels as the
 * message quotes them, escapes and all), none for a power row decided past the gate, unknown otherwise.
 */
import { describe, expect, it } from 'vitest';
import { gateReading } from '../../../src/cli/replay-gate.js';
import type { JournalEntry } from '../../../src/store/rows.js';

const row = (over: Partial<JournalEntry>): JournalEntry =>
  ({
    id: 7,
    action: 'powercycle',
    decision: 'executed',
    message: null,
    createdAt: 0,
    gate: null,
    ...over,
  }) as JournalEntry;

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

  it('a recorded reading wins over what the decision would let one infer', () => {
    // Executed, which alone reads as "none fired", but recorded as blocked: the record is what replays.
    const blocked = row({
      gate: {
        read: 'blocked',
        alert: {
          alertname: 'DatacenterOutage',
          fingerprint: 'abc123',
          labels: { alertname: 'DatacenterOutage', dc: 'fra1' },
        },
        more: 0,
      },
    });
    expect(gateReading([blocked])).toMatchObject({
      alerts: [{ fingerprint: 'abc123', labels: { alertname: 'DatacenterOutage', dc: 'fra1' }, state: 'active' }],
    });
    // Denied blocked (inferred: an alert), recorded as none firing: none.
    const none = row({ decision: 'denied_blocked', message: 'x', gate: { read: 'none_firing' } });
    expect(gateReading([none])).toEqual({ alerts: [] });
    const unknown = row({ gate: { read: 'unknown', reason: 'Alertmanager cannot be read (refused)' } });
    expect(gateReading([unknown])).toEqual({ unknown: 'Alertmanager cannot be read (refused)' });
    // Labels beyond the row's bound were not kept: the alert's name stands for them.
    const unlabelled = row({
      gate: { read: 'blocked', alert: { alertname: 'Outage', fingerprint: 'f', labels: null }, more: 2 },
    });
    expect(gateReading([unlabelled])).toMatchObject({ alerts: [{ labels: { alertname: 'Outage' } }] });
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
