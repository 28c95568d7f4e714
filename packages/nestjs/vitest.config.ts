import { defineProject } from 'vitest/config';

export default defineProject({
  test: { name: 'nestjs', include: ['src/**/*.test.ts'] },
});
