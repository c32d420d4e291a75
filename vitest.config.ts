import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["services/**/*.test.ts", "test/**/*.test.ts", "clients/*/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Each file gets its own database and key prefix, so files may run side by side.
    fileParallelism: true,
  },
});
