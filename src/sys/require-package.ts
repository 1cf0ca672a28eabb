/**
 * A package of ours (`fs-ext`, `yaml`, `crc-32`) required when first needed. Through
 * `process.getBuiltinModule('node:module')` at the call, not an import of node:module: that import
 * brings Node's ES module loader into every start (docs/benchmarks-notes.md, "node:module at start").
 */
export function requirePackage<T>(name: string): T {
  return process.getBuiltinModule('node:module').createRequire(import.meta.url)(name) as T;
}
