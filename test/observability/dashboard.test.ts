/**
 * observability/grafana-dashboard.json: importable as it is (Grafana's dashboard model: a title,
 * a uid, a data-source variable, panels on a 24-column grid that do not overlap) and every panel's
 * query reads only metric names Sluice exports.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportedMetricNames, metricNamesIn } from './exported-metrics.js';
import { OBSERVABILITY_DIR } from './promtool.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
}

const dashboard = JSON.parse(readFileSync(join(OBSERVABILITY_DIR, 'grafana-dashboard.json'), 'utf8'));
const panels: Panel[] = dashboard.panels;
const queryPanels = panels.filter((p) => p.type !== 'row');

describe('observability/grafana-dashboard.json', () => {
  it('has the fields Grafana needs to import it, and a Prometheus data-source variable', () => {
    expect(dashboard.title).toBe('Sluice');
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(dashboard.id).toBeNull();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const variables = dashboard.templating.list as { name: string; type: string; query: unknown }[];
    expect(variables.find((v) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    expect(variables.find((v) => v.name === 'job')).toMatchObject({ type: 'query' });
  });

  it('lays its panels on the grid without overlaps, each with a unique id', () => {
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.gridPos.w).toBeGreaterThan(0);
      expect(p.gridPos.h).toBeGreaterThan(0);
    }
    for (let i = 0; i < panels.length; i++) {
      for (let j = i + 1; j < panels.length; j++) {
        const a = (panels[i] as Panel).gridPos;
        const b = (panels[j] as Panel).gridPos;
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        expect(overlap, `${(panels[i] as Panel).title} / ${(panels[j] as Panel).title}`).toBe(false);
      }
    }
  });

  it('queries the data-source variable, with unique refIds per panel', () => {
    expect(queryPanels.length).toBeGreaterThanOrEqual(12);
    for (const p of queryPanels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      const refIds = (p.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
    }
  });

  it('reads only metric names Sluice exports, and covers the documented views', () => {
    const exported = exportedMetricNames();
    const used = new Set<string>();
    for (const p of queryPanels) {
      for (const target of p.targets ?? []) {
        const names = metricNamesIn(target.expr);
        expect(names.length, `${p.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const name of names) {
          expect(exported.has(name), `${p.title}: ${name} is not exported by Sluice`).toBe(true);
          used.add(name);
        }
      }
    }
    for (const name of [
      'sluice_decisions_total',
      'sluice_near_limit_total',
      'sluice_store_duration_seconds_bucket',
      'sluice_store_errors_total',
      'sluice_in_process_decisions_total',
      'sluice_live_key_evictions_total',
      'sluice_lease_units_taken_total',
      'sluice_breaker_open',
    ]) {
      expect(used.has(name), `a panel shows ${name}`).toBe(true);
    }
  });

  it('finds metric names in PromQL the way the check above relies on', () => {
    expect(
      metricNamesIn(
        'sum by (policy) (rate(sluice_decisions_total{job=~"$job",outcome="over_limit"}[$__rate_interval])) / max(up offset 1h)',
      ),
    ).toEqual(['sluice_decisions_total', 'up']);
  });
});
