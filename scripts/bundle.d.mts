/** What scripts/bundle.mjs exports to the tests (test/build-copy.ts). */
/** Packages left out of the bundle, required at run time from node_modules. */
export const EXTERNAL: readonly string[];
