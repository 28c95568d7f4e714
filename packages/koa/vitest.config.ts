import { defineProject } from 'vitest/config';

export default defineProject({
  test: { name: 'koa', include: ['src/**/*.test.ts'] },
});
