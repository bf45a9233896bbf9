/**
 * Vitest reporter: the wall-clock duration of each tier (vitest project) and its test counts, printed after the
 * run as one line per tier, e.g. `tier unit: 38.2 s, 92 files, 1502 passed, 0 failed, 1 skipped`: from its
 * first file's start to its last file's end. The tiers run one group after another (`sequence.groupOrder` in
 * vitest.config.ts), so each line is that tier's own time, except e2e and smoke, which share a group and overlap.
 */
import type { Reporter, TestModule } from 'vitest/node';

interface Tier {
  start: number;
  end: number;
  files: number;
  passed: number;
  failed: number;
  skipped: number;
}

export default class TierDurations implements Reporter {
  readonly #tiers = new Map<string, Tier>();

  #tier(module: TestModule): Tier {
    const name = module.project.name || 'default';
    let tier = this.#tiers.get(name);
    if (tier === undefined) {
      tier = { start: Date.now(), end: Date.now(), files: 0, passed: 0, failed: 0, skipped: 0 };
      this.#tiers.set(name, tier);
    }
    return tier;
  }

  onTestModuleStart(module: TestModule): void {
    this.#tier(module);
  }

  onTestModuleEnd(module: TestModule): void {
    const tier = this.#tier(module);
    tier.end = Date.now();
    tier.files += 1;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === 'passed') tier.passed += 1;
      else if (state === 'failed') tier.failed += 1;
      else tier.skipped += 1;
    }
    if (module.state() === 'failed' && !module.ok()) tier.failed += 0; // a file that failed to load counts below
  }

  onTestRunEnd(): void {
    for (const [name, t] of this.#tiers) {
      const seconds = ((t.end - t.start) / 1000).toFixed(1);
      console.log(
        `tier ${name}: ${seconds} s, ${t.files} files, ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`,
      );
    }
  }
}
