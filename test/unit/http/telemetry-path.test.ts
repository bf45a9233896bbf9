import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { validateTelemetryPath } from '../../../src/http/telemetry-path.js';

describe('validateTelemetryPath', () => {
  it.each(['/metrics', '/prometheus/metrics', '/exporter.v1/metrics_all', '/-metrics', '/api'])(
    'accepts %s',
    (path) => {
      expect(validateTelemetryPath(path)).toBe(path);
    },
  );

  it.each([
    { path: 'metrics', problem: 'must start with "/"' },
    { path: '', problem: 'must start with "/"' },
    { path: '/', problem: 'collides' },
    { path: '/healthz', problem: 'collides' },
    { path: '/readyz', problem: 'collides' },
    { path: '/graphs', problem: 'collides' },
    { path: '/graphs/metrics', problem: 'collides' },
    { path: '/api/v1/metrics', problem: 'collides' },
    { path: '/-/healthy', problem: 'collides' },
    { path: '/-/metrics', problem: 'collides' },
    { path: '/metrics/', problem: 'segments' },
    { path: '//metrics', problem: 'segments' },
    { path: '/a/../metrics', problem: 'segments' },
    { path: '/:name', problem: 'segments' },
    { path: '/metrics*', problem: 'segments' },
    { path: '/metrics?x=1', problem: 'segments' },
    { path: '/me trics', problem: 'segments' },
    { path: `/${'m'.repeat(300)}`, problem: 'at most 256 characters' },
  ])('refuses $path: $problem', ({ path, problem }) => {
    let error: unknown;
    try {
      validateTelemetryPath(path);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([expect.stringContaining(`--web.telemetry-path: `)]);
    expect((error as ConfigError).problems[0]).toContain(problem);
  });
});
