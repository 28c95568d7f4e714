/**
 * Every option every adapter (and createLimiter, createMetrics) takes appears in its README's
 * options table, and the table names no option that does not exist. The lists come from the
 * packages themselves, which check them against their option types at compile time.
 */
import { readFileSync } from 'node:fs';
import { LIMITER_OPTION_NAMES, METRICS_OPTION_NAMES } from '@sluice/core';
import { EXPRESS_OPTION_NAMES } from '@sluice/express';
import { HONO_OPTION_NAMES } from '@sluice/hono';
import { KOA_OPTION_NAMES } from '@sluice/koa';
import { NEST_MODULE_OPTION_NAMES } from '@sluice/nestjs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);

/**
 * The option names in the first column of the table that follows `heading`: every
 * backticked name there (`limit` + `window`, `identity(req)`, `onLimited(req, res, ...)`).
 */
function tableOptions(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const lines = markdown.slice(start + heading.length + 2).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const names: string[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    const cell = line.split('|')[1] ?? '';
    for (const match of cell.matchAll(/`([A-Za-z][A-Za-z0-9]*)[^`]*`/g)) names.push(match[1] as string);
  }
  return names;
}

const readme = (path: string) => readFileSync(new URL(path, root), 'utf8');

const CASES = [
  { readme: 'packages/express/README.md', heading: '## Options', names: EXPRESS_OPTION_NAMES },
  { readme: 'packages/koa/README.md', heading: '## Options', names: KOA_OPTION_NAMES },
  { readme: 'packages/hono/README.md', heading: '## Options', names: HONO_OPTION_NAMES },
  {
    readme: 'packages/nestjs/README.md',
    heading: '## Module options',
    names: [...NEST_MODULE_OPTION_NAMES, 'isGlobal'],
  },
  { readme: 'packages/core/README.md', heading: '## Limiter options', names: LIMITER_OPTION_NAMES },
  { readme: 'packages/core/README.md', heading: '## Metrics', names: METRICS_OPTION_NAMES },
];

describe('README options tables', () => {
  for (const { readme: path, heading, names } of CASES) {
    it(`${path} "${heading}" lists every option and no other`, () => {
      const documented = tableOptions(readme(path), heading);
      expect([...new Set(documented)].sort()).toEqual([...new Set(names)].sort());
    });
  }

  it('reads the names of a table as written', () => {
    const table = [
      '## Options',
      '',
      '| option | default | meaning |',
      '| --- | --- | --- |',
      "| `limit` + `window` | - | `'1m'` |",
      '| `onLimited(req, res)` | - | x |',
      '',
      '| `after` | - | x |',
    ].join('\n');
    expect(tableOptions(`\n${table}`, '## Options')).toEqual(['limit', 'window', 'onLimited']);
  });
});
