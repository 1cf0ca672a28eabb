{
  # Built by scripts/build-native.mjs (part of `npm run build`); optional: see src/native.ts.
  "targets": [
    {
      "target_name": "fspl_native",
      "sources": ["fspl_native.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
