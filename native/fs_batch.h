/* A batch of file operations (fs_batch.c) held in C: fspl_native.c's job chain makes a job's
 * record with it at its command's exit, as fsBatchSync would from JS. */
#ifndef FSPL_FS_BATCH_H
#define FSPL_FS_BATCH_H

#include <node_api.h>

struct batch_job;

/* The operations of a JS array (as fsBatchSync takes), copied; NULL and why when malformed. */
struct batch_job* fspl_batch_parse(napi_env env, napi_value ops, const char** problem);
/* Every operation in order on this thread; after a failed "must" one, none (as fsBatchSync). */
void fspl_batch_run(struct batch_job* job);
/* Whether the batch succeeded as firstFailure (src/sys/fs-batch.ts) judges it. */
int fspl_batch_ok(const struct batch_job* job);
/* The results as fsBatchSync returns them (an Int32Array), or NULL. */
napi_value fspl_batch_results(napi_env env, const struct batch_job* job);
void fspl_batch_free(struct batch_job* job);

#endif
