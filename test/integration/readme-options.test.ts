/**
 * Every README options table says what the option schema says: each option a surface takes
 * (createLimiter, an adapter, the Nest module) appears in its table, the table names no other,
 * and each row's default is the schema's. The packages' own name lists come from the schema too
 * (they are what the "did you mean" check of each surface reads).
 */
import { readFileSync } from 'node:fs';
import {
  LIMITER_OPTION_NAMES,
  METRICS_OPTION_NAMES,
  OPTION_SCHEMA,
  type OptionSurface,
  optionNames,
} from '@sluice/core/adapter';
import { EXPRESS_OPTION_NAMES } from '@sluice/express';
import { FASTIFY_OPTION_NAMES } from '@sluice/fastify';
import { HONO_OPTION_NAMES } from '@sluice/hono';
import { KOA_OPTION_NAMES } from '@sluice/koa';
import { NEST_MODULE_OPTION_NAMES } from '@sluice/nestjs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);

/** One row of an options table: the option names of its first column and its default cell. */
interface Row {
  readonly names: string[];
  readonly defaultCell: string | undefined;
}

/**
 * The rows of the table that follows `heading`: every backticked name in the first column
 * (`limit` + `window`, `identity(req)`, `onLimited(req, res, ...)`) and the cell of the
 * column headed `default`, if the table has one.
 */
function tableRows(markdown: string, heading: string): Row[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const lines = markdown.slice(start + heading.length + 2).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const cells = (line: string) => line.replace(/\\\|/g, '\u0000').split('|').slice(1, -1);
  const defaultColumn = cells(lines[first] ?? '').findIndex((cell) => cell.trim() === 'default');
  const rows: Row[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    const row = cells(line);
    const names = [...(row[0] ?? '').matchAll(/`([A-Za-z][A-Za-z0-9]*)[^`]*`/g)].map((m) => m[1] as string);
    rows.push({ names, defaultCell: defaultColumn < 0 ? undefined : row[defaultColumn]?.trim() });
  }
  return rows;
}

function tableOptions(markdown: string, heading: string): string[] {
  return tableRows(markdown, heading).flatMap((row) => row.names);
}

/** A default as written, compared loosely: no backticks or spacing; "none" in any of its spellings. */
function normalDefault(text: string): string {
  const plain = text.replace(/`/g, '').replace(/\s+/g, ' ').trim();
  return ['', '-', 'unset', 'required'].includes(plain) ? '-' : plain;
}

const readme = (path: string) => readFileSync(new URL(path, root), 'utf8');

const CASES: { readme: string; heading: string; names: readonly string[]; surface?: OptionSurface }[] = [
  {
    readme: 'packages/express/README.md',
    heading: '## Options',
    names: EXPRESS_OPTION_NAMES,
    surface: 'express',
  },
  { readme: 'packages/koa/README.md', heading: '## Options', names: KOA_OPTION_NAMES, surface: 'koa' },
  { readme: 'packages/hono/README.md', heading: '## Options', names: HONO_OPTION_NAMES, surface: 'hono' },
  {
    readme: 'packages/fastify/README.md',
    heading: '## Options',
    names: FASTIFY_OPTION_NAMES,
    surface: 'fastify',
  },
  {
    readme: 'packages/nestjs/README.md',
    heading: '## Module options',
    names: [...NEST_MODULE_OPTION_NAMES, 'isGlobal'],
    surface: 'nestjs-module',
  },
  {
    readme: 'packages/core/README.md',
    heading: '## Limiter options',
    names: LIMITER_OPTION_NAMES,
    surface: 'createLimiter',
  },
  { readme: 'packages/core/README.md', heading: '## Metrics', names: METRICS_OPTION_NAMES },
];

describe('README options tables', () => {
  for (const { readme: path, heading, names } of CASES) {
    it(`${path} "${heading}" lists every option and no other`, () => {
      const documented = tableOptions(readme(path), heading);
      expect([...new Set(documented)].sort()).toEqual([...new Set(names)].sort());
    });
  }

  for (const { readme: path, heading, names, surface } of CASES) {
    if (surface === undefined) continue;
    it(`${path} "${heading}" lists the options the schema gives ${surface}, with the schema's defaults`, () => {
      const rows = tableRows(readme(path), heading);
      expect([...new Set(rows.flatMap((row) => row.names))].sort()).toEqual([...optionNames(surface)].sort());
      expect([...new Set(names)].sort()).toEqual([...optionNames(surface)].sort());
      for (const row of rows) {
        for (const name of row.names) {
          const spec = OPTION_SCHEMA[name];
          expect(spec?.surfaces, `${name} is taken by ${surface}`).toContain(surface);
          expect(normalDefault(row.defaultCell ?? ''), `default of ${name}`).toBe(
            normalDefault(spec?.defaultDoc ?? ''),
          );
        }
      }
    });
  }

  it('reads the names and defaults of a table as written', () => {
    const table = [
      '## Options',
      '',
      '| option | default | meaning |',
      '| --- | --- | --- |',
      "| `limit` + `window` | - | `'1m'` |",
      "| `onLimited(req, res)` | `'x'` | a \\| b |",
      '',
      '| `after` | - | x |',
    ].join('\n');
    expect(tableOptions(`\n${table}`, '## Options')).toEqual(['limit', 'window', 'onLimited']);
    expect(tableRows(`\n${table}`, '## Options').map((row) => row.defaultCell)).toEqual(['-', "`'x'`"]);
    expect(normalDefault(' `unset` ')).toBe('-');
    expect(normalDefault("`'draft-10'`")).toBe("'draft-10'");
  });

  it('gives every option a default (or none), a doc line and at least one surface', () => {
    for (const [name, spec] of Object.entries(OPTION_SCHEMA)) {
      expect(spec.doc.length, name).toBeGreaterThan(0);
      expect(spec.doc.includes('\n'), name).toBe(false);
      expect(spec.surfaces.length, name).toBeGreaterThan(0);
      if (
        spec.default !== undefined &&
        typeof spec.default !== 'function' &&
        typeof spec.default !== 'object'
      ) {
        expect(normalDefault(spec.defaultDoc), name).toContain(String(spec.default));
      }
    }
  });
});
