/*
 * fsBatch(): a list of file operations run in order on ONE of libuv's pool threads (napi async
 * work), for the net runner's group commit (src/net/run/commit.ts through src/fs-batch.ts).
 *
 * Why: every asynchronous call of Node's fs API is one round trip to the pool (a work item
 * queued, a pool thread woken, its result queued back to the event loop). A group commit made
 * dozens of them (an open, an fsync, a rename and an unlink per firing, and three per directory
 * fsync), and on 2 cores each hand-off cost tens of microseconds of CPU in futex wake-ups and
 * context switches: more than the system calls themselves on tmpfs. Here one step of a commit
 * (say: rename every output, then fsync their directories) is one hand-off.
 *
 * JS interface (see src/fs-batch.ts for the typed wrapper and the pure-Node fallback):
 *
 *   fsBatch(ops, callback) -> undefined
 *     ops: an array of arrays, each [code, ...arguments] (codes below; code | 0x100 = "must":
 *     if this operation fails, the ones after it are not run and report -ECANCELED).
 *     callback(results): an Int32Array, one entry per operation: >= 0 on success (a descriptor
 *     for OPEN), -errno on failure.
 *       1 FSYNC_DIR  [path, fd?]                    open(O_RDONLY|O_DIRECTORY), fsync, close; or,
 *                                                    given fd >= 0 (that directory, held open by
 *                                                    the caller), fsync(fd); a directory that
 *                                                    cannot be fsynced at all (EINVAL, ENOTSUP,
 *                                                    EROFS, EACCES, EPERM) is 0
 *       2 FSYNC      [fd]
 *       3 RENAME     [from, to]
 *       4 UNLINK     [path]
 *       5 OPEN       [path, flags, mode]            -> the descriptor
 *       6 WRITE_FILE [path, flags, mode, buffer]    open, write all, fsync, close
 *       7 CLOSE      [fd]
 *       8 APPEND     [fd, buffer]                   write all at the descriptor's offset (an
 *                                                    O_APPEND file: its end), then fsync
 *       9 WRITE_FILE_FROM [path, flags, mode, buffer, source]
 *                                                    as WRITE_FILE, with all of the file `source`
 *                                                    after the buffer (copy_file_range where the
 *                                                    file system has it, else read and write),
 *                                                    then fsync, close
 *      10 PWRITE   [fd, position, buffer, sync]    write all of the buffer at that position (the
 *                                                    descriptor's offset unchanged), then, if sync
 *                                                    is 1, fdatasync
 *     code | 0x200 = "missing ok": with "must", an ENOENT does not stop the operations after it
 *     (a rename whose source is gone, an unlink of a file that is not there).
 *     code | 0x400 = "replace" (WRITE_FILE, WRITE_FILE_FROM): an O_EXCL|O_NOFOLLOW open makes a
 *     new file, whatever was planted at the path is unlinked and the open tried again
 *     (src/sys/untrusted.ts).
 *     WRITE_FILE and WRITE_FILE_FROM take three more numbers, uid, gid and mode: when uid >= 0,
 *     the new file is fchown'd and fchmod'ed to them through its descriptor (never by name).
 *     WRITE_FILE_FROM's source is opened with O_NOFOLLOW and must be a regular file.
 *
 *   fsBatchSync(ops) -> Int32Array
 *     The same operations and results, run on the calling thread before it returns: for
 *     queue-process, which records each finished job (a note, nextseq, the unlink, their fsyncs)
 *     before it starts the next and so has nothing to do meanwhile. A hand-off to the pool and
 *     back would cost more than these calls on tmpfs, and through Node's synchronous fs bindings
 *     each of the dozen calls pays its own few microseconds of binding (arguments checked, an
 *     error object prepared); here the batch is one call.
 */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <node_api.h>

#include "fs_batch.h"

enum { OP_FSYNC_DIR = 1, OP_FSYNC = 2, OP_RENAME = 3, OP_UNLINK = 4, OP_OPEN = 5, OP_WRITE_FILE = 6, OP_CLOSE = 7, OP_APPEND = 8, OP_WRITE_FILE_FROM = 9, OP_PWRITE = 10 };
#define OP_MUST 0x100
#define OP_MISSING_OK 0x200
#define OP_REPLACE 0x400

typedef struct {
  int code;
  int must;
  int missing_ok;
  char* a;
  char* b;
  int fd; /* FSYNC, CLOSE, APPEND, PWRITE; FSYNC_DIR: held open, or -1 */
  int flags;
  int mode;
  int64_t pos; /* PWRITE */
  int sync;    /* PWRITE: fdatasync after */
  int replace; /* WRITE_FILE(_FROM): unlink whatever is at the path first (never followed) */
  int uid;     /* WRITE_FILE(_FROM): fchown to uid, gid and fchmod to fmode after open; -1: not */
  int gid;
  int fmode;
  char* data;
  size_t len;
  int32_t result;
} batch_op;

typedef struct batch_job {
  napi_async_work work;
  napi_ref callback;
  uint32_t count;
  batch_op* ops;
} batch_job;

static char* batch_string(napi_env env, napi_value v) {
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) return NULL;
  char* s = malloc(n + 1);
  if (!s) return NULL;
  if (napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok || strlen(s) != n) {
    free(s); /* a NUL inside a path: refused, as Node refuses it */
    return NULL;
  }
  return s;
}

static void batch_free(batch_job* job) {
  if (!job) return;
  for (uint32_t i = 0; i < job->count && job->ops; i++) {
    free(job->ops[i].a);
    free(job->ops[i].b);
    free(job->ops[i].data);
  }
  free(job->ops);
  free(job);
}

static int32_t batch_errno(void) { return errno > 0 ? -errno : -EIO; }

/* A directory that cannot be fsynced at all is no failure, as in src/durable.ts (cannotSync). */
static int32_t batch_dir_sync_result(int32_t r) {
  return r == -EINVAL || r == -ENOTSUP || r == -EOPNOTSUPP || r == -EROFS || r == -EACCES || r == -EPERM ? 0 : r;
}

static int32_t batch_fsync_dir(const char* path, int held) {
  if (held >= 0) return fsync(held) == 0 ? 0 : batch_dir_sync_result(batch_errno());
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return batch_dir_sync_result(batch_errno());
  int32_t r = fsync(fd) == 0 ? 0 : batch_dir_sync_result(batch_errno());
  close(fd);
  return r;
}

/* Write all of these bytes to fd (EINTR retried): 0, or -errno. */
static int32_t batch_write_all(int fd, const char* data, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return batch_errno();
    }
    done += (size_t)n;
  }
  return 0;
}

/* Write all of op's data at op->pos (EINTR retried), then fdatasync if op->sync: 0, or -errno. */
static int32_t batch_pwrite(const batch_op* op) {
  size_t done = 0;
  while (done < op->len) {
    ssize_t n = pwrite(op->fd, op->data + done, op->len - done, (off_t)(op->pos + (int64_t)done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return batch_errno();
    }
    done += (size_t)n;
  }
  return !op->sync || fdatasync(op->fd) == 0 ? 0 : batch_errno();
}

/* Write all of op's data to fd, then fsync it: 0, or -errno. */
static int32_t batch_write_all_sync(int fd, const batch_op* op) {
  int32_t r = batch_write_all(fd, op->data, op->len);
  if (r < 0) return r;
  return fsync(fd) == 0 ? 0 : batch_errno();
}

/*
 * Append all of the file `source` to out, from its start: copy_file_range (the kernel copies, or
 * shares, the blocks) until it reports the end; where it can't be used between these two files
 * (another file system on an older kernel, a file system without it), read and write.
 */
static int32_t batch_copy_from(int out, const char* source) {
  int in = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (in < 0) return batch_errno();
  struct stat st;
  if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    int32_t bad = fstat(in, &st) != 0 ? batch_errno() : -EINVAL; /* a FIFO, a device: not a staged file */
    close(in);
    return bad;
  }
  int32_t r = 0;
  int use_cfr = 1;
  char buf[65536];
  for (;;) {
    ssize_t n;
    if (use_cfr) {
      n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF)) {
        use_cfr = 0; /* nothing was copied by the failed call: go on by hand from here */
        continue;
      }
    } else {
      n = read(in, buf, sizeof buf);
      if (n > 0) {
        r = batch_write_all(out, buf, (size_t)n);
        if (r < 0) break;
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      r = batch_errno();
      break;
    }
    if (n == 0) break;
  }
  close(in);
  return r;
}

static int32_t batch_write_file(const batch_op* op) {
  int fd = -1;
  /* replace: O_EXCL first (the name is free on the common path: one call); on EEXIST whatever is
   * there is unlinked, never followed, and the open tried again, 3 times at most against someone
   * who keeps planting the name. */
  int flags = op->flags | O_CLOEXEC | (op->replace ? O_CREAT | O_EXCL | O_NOFOLLOW : 0);
  for (int tries = 1;; tries++) {
    fd = open(op->a, flags, op->mode);
    if (fd >= 0) break;
    if (!(op->replace && errno == EEXIST && tries < 3)) return batch_errno();
    if (unlink(op->a) != 0 && errno != ENOENT) return batch_errno();
  }
  int32_t r = 0;
  if (op->uid >= 0 && (fchown(fd, (uid_t)op->uid, (gid_t)op->gid) != 0 || fchmod(fd, (mode_t)op->fmode) != 0)) r = batch_errno();
  if (r == 0) r = batch_write_all(fd, op->data, op->len);
  if (r == 0 && op->code == OP_WRITE_FILE_FROM) r = batch_copy_from(fd, op->b);
  /* Durable: this fsync makes the file's bytes durable before the name is used (a rename over
   * nextseq, say); the name itself becomes durable with the fsync of its directory that the
   * caller puts after it in the batch (seqfile.ts batchParts: the rename, then fsyncDir). */
  if (r == 0 && fsync(fd) != 0) r = batch_errno();
  if (r < 0) {
    close(fd);
    return r;
  }
  return close(fd) == 0 || errno == EINTR ? 0 : batch_errno();
}

static int32_t batch_run_one(const batch_op* op) {
  switch (op->code) {
    case OP_FSYNC_DIR:
      return batch_fsync_dir(op->a, op->fd);
    case OP_FSYNC:
      return fsync(op->fd) == 0 ? 0 : batch_errno();
    case OP_RENAME:
      return rename(op->a, op->b) == 0 ? 0 : batch_errno();
    case OP_UNLINK:
      return unlink(op->a) == 0 ? 0 : batch_errno();
    case OP_OPEN: {
      int fd = open(op->a, op->flags | O_CLOEXEC, op->mode);
      return fd >= 0 ? fd : batch_errno();
    }
    case OP_WRITE_FILE:
    case OP_WRITE_FILE_FROM:
      return batch_write_file(op);
    case OP_CLOSE:
      return close(op->fd) == 0 || errno == EINTR ? 0 : batch_errno();
    case OP_APPEND:
      return batch_write_all_sync(op->fd, op);
    case OP_PWRITE:
      return batch_pwrite(op);
    default:
      return -EINVAL;
  }
}

/* On a pool thread: every operation in order; after a failed "must" one, none. */
static void batch_execute(napi_env env, void* data) {
  batch_job* job = data;
  int skip = 0;
  for (uint32_t i = 0; i < job->count; i++) {
    batch_op* op = &job->ops[i];
    if (skip) {
      op->result = -ECANCELED;
      continue;
    }
    op->result = batch_run_one(op);
    if (op->result < 0 && op->must && !(op->missing_ok && op->result == -ENOENT)) skip = 1;
  }
}

static void batch_complete(napi_env env, napi_status status, void* data) {
  batch_job* job = data;
  napi_value cb, ab, arr, global;
  void* raw = NULL;
  if (napi_get_reference_value(env, job->callback, &cb) == napi_ok &&
      napi_create_arraybuffer(env, job->count * sizeof(int32_t), &raw, &ab) == napi_ok &&
      napi_create_typedarray(env, napi_int32_array, job->count, ab, 0, &arr) == napi_ok && napi_get_global(env, &global) == napi_ok) {
    int32_t* out = raw;
    for (uint32_t i = 0; i < job->count; i++) out[i] = status == napi_ok ? job->ops[i].result : -ECANCELED;
    napi_call_function(env, global, cb, 1, &arr, NULL);
  }
  napi_delete_reference(env, job->callback);
  napi_delete_async_work(env, job->work);
  batch_free(job);
}

static napi_value batch_throw(napi_env env, batch_job* job, const char* what) {
  batch_free(job);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_type_error(env, NULL, what);
  return NULL;
}

static int batch_int(napi_env env, napi_value arr, uint32_t at, int* out) {
  napi_value v;
  return napi_get_element(env, arr, at, &v) == napi_ok && napi_get_value_int32(env, v, out) == napi_ok;
}

static char* batch_string_at(napi_env env, napi_value arr, uint32_t at) {
  napi_value v;
  return napi_get_element(env, arr, at, &v) == napi_ok ? batch_string(env, v) : NULL;
}

/* A Buffer argument, copied into op->data: the pool thread must not see JS memory move. */
static int batch_buffer_at(napi_env env, napi_value item, uint32_t at, batch_op* op) {
  napi_value v;
  void* bytes = NULL;
  size_t len = 0;
  bool is_buffer = false;
  if (napi_get_element(env, item, at, &v) != napi_ok || napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return 0;
  if (napi_get_buffer_info(env, v, &bytes, &len) != napi_ok) return 0;
  op->data = malloc(len ? len : 1);
  if (!op->data) return 0;
  if (len) memcpy(op->data, bytes, len);
  op->len = len;
  return 1;
}

/* One operation's arguments, from JS; 0 when they are not what the code needs. */
static int batch_parse_op(napi_env env, napi_value item, batch_op* op) {
  int code = 0;
  if (!batch_int(env, item, 0, &code)) return 0;
  op->must = (code & OP_MUST) != 0;
  op->missing_ok = (code & OP_MISSING_OK) != 0;
  op->replace = (code & OP_REPLACE) != 0;
  op->code = code & 0xff;
  switch (op->code) {
    case OP_FSYNC_DIR: {
      uint32_t n = 0;
      op->fd = -1;
      return (op->a = batch_string_at(env, item, 1)) != NULL && napi_get_array_length(env, item, &n) == napi_ok && (n < 3 || batch_int(env, item, 2, &op->fd));
    }
    case OP_UNLINK:
      return (op->a = batch_string_at(env, item, 1)) != NULL;
    case OP_FSYNC:
    case OP_CLOSE:
      return batch_int(env, item, 1, &op->fd);
    case OP_RENAME:
      return (op->a = batch_string_at(env, item, 1)) != NULL && (op->b = batch_string_at(env, item, 2)) != NULL;
    case OP_OPEN:
      return (op->a = batch_string_at(env, item, 1)) != NULL && batch_int(env, item, 2, &op->flags) && batch_int(env, item, 3, &op->mode);
    case OP_WRITE_FILE:
      return (op->a = batch_string_at(env, item, 1)) != NULL && batch_int(env, item, 2, &op->flags) && batch_int(env, item, 3, &op->mode) &&
             batch_buffer_at(env, item, 4, op) && batch_int(env, item, 5, &op->uid) && batch_int(env, item, 6, &op->gid) &&
             batch_int(env, item, 7, &op->fmode);
    case OP_APPEND:
      return batch_int(env, item, 1, &op->fd) && batch_buffer_at(env, item, 2, op);
    case OP_WRITE_FILE_FROM:
      return (op->a = batch_string_at(env, item, 1)) != NULL && batch_int(env, item, 2, &op->flags) && batch_int(env, item, 3, &op->mode) &&
             batch_buffer_at(env, item, 4, op) && (op->b = batch_string_at(env, item, 5)) != NULL && batch_int(env, item, 6, &op->uid) &&
             batch_int(env, item, 7, &op->gid) && batch_int(env, item, 8, &op->fmode);
    case OP_PWRITE: {
      napi_value v;
      return batch_int(env, item, 1, &op->fd) && napi_get_element(env, item, 2, &v) == napi_ok && napi_get_value_int64(env, v, &op->pos) == napi_ok &&
             op->pos >= 0 && batch_buffer_at(env, item, 3, op) && batch_int(env, item, 4, &op->sync);
    }
    default:
      return 0;
  }
}

/* The operations of an array of `count` (checked to be an array), copied: a job, or NULL and why
 * (the job freed). */
static batch_job* batch_parse(napi_env env, napi_value ops, uint32_t count, const char** problem) {
  batch_job* job = calloc(1, sizeof *job);
  if (!job) return *problem = "fsBatch: out of memory", NULL;
  job->ops = calloc(count ? count : 1, sizeof *job->ops);
  if (!job->ops) return batch_free(job), *problem = "fsBatch: out of memory", NULL;
  job->count = count;
  for (uint32_t i = 0; i < count; i++) {
    napi_value item;
    bool item_array = false;
    if (napi_get_element(env, ops, i, &item) != napi_ok || napi_is_array(env, item, &item_array) != napi_ok || !item_array ||
        !batch_parse_op(env, item, &job->ops[i]))
      return batch_free(job), *problem = "fsBatch: a malformed operation", NULL;
  }
  return job;
}

/* fsBatchSync(ops): as fsBatch, on this thread; the results are returned. */
static napi_value js_fs_batch_sync(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint32_t count = 0;
  bool is_array = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_is_array(env, argv[0], &is_array) != napi_ok ||
      !is_array || napi_get_array_length(env, argv[0], &count) != napi_ok)
    return batch_throw(env, NULL, "fsBatchSync(ops): an array");
  const char* problem = NULL;
  batch_job* job = batch_parse(env, argv[0], count, &problem);
  if (!job) return batch_throw(env, NULL, problem);
  batch_execute(env, job);
  napi_value arr = fspl_batch_results(env, job);
  if (!arr) return batch_throw(env, job, "fsBatchSync: out of memory");
  batch_free(job);
  return arr;
}

static napi_value js_fs_batch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return batch_throw(env, NULL, "fsBatch(ops, callback)");
  uint32_t count = 0;
  bool is_array = false;
  napi_valuetype cb_type;
  if (napi_is_array(env, argv[0], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[0], &count) != napi_ok ||
      napi_typeof(env, argv[1], &cb_type) != napi_ok || cb_type != napi_function)
    return batch_throw(env, NULL, "fsBatch(ops, callback): an array and a function");
  const char* problem = NULL;
  batch_job* job = batch_parse(env, argv[0], count, &problem);
  if (!job) return batch_throw(env, NULL, problem);
  napi_value name;
  if (napi_create_reference(env, argv[1], 1, &job->callback) != napi_ok) return batch_throw(env, job, "fsBatch: no reference");
  if (napi_create_string_utf8(env, "fsplFsBatch", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, batch_execute, batch_complete, job, &job->work) != napi_ok) {
    napi_delete_reference(env, job->callback);
    return batch_throw(env, job, "fsBatch: cannot queue the work");
  }
  if (napi_queue_async_work(env, job->work) != napi_ok) {
    napi_delete_async_work(env, job->work);
    napi_delete_reference(env, job->callback);
    return batch_throw(env, job, "fsBatch: cannot queue the work");
  }
  return NULL;
}

/* fs_batch.h: a batch held by fspl_native.c (a job's record made at the exit of its command). */

batch_job* fspl_batch_parse(napi_env env, napi_value ops, const char** problem) {
  uint32_t count = 0;
  bool is_array = false;
  if (napi_is_array(env, ops, &is_array) != napi_ok || !is_array || napi_get_array_length(env, ops, &count) != napi_ok)
    return *problem = "a batch: an array expected", NULL;
  return batch_parse(env, ops, count, problem);
}

napi_value fspl_batch_results(napi_env env, const batch_job* job) {
  napi_value ab, arr;
  void* raw = NULL;
  if (napi_create_arraybuffer(env, job->count * sizeof(int32_t), &raw, &ab) != napi_ok ||
      napi_create_typedarray(env, napi_int32_array, job->count, ab, 0, &arr) != napi_ok)
    return NULL;
  int32_t* out = raw;
  for (uint32_t i = 0; i < job->count; i++) out[i] = job->ops[i].result;
  return arr;
}

void fspl_batch_run(batch_job* job) { batch_execute(NULL, job); }

/* As firstFailure in src/sys/fs-batch.ts finds nothing: every operation succeeded, or found its
 * file missing where that is allowed. */
int fspl_batch_ok(const batch_job* job) {
  for (uint32_t i = 0; i < job->count; i++) {
    const batch_op* op = &job->ops[i];
    if (op->result < 0 && !(op->missing_ok && op->result == -ENOENT)) return 0;
  }
  return 1;
}

void fspl_batch_free(batch_job* job) { batch_free(job); }

/* Called from fspl_native.c's module init. */
napi_status fspl_register_fs_batch(napi_env env, napi_value exports) {
  napi_value fn, sync;
  napi_status s = napi_create_function(env, "fsBatch", NAPI_AUTO_LENGTH, js_fs_batch, NULL, &fn);
  if (s == napi_ok) s = napi_set_named_property(env, exports, "fsBatch", fn);
  if (s == napi_ok) s = napi_create_function(env, "fsBatchSync", NAPI_AUTO_LENGTH, js_fs_batch_sync, NULL, &sync);
  return s != napi_ok ? s : napi_set_named_property(env, exports, "fsBatchSync", sync);
}
