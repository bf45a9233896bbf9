/**
 * A graph reply read from its bytes (issue 43): the same image bytes as the text path, the JSON around the
 * base64 scrubbed and parsed, and every reply it cannot prove well formed left to the text path, whose errors
 * are the same as ever.
 */
import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidReplyError, ResponseTooLargeError } from '../../../src/errors.js';
import { createScrubber, REDACTED, secretForms } from '../../../src/scrub.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { decodeGraph } from '../../../src/upstream/decode.js';
import { getGraph } from '../../../src/upstream/dedicated.js';
import { graphFromBytes } from '../../../src/upstream/graph-reply.js';

const KEY = 'sk-graph-0123456789abcdef';
const scrub = createScrubber([KEY]);
const IMAGE = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 31) % 256));
const BASE64 = IMAGE.toString('base64');
const ctx = { operation: 'graphs', path: '/api/v1/dedicated/graphs' };
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('graphFromBytes', () => {
  it.each([
    { name: 'the contract shape', text: `{"success":true,"base64":"${BASE64}"}` },
    { name: 'spaces around the colon, other fields', text: `{ "base64" :\n "${BASE64}", "success": true, "n": [1] }` },
    { name: 'a data URL', text: `{"success":true,"base64":"data:image/png;base64,${BASE64}"}` },
    { name: 'one padding character', text: `{"base64":"${Buffer.from('ab').toString('base64')}"}` },
  ])('reads $name as the text path does', ({ text }) => {
    const read = graphFromBytes(bytes(text), scrub);
    expect(read).toBeInstanceOf(Buffer);
    expect(read).toEqual(decodeGraph(JSON.parse(text), ctx));
  });

  it.each([
    { name: 'no base64 key', text: '{"success":true}' },
    { name: 'a base64 that is a number', text: '{"success":true,"base64":12}' },
    { name: 'a base64 that is null', text: '{"success":true,"base64":null}' },
    { name: 'a base64 that is an object', text: `{"base64":{"base64":"${BASE64}"}}` },
    { name: 'an empty base64', text: '{"success":true,"base64":""}' },
    { name: 'truncated base64', text: `{"success":true,"base64":"${BASE64.slice(0, -1)}"}` },
    {
      name: 'a character outside base64',
      text: `{"success":true,"base64":"${BASE64.slice(0, 8)}!${BASE64.slice(9)}"}`,
    },
    { name: 'padding inside', text: `{"success":true,"base64":"aGVs=G8="}` },
    { name: 'three padding characters', text: '{"base64":"aG==="}' },
    { name: 'an escape inside', text: `{"success":true,"base64":"${BASE64.slice(0, 8)}\\/${BASE64.slice(9)}"}` },
    { name: 'a line break inside', text: `{"success":true,"base64":"${BASE64.slice(0, 8)}\\n${BASE64.slice(8)}"}` },
    { name: 'a truncated reply', text: `{"success":true,"base64":"${BASE64}` },
    { name: 'a reply cut after the base64', text: `{"success":true,"base64":"${BASE64}"` },
    { name: 'JSON that is not an object', text: `["base64":"${BASE64}"]` },
    { name: 'success false', text: `{"success":false,"base64":"${BASE64}"}` },
    { name: 'an API error', text: `{"error":true,"message":"no graph","base64":"${BASE64}"}` },
    { name: 'the key only nested', text: `{"success":true,"data":{"base64":"${BASE64}"}}` },
    { name: 'a nested key before the real one', text: `{"data":{"base64":"${BASE64}"},"base64":"aGVsbG8="}` },
    { name: 'the key twice (the last one counts)', text: `{"base64":"${BASE64}","base64":"aGVsbG8="}` },
    { name: 'the key inside a string', text: `{"note":"\\"base64\\":\\"${BASE64}\\"","base64":1}` },
    { name: 'a data URL with a quote', text: `{"base64":"data:x\\",${BASE64}"}` },
  ])('leaves $name to the text path', ({ text }) => {
    expect(graphFromBytes(bytes(text), scrub)).toBeUndefined();
  });

  it('scrubs the JSON around the base64, all of it and only it', () => {
    const seen: string[] = [];
    const spy = (text: string) => {
      seen.push(text);
      return scrub(text);
    };
    const text = `{"success":true,"note":"${KEY}","base64":"${BASE64}"}`;
    expect(graphFromBytes(bytes(text), spy)).toEqual(IMAGE);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain(KEY);
    expect(seen[0]).not.toContain(BASE64);
  });
});

describe('getGraph', () => {
  const BASE = 'https://api.provider.test';
  let agent: MockAgent;
  beforeEach(() => {
    agent = new MockAgent();
    agent.disableNetConnect();
  });
  afterEach(async () => agent.close());
  const client = (maxResponseBytes?: number) =>
    new UpstreamClient({
      baseUrl: BASE,
      apiKey: KEY,
      timeoutMs: 2000,
      concurrency: 2,
      retries: 0,
      dispatcher: agent,
      ...(maxResponseBytes ? { maxResponseBytes } : {}),
    });
  const replying = (body: string, status = 200) =>
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated/graphs', method: 'POST' })
      .reply(status, body, { headers: { 'content-type': 'application/json' } });

  it('returns the image bytes of a well-formed reply', async () => {
    replying(`{"success":true,"base64":"${BASE64}"}`);
    expect(await getGraph(client(), '1234', 'port_bits', 'day')).toEqual(IMAGE);
  });

  it.each([
    { name: 'truncated base64', body: `{"success":true,"base64":"${BASE64.slice(0, -2)}"}`, message: /not base64/ },
    { name: 'a character outside base64', body: '{"success":true,"base64":"aGV*bG8="}', message: /not base64/ },
    { name: 'a base64 that is not a string', body: '{"success":true,"base64":42}', message: /expected \{success/ },
    { name: 'a truncated reply', body: `{"success":true,"base64":"${BASE64}`, message: /not JSON/ },
  ])('refuses $name with the text path’s error', async ({ body, message }) => {
    replying(body);
    const error = await getGraph(client(), '1234', 'port_bits', 'day').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidReplyError);
    expect((error as Error).message).toMatch(message);
  });

  it('never puts a secret of the reply into its error, in any spelling', async () => {
    for (const form of secretForms(KEY)) {
      replying(`{"success":true,"base64":"${form}!"}`);
      const error = await getGraph(client(), '1234', 'port_bits', 'day').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidReplyError);
      expect(JSON.stringify({ message: (error as Error).message, ...(error as object) })).not.toContain(KEY);
      expect((error as Error).message).toContain(REDACTED);
    }
  });

  it('refuses a reply over upstream.max_response_bytes before decoding it', async () => {
    replying(`{"success":true,"base64":"${BASE64}"}`);
    const error = await getGraph(client(1024), '1234', 'port_bits', 'day').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
  });
});
