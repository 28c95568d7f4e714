/**
 * observability/alerts.yaml: valid rules (`promtool check rules`), every alert tested firing and
 * not firing in alerts.test.yaml (`promtool test rules`), and every runbook link pointing at a
 * section of docs/operations.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/apps.js';
import { alertNames, OBSERVABILITY_DIR, promtool } from './promtool.js';

const rules = readFileSync(join(OBSERVABILITY_DIR, 'alerts.yaml'), 'utf8');
const tests = readFileSync(join(OBSERVABILITY_DIR, 'alerts.test.yaml'), 'utf8');
const names = alertNames(rules);

/** GitHub's anchor for a Markdown heading. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

describe('observability/alerts.yaml', () => {
  it('passes promtool check rules', () => {
    const run = promtool('check', 'rules', 'alerts.yaml');
    expect(run.output).toContain(`SUCCESS: ${names.length} rules found`);
    expect(run.status, run.output).toBe(0);
  });

  it('passes promtool test rules', () => {
    const run = promtool('test', 'rules', 'alerts.test.yaml');
    expect(run.output).toContain('SUCCESS');
    expect(run.status, run.output).toBe(0);
  });

  it('has a unit test of every alert firing and one of it not firing', () => {
    expect(names.length).toBeGreaterThanOrEqual(10);
    const cases = [...tests.matchAll(/alertname: (\S+)\s*\n\s*exp_alerts:( \[\])?/g)];
    const firing = new Set(cases.filter((m) => m[2] === undefined).map((m) => m[1]));
    const quiet = new Set(cases.filter((m) => m[2] !== undefined).map((m) => m[1]));
    for (const name of names) {
      expect(firing.has(name), `${name} firing`).toBe(true);
      expect(quiet.has(name), `${name} not firing`).toBe(true);
    }
  });

  it('gives every alert a for, a severity, a summary and a runbook section of docs/operations.md', () => {
    const docs = readFileSync(join(REPO_ROOT, 'docs/operations.md'), 'utf8');
    const anchors = new Set([...docs.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1] as string)));
    const blocks = rules.split(/^\s*- alert: /m).slice(1);
    expect(blocks).toHaveLength(names.length);
    for (const block of blocks) {
      const name = block.split('\n')[0]?.trim() as string;
      expect(block, name).toMatch(/\n\s+for: \d+[smh]\n/);
      expect(block, name).toMatch(/\n\s+severity: (critical|warning|info)\n/);
      expect(block, name).toMatch(/\n\s+summary: "/);
      const runbook =
        /runbook_url: "https:\/\/github\.com\/sluice-rl\/sluice\/blob\/main\/docs\/operations\.md#([\w-]+)"/.exec(
          block,
        );
      expect(runbook, name).not.toBeNull();
      expect(runbook?.[1]).toBe(name.toLowerCase());
      expect(anchors.has(runbook?.[1] as string), `docs/operations.md has a section "${name}"`).toBe(true);
    }
  });
});
