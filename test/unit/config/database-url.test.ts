import { describe, expect, it } from 'vitest';
import { databaseScrubber, redactDatabaseUrl } from '../../../src/config/database-url.js';

describe('the database URL, redacted as a whole', () => {
  it.each([
    ['userinfo', 'postgres://bm:s3cret@db:5432/bm', 'postgres://bm:***@db:5432/bm'],
    ['password=', 'postgres://bm@db/bm?password=s3cret', 'postgres://bm@db/bm?password=***'],
    [
      'sslpassword=',
      'postgres://bm@db/bm?sslmode=require&sslpassword=s3cret',
      'postgres://bm@db/bm?sslmode=require&sslpassword=***',
    ],
    ['options=', 'postgresql://bm@db/bm?options=-c%20x%3Ds3cret', 'postgresql://bm@db/bm?options=***'],
    ['upper-case name', 'postgres://bm@db/bm?PASSWORD=s3cret', 'postgres://bm@db/bm?PASSWORD=***'],
    ['not a URL', 'host=db password=s3cret', '[unparsable database URL]'],
  ])('%s', (_name, url, redacted) => {
    expect(redactDatabaseUrl(url)).toBe(redacted);
  });

  it("scrubs the settings of options= out of PostgreSQL's own errors, which quote a value alone", () => {
    const scrub = databaseScrubber(
      'postgres://bm@db/bm?options=-c%20statement_timeout%3Dopt-s3cret%20--work_mem%3D%22wm-s3cret%22',
    );
    expect(scrub('invalid value for parameter "statement_timeout": "opt-s3cret"; invalid value "WM-S3CRET"; on')).toBe(
      'invalid value for parameter "statement_timeout": "[REDACTED]"; invalid value "[REDACTED]"; on',
    );
  });

  it('scrubs every secret of the URL, plain and encoded, out of a text', () => {
    const scrub = databaseScrubber('postgres://bm:p%40ss@db/bm?sslpassword=k%20ey&options=-c%20a%3Db');
    expect(scrub('failed: p@ss / k ey / k%20ey / -c a=b')).toBe(
      'failed: [REDACTED] / [REDACTED] / [REDACTED] / [REDACTED]',
    );
  });
});
