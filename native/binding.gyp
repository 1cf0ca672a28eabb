{
  # Built by native/build.mjs (part of `npm run build`); optional: see src/native.ts.
  "targets": [
    {
      "target_name": "fspl_native",
      "sources": ["fspl_native.c", "fs_batch.c", "child_start.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-std=gnu11", "-O2", "-pthread", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "ldflags": ["-pthread"]
    }
  ]
}
