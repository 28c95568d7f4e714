import { defineProject } from 'vitest/config';

export default defineProject({
  test: { name: 'hono', include: ['src/**/*.test.ts'] },
});
