import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { MemoryStore } from '../stores/memory-store.js';
import { createMetrics } from './metrics.js';

describe('sluice_live_key_evictions_total', () => {
  it('counts keys a full MemoryStore dropped while live, with no label naming a key', async () => {
    const now = { t: 1_700_000_000_000 };
    const clock = () => now.t;
    const limiter = createLimiter({
      policies: [{ name: 'burst', burst: 5, rate: '1/s' }],
      store: new MemoryStore({ clock, maxKeys: 2 }),
      clock,
    });
    const metrics = createMetrics({ meter: false, limiter });
    for (const identity of ['alice', 'bob', 'carol', 'dave']) await limiter.check({ identity });
    expect(limiter.liveEvictions).toBe(2);
    const text = metrics.render();
    expect(text).toContain('# TYPE sluice_live_key_evictions_total counter\n');
    expect(text).toContain('\nsluice_live_key_evictions_total 2\n');
    expect(text).not.toMatch(/alice|bob|carol|dave|sluice:/);
    // Expired keys make room without counting.
    now.t += 60_000;
    for (const identity of ['erin', 'frank']) await limiter.check({ identity });
    expect(metrics.render()).toContain('\nsluice_live_key_evictions_total 2\n');
  });

  it('is absent when no attached limiter counts evictions', () => {
    expect(createMetrics({ meter: false }).render()).not.toContain('sluice_live_key_evictions_total');
  });
});
