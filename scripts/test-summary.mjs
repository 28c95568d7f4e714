// Prints one plain closing line (`Tests: N passed, N failed, N skipped`) from vitest's JSON report.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? 'test-results.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  console.log(`no test report at ${file}`);
  process.exit(0);
}
const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
