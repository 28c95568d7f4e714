/**
 * The shipped protos against the upstream Envoy API: every message, field (number, type,
 * repeated) and enum value of the upstream files (src/upstream-protos.fixture.json, written by
 * scripts/proto-fixture.mjs from envoyproxy/data-plane-api at the commit it names) is in the
 * trimmed copy, identically, and the copy adds nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTO_DIR, packageDefinition } from './protos.js';
import fixture from './upstream-protos.fixture.json' with { type: 'json' };

interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}

const SCALARS: Record<string, string> = {
  TYPE_STRING: 'string',
  TYPE_UINT32: 'uint32',
  TYPE_UINT64: 'uint64',
  TYPE_BYTES: 'bytes',
};

/** The type name as the upstream file writes it, resolved to its last segments. */
function sameType(upstream: string, field: FieldDescriptor, owner?: TypeDescriptor): boolean {
  const map = /^map<(\w+),(\w+)>$/.exec(upstream);
  if (map !== null) {
    // A map field: a repeated message whose nested map-entry type holds `key` and `value`.
    const entry = owner?.nestedType?.find((t) => t.name === field.typeName.split('.').pop());
    const [key, value] = [entry?.field?.[0], entry?.field?.[1]];
    return (
      entry?.options?.mapEntry === true &&
      key !== undefined &&
      value !== undefined &&
      SCALARS[key.type] === map[1] &&
      SCALARS[value.type] === map[2]
    );
  }
  if (SCALARS[field.type] !== undefined) return SCALARS[field.type] === upstream;
  // proto-loader keeps type names as written, relative to the package where they resolve so.
  const ours = field.typeName.replace(/^\./, '');
  return ours === upstream || ours.endsWith(`.${upstream}`) || upstream.endsWith(`.${ours}`);
}

interface TypeDescriptor {
  name: string;
  field?: FieldDescriptor[];
  value?: { name: string; number: number }[];
  nestedType?: TypeDescriptor[];
  enumType?: TypeDescriptor[];
  options?: { mapEntry?: boolean } | null;
}

/** A message or enum of the package definition by full name, nested ones included. */
function typeByName(name: string): TypeDescriptor | undefined {
  const definition = packageDefinition() as unknown as Record<string, { type?: TypeDescriptor }>;
  const parts = name.split('.');
  for (let top = parts.length; top > 0; top--) {
    let node = definition[parts.slice(0, top).join('.')]?.type;
    if (node === undefined) continue;
    for (const part of parts.slice(top)) {
      node = [...(node?.nestedType ?? []), ...(node?.enumType ?? [])].find((t) => t.name === part);
    }
    return node;
  }
  return undefined;
}

describe('trimmed Envoy protos', () => {
  it('name the upstream commit', () => {
    const header = readFileSync(join(PROTO_DIR, 'envoy/service/ratelimit/v3/rls.proto'), 'utf8');
    expect(fixture.source).toBe('envoyproxy/data-plane-api@84e84367f2560cdb47b9bb78fd3e615feb80c3e4');
    expect(header).toContain('84e84367f2560cdb47b9bb78fd3e615feb80c3e4');
    expect(header).toContain('Apache License, Version 2.0');
    expect(readFileSync(join(PROTO_DIR, 'LICENSE-envoy-api'), 'utf8')).toContain('Apache License');
  });

  for (const [name, upstream] of Object.entries(fixture.types)) {
    it(`${name}: same ${upstream.kind === 'enum' ? 'values' : 'fields'} as upstream`, () => {
      const ours = typeByName(name);
      expect(ours, `${name} is missing`).toBeDefined();
      if (upstream.kind === 'enum') {
        const values = Object.fromEntries((ours?.value ?? []).map((v) => [v.name, v.number]));
        expect(values).toEqual(upstream.members);
        return;
      }
      const fields = ours?.field ?? [];
      const members = upstream.members as Record<string, { number: number; type: string; repeated: boolean }>;
      expect(fields.map((f) => f.name).sort()).toEqual(Object.keys(members).sort());
      for (const field of fields) {
        const expected = members[field.name];
        expect(field.number, `${name}.${field.name}`).toBe(expected?.number);
        expect(field.label === 'LABEL_REPEATED', `${name}.${field.name} repeated`).toBe(expected?.repeated);
        expect(
          sameType(expected?.type ?? '', field, ours),
          `${name}.${field.name}: ${field.typeName || field.type}`,
        ).toBe(true);
      }
    });
  }
});
