#!/usr/bin/env node
// The `sluice-server` command: runs the built service (dist/bin.js). This file is committed so npm
// links the command at install time, before a workspace build has written dist/.
import { existsSync } from 'node:fs';

const built = new URL('../dist/bin.js', import.meta.url);
if (!existsSync(built)) {
  console.error('sluice-server: dist/bin.js is missing; build first (npm run build at the repository root)');
  process.exit(1);
}
await import(built.href);
