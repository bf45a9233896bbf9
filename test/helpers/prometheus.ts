import { request } from 'undici';

/** One sample of an instant query's vector result. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Runs an instant query on the Prometheus at `promUrl`; throws when Prometheus reports an error. */
export async function promQuery(promUrl: string, expr: string): Promise<Sample[]> {
  const res = await request(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.body.json()) as { status: string; data: { result: Sample[] } };
  if (body.status !== 'success') throw new Error(`query ${expr} failed: ${JSON.stringify(body)}`);
  return body.data.result;
}
