import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm } from '../../../src/cli/api/confirm.js';
import type { CliExit } from '../../../src/cli/api/exit.js';

function ask(options: { yes: boolean; interactive: boolean; typed?: string }) {
  const input = new PassThrough();
  let prompt = '';
  const output = new Writable({
    write: (c, _e, done) => {
      prompt += String(c);
      done();
    },
  });
  const result = confirm({
    what: 'power off server 100001',
    serverId: '100001',
    yes: options.yes,
    interactive: options.interactive,
    input,
    output,
  });
  if (options.typed !== undefined) input.end(options.typed);
  return result.then(
    () => ({ ok: true, prompt, message: '' }),
    (error: CliExit) => ({ ok: false, prompt, message: `${error.exitCode} ${error.message}` }),
  );
}

describe('confirm', () => {
  it.each([
    { name: '--yes without a terminal', yes: true, interactive: false, ok: true, message: '' },
    {
      name: 'no terminal, no --yes',
      yes: false,
      interactive: false,
      ok: false,
      message:
        /^3 refusing to power off server 100001 without confirmation: no terminal to ask on; pass --yes to confirm$/,
    },
    { name: 'the server id typed', yes: false, interactive: true, typed: ' 100001\n', ok: true, message: '' },
    {
      name: 'another id typed',
      yes: false,
      interactive: true,
      typed: '100002\n',
      ok: false,
      message: /^3 not confirmed \(the answer did not match the server id\); nothing was sent$/,
    },
    {
      name: 'input closed',
      yes: false,
      interactive: true,
      typed: '',
      ok: false,
      message: /^3 not confirmed \(input closed\)/,
    },
  ])('$name', async ({ yes, interactive, typed, ok, message }) => {
    const r = await ask({ yes, interactive, ...(typed !== undefined ? { typed } : {}) });
    expect(r.ok).toBe(ok);
    if (message) expect(r.message).toMatch(message);
    expect(r.prompt.includes('Type the server id (100001) to confirm: ')).toBe(interactive && !yes);
  });
});
