/*
 * fspl_native: small system-call helpers for the hot paths of fspl.
 *
 * Why native code rather than a library or Node's own API (measured on a 2-core Xeon, Node 20.20,
 * tmpfs; see docs/benchmarks-notes.md):
 *
 *  1. spawn(): Node's child_process.spawn goes through libuv 1.46, which fork()s the whole Node
 *     process (~50 MiB of address space: the page tables are copied for every child) before
 *     exec'ing the command. That costs about 2.15 ms a job, against 0.68 ms for a shell's
 *     fork+exec; a queue of 1,000 jobs running /bin/true took 2.95 s against the reference's
 *     749 ms. glibc's posix_spawn uses clone(CLONE_VM|CLONE_VFORK): no page tables are copied;
 *     child_start.c does the same, and copies no table of open files either (it says why).
 *     No npm package does this without dragging in a large dependency (and execa, built on
 *     child_process, is slower still), so this is a few dozen lines of C.
 *     Net firings use it too, with a working directory, a session of their own (SPAWN_SETSID)
 *     and no waiter on libuv's thread pool (SPAWN_NOWAIT: a net runs many at once and the pool
 *     has 4 threads); the JS side reaps them with reap() when SIGCHLD comes. In a net runner of
 *     about 100 MiB, a fork per firing held the main thread 3.4 ms. posix_spawn still holds its
 *     caller until the child has exec'd (0.15-0.6 ms, about 2 ms on a loaded machine), so net
 *     firings go through spawnStart, which performs the same start on a thread of the addon's
 *     and calls back on the main thread with the pid (see its section below).
 *
 *  2. readHeads(): a queue scan opens every job file, reads its first 4 KiB and closes it.
 *     Through Node's synchronous fs bindings each of those calls costs several microseconds of
 *     binding overhead (argument checks, a FSReqCallback, exceptions built on errors); here a
 *     scan of 10,000 files is three plain system calls a file, and the bytes come back in one
 *     Buffer. Headers in the one encoding fspl and the reference write are decoded here too
 *     (parse_header): the generic JS MessagePack decoder, still cold at start-up, was most of
 *     the scan. Two threads share the opens and reads of a large scan. The first scan of 10,000
 *     jobs went from about 200 ms to 45 ms; `queue-ls` of 10,000 jobs from 420-470 ms to
 *     200-265 ms (Node's own start-up is 100-130 ms of that).
 *
 *  3. copy(): payloads (prepare, queue-write, queue-payload, stdin-payload) are copied by the
 *     kernel without passing through user space: one copy fewer for pipe <-> file, none for a
 *     pipe to a pipe.
 *
 *  4. flock(): the queue lock (src/lock.ts) without fs-ext, whose loading (its resolution, its
 *     JavaScript, its own dlopen) was about 1 ms of every `queue-process` start; this addon is
 *     loaded anyway for the jobs (docs/benchmarks-notes.md, issue 30). fs-ext stays for when the addon
 *     is not built.
 *
 * Everything here is optional: src/native.ts loads this addon if it was built and falls back to
 * the pure-Node code otherwise (or when FSPL_NO_NATIVE=1).
 *
 * JS interface (see src/native.ts for the typed wrapper):
 *
 *   spawn(file, argv, env, stdinFd, stdoutFd, stderrFd, onExit) -> pid, or -errno
 *     argv and env are strings of NUL-terminated entries ("a\0b\0"). stdinFd -1 means
 *     /dev/null. onExit(code, signal) is called once the child has exited: code >= 0 and
 *     signal 0 for a normal exit, code -1 and the signal number when killed. The program is
 *     looked up as execvp(3) does, but in the CHILD's PATH (env), as libuv does.
 *
 *     With cwd (a string) the child starts there; flags: SPAWN_SETSID (a session of its own),
 *     SPAWN_SETPGID (a process group of its own, in our session), SPAWN_NOWAIT (no onExit:
 *     reap the child with reap(pid) -> [code, signal] or null while it runs). `spawnFlags`
 *     says which flags this build knows (an older one ignores the others).
 *
 *   spawnStart(file, argv, env, stdinFd, stdoutFd, stderrFd, cwd, flags, onStarted) -> undefined
 *     spawn with SPAWN_NOWAIT, performed on the addon's spawner thread; onStarted(pid or -errno)
 *     comes later on the main thread. The fds must stay open until then.
 *
 *   copy(inFd, outFd, limit) -> [copied, errno]
 *     Moves up to limit bytes (-1: no limit) from inFd to outFd, from and at their current
 *     offsets, inside the kernel: splice(2) when either end is a pipe, copy_file_range(2) between
 *     two regular files. Stops at the limit (errno 0), at the first 0 return (errno 0, copied
 *     below the limit: maybe the end, but copy_file_range also returns 0 on some pseudo-files, so
 *     the caller confirms the end with read(2)), or at the first error (its errno; nothing of the
 *     failed call was moved). Any other pair of descriptors gives EINVAL at once. The caller goes
 *     on with its read/write loop in every case but the limit: that loop is the fallback for
 *     kernels and files that refuse (EINVAL, EXDEV, ENOSYS, O_APPEND, non-blocking ends...), and
 *     reports a genuine error (EPIPE, ENOSPC, EIO) the way Node reports it.
 *
 *   flock(fd, operation) -> 0 or errno
 *     flock(2) with the operation's bits (LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8), retried
 *     on EINTR.
 *
 *   stamps(paths, out) -> undefined
 *     stat(2) of each path of the array; out (a Float64Array of 3 per path) gets its inode, and its
 *     mtime and ctime in milliseconds as Node's statSync gives mtimeMs (sec * 1e3 + nsec / 1e6), or
 *     NaN for the inode when the stat failed. A watcher's safety looks at 10,000 queues: no Stats
 *     object and no Date a path, which were most of an idle watcher's CPU.
 *
 *   names(dir, max) -> array of names, null (more than max), or errno
 *     The names in a directory but . and .., in the directory's order, when there are at most
 *     max of them; null as soon as there are more (the caller then reads it as a stream, its
 *     memory bounded). A queue's or a place's jobs/ is read this way at every scan: through
 *     Node's fs.opendirSync, a Dir and a Dirent a name cost several times what fs.readdirSync
 *     does, and that has no bound (docs/benchmarks-notes.md, "Listing jobs/").
 *
 *   readHeads(dir, names, count, max, parse) -> [bytes, lengths, parsed] or -errno (no dir)
 *     names: count NUL-terminated file names in dir. For each file, up to max bytes from offset
 *     0; lengths[i] is the byte count (the bytes follow each other in `bytes`) or -errno.
 *     With parse, `parsed` holds the headers that are in the reference's exact encoding (see
 *     parse_header), decoded; any other file is left to the JS decoder, which then gives the
 *     same result or the same error as for a file read without this addon.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <node_api.h>
#include <uv.h>

#include "child_start.h"
#include "fs_batch.h"

#define CHECK(call)                                 \
  do {                                              \
    if ((call) != napi_ok) return fail(env, #call); \
  } while (0)

static napi_value fail(napi_env env, const char* what) {
  const napi_extended_error_info* info = NULL;
  napi_get_last_error_info(env, &info);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) {
    napi_throw_error(env, NULL, info && info->error_message ? info->error_message : what);
  }
  return NULL;
}

static napi_value make_int(napi_env env, int v) {
  napi_value out;
  if (napi_create_int32(env, v, &out) != napi_ok) return NULL;
  return out;
}

/* A JS string as a malloc'd UTF-8 buffer (NULs inside are kept; *len excludes the final one). */
static char* get_string(napi_env env, napi_value v, size_t* len) {
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) return NULL;
  char* s = malloc(n + 1);
  if (!s) return NULL;
  if (napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok) {
    free(s);
    return NULL;
  }
  if (len) *len = n;
  return s;
}

/* Split "a\0b\0" (length n) into a NULL-terminated vector pointing into s. */
static char** split_nul(char* s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) count += s[i] == '\0';
  char** v = malloc((count + 1) * sizeof(char*));
  if (!v) return NULL;
  size_t k = 0;
  char* start = s;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\0') {
      v[k++] = start;
      start = s + i + 1;
    }
  }
  v[k] = NULL;
  return v;
}

/* ------------------------------------------------------------------------------------------ */
/* spawn                                                                                      */

typedef struct {
  napi_async_work work;
  napi_ref callback;
  pid_t pid;
} wait_req;

/* Without a pidfd (pidfd_wait_start, below), on a thread-pool thread: wait until the child has
 * exited, without reaping it. The zombie is
 * reaped on the main thread (wait_complete), so a kill() from JS (the timeout) can never reach
 * a recycled pid: until then the pid still belongs to our zombie. */
static void wait_execute(napi_env env, void* data) {
  (void)env;
  wait_req* req = data;
  siginfo_t info;
  for (;;) {
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)req->pid, &info, WEXITED | WNOWAIT) == 0 || errno != EINTR) break;
  }
}

static void wait_complete(napi_env env, napi_status status, void* data) {
  wait_req* req = data;
  int code = -1, sig = 0, st = 0;
  pid_t r;
  do r = waitpid(req->pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r == req->pid) {
    if (WIFEXITED(st)) code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) sig = WTERMSIG(st);
  }
  napi_value cb, global, argv[2];
  if (status != napi_cancelled && napi_get_reference_value(env, req->callback, &cb) == napi_ok && cb &&
      napi_get_global(env, &global) == napi_ok) {
    argv[0] = make_int(env, code);
    argv[1] = make_int(env, sig);
    napi_call_function(env, global, cb, 2, argv, NULL); /* an exception propagates as uncaught */
  }
  napi_delete_reference(env, req->callback);
  napi_delete_async_work(env, req->work);
  free(req);
}

/* Waiting through a pidfd (Linux 5.3): the event loop polls a descriptor that becomes readable when
 * the child exits, and the main thread reaps it there. The thread pool's waiter (above) hands each
 * exit over twice (a pool thread woken from waitid, then the loop woken by it): a queue's jobs run
 * one after another, and that handover was on every job's path. The pool stays the fallback.
 *
 * An env's pidfds are in one epoll set of its own, which the loop polls through one handle (a
 * pidfd_set). A handle per child cost, at every start and exit, libuv's checks of the descriptor
 * (three system calls), its own epoll changes and a handle's close: about 1.5 % of the CPU of a pass
 * over 1,000 queues. Now a child costs its pidfd, two epoll_ctl (in and out), and its share of one
 * epoll_wait. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct job_chain;
struct pidfd_set;

typedef struct pidfd_wait {
  struct pidfd_set* set;
  napi_env env;
  napi_ref callback;
  napi_async_context ctx;
  pid_t pid;
  int fd;
  struct job_chain* chain;      /* what to do at its exit before JS hears of it (chain(), below) */
  struct pidfd_wait* next_wait; /* the list of waits a chain() can find (waits_add) */
  int listed;
  struct pidfd_wait *set_prev, *set_next; /* the set's members */
} pidfd_wait;

/* One env's waits: their pidfds in an epoll set that the env's loop polls. The handle holds the loop
 * only while a child is waited for (uv_ref, uv_unref). Made at the env's first wait; closed as the
 * env ends (a worker that stops), its children then left to the process, as the pool's waiter leaves them. */
typedef struct pidfd_set {
  uv_poll_t poll; /* first: the handle's address is the set's */
  napi_env env;
  int epfd;
  int count;
  pidfd_wait* members;
  napi_async_cleanup_hook_handle hook;
} pidfd_set;

/* The waits of running children, for chain() and unchain() to find by pid: every env's, under a
 * lock (each env is one thread; a worker's env is another). */
static pidfd_wait* waits;
static pthread_mutex_t waits_lock = PTHREAD_MUTEX_INITIALIZER;

static void waits_add(pidfd_wait* w) {
  pthread_mutex_lock(&waits_lock);
  w->next_wait = waits;
  waits = w;
  w->listed = 1;
  pthread_mutex_unlock(&waits_lock);
}

static void waits_remove(pidfd_wait* w) {
  pthread_mutex_lock(&waits_lock);
  if (w->listed) {
    for (pidfd_wait** p = &waits; *p; p = &(*p)->next_wait)
      if (*p == w) {
        *p = w->next_wait;
        break;
      }
    w->listed = 0;
  }
  pthread_mutex_unlock(&waits_lock);
}

/* The running child `pid` of env's, still waited for; NULL when it has exited or is not ours. */
static pidfd_wait* waits_find(napi_env env, pid_t pid) {
  pthread_mutex_lock(&waits_lock);
  pidfd_wait* w = waits;
  while (w && !(w->env == env && w->pid == pid)) w = w->next_wait;
  pthread_mutex_unlock(&waits_lock);
  return w;
}

static void chain_free(napi_env env, struct job_chain* c);
static void chain_fire(napi_env env, struct job_chain* c, napi_value* results, napi_value* next);

/* A wait's own resources: its pidfd (which leaves the epoll set as it closes), its context and callback. */
static void wait_free(pidfd_wait* w) {
  waits_remove(w);
  if (w->chain) chain_free(w->env, w->chain);
  if (w->fd >= 0) close(w->fd);
  napi_async_destroy(w->env, w->ctx);
  napi_delete_reference(w->env, w->callback);
  free(w);
}

/* w leaves its set: the set holds the loop no more once it is empty. Its pidfd leaves the epoll set
 * by name before it is closed: a close removes it only once every descriptor of its open file is
 * closed (epoll(7)), and copies can exist for a moment (a fork holds them until its exec): the set
 * would then report a wait already freed (test/sys/native.test.ts crashes without this). */
static void set_leave(pidfd_wait* w) {
  pidfd_set* s = w->set;
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, w->fd, NULL);
  if (w->set_prev) w->set_prev->set_next = w->set_next;
  else s->members = w->set_next;
  if (w->set_next) w->set_next->set_prev = w->set_prev;
  w->set_prev = w->set_next = NULL;
  if (--s->count == 0) uv_unref((uv_handle_t*)&s->poll);
}

static void set_closed(uv_handle_t* h) {
  pidfd_set* s = (pidfd_set*)h;
  while (s->members) {
    pidfd_wait* w = s->members;
    s->members = w->set_next;
    wait_free(w);
  }
  close(s->epfd);
  napi_async_cleanup_hook_handle hook = s->hook;
  free(s);
  if (hook) napi_remove_async_cleanup_hook(hook);
}

/* The env ends (a worker stops) while children run: stop waiting; they are left to the process, as
 * the pool's waiter leaves them. */
static void set_cleanup(napi_async_cleanup_hook_handle hook, void* data) {
  (void)hook;
  pidfd_set* s = data;
  for (pidfd_wait* w = s->members; w; w = w->set_next) waits_remove(w); /* nothing can chain to them now */
  uv_close((uv_handle_t*)&s->poll, set_closed);
}

/* A member's pidfd is readable (or the set's poll failed: status < 0): reap it if it has exited, and
 * tell JS. */
static void wait_ready(pidfd_wait* w, int status) {
  int st = 0, code = -1, sig = 0;
  pid_t r;
  do r = waitpid(w->pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0 && status == 0) return; /* not exited yet: a pidfd is readable only once it has */
  set_leave(w);
  waits_remove(w); /* exited: nothing more can be chained to it */
  struct job_chain* chain = w->chain;
  w->chain = NULL;
  if (r == w->pid) {
    if (WIFEXITED(st)) code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) sig = WTERMSIG(st);
  }
  napi_env env = w->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) == napi_ok) {
    napi_value cb, global, argv[4], ignored;
    size_t argc = 2;
    /* A chained job: its record and the next start, before JS runs (only after status 0). */
    if (chain && r == w->pid && code == 0 && sig == 0) {
      chain_fire(env, chain, &argv[2], &argv[3]);
      argc = 4;
    }
    if (napi_get_reference_value(env, w->callback, &cb) == napi_ok && cb && napi_get_global(env, &global) == napi_ok) {
      argv[0] = make_int(env, code);
      argv[1] = make_int(env, sig);
      /* make_callback: the ticks and microtasks the callback queues run after it, as after any
       * of the loop's callbacks; what it throws is uncaught, as from the pool's completion. */
      if (napi_make_callback(env, w->ctx, global, cb, argc, argv, &ignored) == napi_pending_exception) {
        napi_value err;
        if (napi_get_and_clear_last_exception(env, &err) == napi_ok) napi_fatal_exception(env, err);
      }
    }
    napi_close_handle_scope(env, scope);
  }
  if (chain) chain_free(env, chain);
  wait_free(w);
}

/* The set's epoll descriptor is readable: the members whose children have exited. */
static void set_ready(uv_poll_t* h, int status, int events) {
  (void)events;
  pidfd_set* s = (pidfd_set*)h;
  if (status < 0) {
    /* The set can't be polled (never seen): every member is told, as one pidfd's failure was. */
    while (s->members) wait_ready(s->members, status);
    return;
  }
  struct epoll_event ev[64];
  int n;
  do n = epoll_wait(s->epfd, ev, 64, 0);
  while (n < 0 && errno == EINTR);
  /* A callback may start children (they join the set) but ends none of these waits but its own. */
  for (int i = 0; i < n; i++) wait_ready(ev[i].data.ptr, 0);
}

/* The env's set, made at its first wait; NULL when it can't be (no epoll, no memory). */
static pidfd_set* set_of(napi_env env) {
  void* data = NULL;
  if (napi_get_instance_data(env, &data) == napi_ok && data) return data;
  struct uv_loop_s* loop;
  pidfd_set* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->env = env;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || (s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    free(s);
    return NULL;
  }
  if (uv_poll_init(loop, &s->poll, s->epfd) != 0) {
    close(s->epfd);
    free(s);
    return NULL;
  }
  /* From here the handle exists: whatever fails, it is closed, and set_closed frees the rest. */
  if (napi_add_async_cleanup_hook(env, set_cleanup, s, &s->hook) != napi_ok ||
      napi_set_instance_data(env, s, NULL, NULL) != napi_ok) {
    uv_close((uv_handle_t*)&s->poll, set_closed);
    return NULL;
  }
  uv_poll_start(&s->poll, UV_READABLE, set_ready);
  uv_unref((uv_handle_t*)&s->poll);
  return s;
}

/* Wait for pid through a pidfd (close-on-exec, as pidfd_open makes them) and call onExit(code,
 * signal) from the loop: 0, or -1 when it can't (no pidfd_open, no descriptor left, no memory):
 * the caller waits on the pool then. */
static int pidfd_wait_start(napi_env env, pid_t pid, napi_value on_exit) {
  pidfd_set* s = set_of(env);
  if (!s) return -1;
  pidfd_wait* w = calloc(1, sizeof *w);
  if (!w) return -1;
  w->set = s;
  w->env = env;
  w->pid = pid;
  w->fd = -1;
  napi_value name, resource;
  if (napi_create_object(env, &resource) != napi_ok ||
      napi_create_string_utf8(env, "fspl:pidfd", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_async_init(env, resource, name, &w->ctx) != napi_ok) {
    free(w);
    return -1;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
  if (napi_create_reference(env, on_exit, 1, &w->callback) != napi_ok ||
      (w->fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, w->fd, &ev) != 0) {
    if (w->fd >= 0) close(w->fd);
    if (w->callback) napi_delete_reference(env, w->callback);
    napi_async_destroy(env, w->ctx);
    free(w);
    return -1;
  }
  w->set_next = s->members;
  if (s->members) s->members->set_prev = w;
  s->members = w;
  if (s->count++ == 0) uv_ref((uv_handle_t*)&s->poll);
  waits_add(w);
  return 0;
}

/*
 * The last names found through PATH, each kept for a second (PATH_HIT_NS), as a shell's command
 * hash keeps them (for good, there). A pass over 1,000 queues starts `sh` 1,000 times, and each
 * search made a failed stat(2) for every directory of PATH before the one holding it (8 on a
 * machine whose PATH starts with ~/.cargo/bin and pyenv's: about 2 % of the pass's CPU). What a
 * second's memory changes: a program put in an earlier directory of PATH is found up to a second
 * later (docs/compatibility.md). One whose exec fails at the name kept (removed, no longer
 * executable) is searched for again at once. Only absolute names are kept (a relative directory
 * in PATH depends on the working directory). Read and written by spawn_path alone, which runs
 * between fspl_child_begin and fspl_child_end: one start at a time in the process, under their lock.
 */
#define PATH_HITS 4
#define PATH_HIT_NS 1000000000ull
static struct {
  char* file;   /* the name asked for */
  char* path;   /* PATH when it was found */
  char* found;  /* where: an absolute path */
  uint64_t at;  /* when (CLOCK_MONOTONIC_COARSE, ns); 0 for a free entry */
} path_hits[PATH_HITS];

static uint64_t coarse_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec + 1; /* never 0 */
}

static int path_hit_find(const char* file, const char* path, uint64_t now) {
  for (int i = 0; i < PATH_HITS; i++)
    if (path_hits[i].at && now - path_hits[i].at < PATH_HIT_NS && strcmp(path_hits[i].file, file) == 0 &&
        strcmp(path_hits[i].path, path) == 0)
      return i;
  return -1;
}

static void path_hit_forget(int i) {
  free(path_hits[i].file);
  free(path_hits[i].path);
  free(path_hits[i].found);
  memset(&path_hits[i], 0, sizeof path_hits[i]);
}

/* Keep `found` (absolute) for file under path, in place of the oldest entry; nothing kept without memory. */
static void path_hit_keep(const char* file, const char* path, const char* found, uint64_t now) {
  int oldest = 0;
  for (int i = 0; i < PATH_HITS; i++) {
    if (path_hits[i].at && strcmp(path_hits[i].file, file) == 0 && strcmp(path_hits[i].path, path) == 0) {
      oldest = i;
      break;
    }
    if (path_hits[i].at < path_hits[oldest].at) oldest = i;
  }
  path_hit_forget(oldest);
  char *f = strdup(file), *p = strdup(path), *w = strdup(found);
  if (!f || !p || !w) {
    free(f);
    free(p);
    free(w);
    return;
  }
  path_hits[oldest].file = f;
  path_hits[oldest].path = p;
  path_hits[oldest].found = w;
  path_hits[oldest].at = now;
}

/* An exec's failure that says the name no longer holds what was found there: search again. */
static int path_gone(int err) {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

/* execvp(3) semantics (glibc's __execvpe, minus its ENOEXEC retry through /bin/sh, which the
 * JS side handles by falling back to child_process), with PATH taken from the child's env. */
static int spawn_path(pid_t* pid, const char* file, const fspl_child* c) {
  if (*file == '\0') return ENOENT;
  if (strchr(file, '/')) return fspl_child_exec(pid, file, c);
  const char* cwd = c->cwd;
  const char* path = NULL;
  for (char* const* e = c->envp; *e; e++) {
    if (strncmp(*e, "PATH=", 5) == 0) {
      path = *e + 5;
      break;
    }
  }
  if (!path) path = "/bin:/usr/bin"; /* glibc's default (confstr _CS_PATH) */
  uint64_t now = coarse_ns();
  int hit = path_hit_find(file, path, now);
  if (hit >= 0) {
    int err = fspl_child_exec(pid, path_hits[hit].found, c);
    if (!path_gone(err)) return err; /* started, or failed as the search would have failed there */
    path_hit_forget(hit);
  }
  size_t flen = strlen(file);
  size_t plen = strlen(path);
  char* buf = malloc(plen + flen + 2);
  if (!buf) return ENOMEM;
  int got_eacces = 0;
  int err = ENOENT;
  const char* p = path;
  for (;;) {
    const char* end = strchrnul(p, ':');
    size_t dlen = (size_t)(end - p);
    char* w = buf;
    if (dlen) {
      memcpy(w, p, dlen);
      w += dlen;
      *w++ = '/';
    }
    memcpy(w, file, flen + 1); /* an empty PATH entry means the current directory */
    struct stat st;
    /* A candidate that does not exist fails execve with ENOENT/ENOTDIR: skip it without the cost
     * of a failed spawn. Anything else is tried for real, so errors are execve's own. */
    /* (A relative candidate with a cwd given is looked up by the child, after its chdir.) */
    if (!(cwd && buf[0] != '/') && stat(buf, &st) < 0 && (errno == ENOENT || errno == ENOTDIR)) {
      err = errno;
    } else {
      err = fspl_child_exec(pid, buf, c);
      if (err == 0) {
        if (buf[0] == '/') path_hit_keep(file, path, buf, now);
        break;
      }
    }
    switch (err) {
      case EACCES:
        got_eacces = 1;
        break;
      case ENOENT:
      case ESTALE:
      case ENOTDIR:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        free(buf);
        return err;
    }
    if (*end == '\0') break;
    p = end + 1;
  }
  free(buf);
  if (err != 0 && got_eacces) err = EACCES;
  return err;
}

/* Flags of spawn's 9th argument (and of spawnStart's 8th). */
#define SPAWN_SETSID FSPL_CHILD_SETSID /* the child leads a new session and process group (detached) */
#define SPAWN_NOWAIT 2 /* no waiter: the caller reaps the child with reap() (on SIGCHLD) */
#define SPAWN_SETPGID FSPL_CHILD_SETPGID /* the child leads a new process group, in our session */

/* One start's arguments, owned (malloc'd copies of the JS strings), so that another thread can
 * perform it (spawnStart) after the JS call has returned. */
typedef struct {
  char* file;
  char* cwd; /* NULL: ours */
  char* astr;
  char* estr;
  char** argv; /* into astr */
  char** envp; /* into estr */
  int fds[3];
  int flags;
} spawn_args;

static void spawn_args_free(spawn_args* a) {
  free(a->file);
  free(a->cwd);
  free(a->astr);
  free(a->estr);
  free(a->argv);
  free(a->envp);
}

/* Read file (args[0]), argv (args[1]), env (args[2]), the three fds (args[3..5]) and an optional
 * cwd (a string, or anything else for none) into `a`. A napi failure, or a file, argv or env
 * that is not a string, has thrown (returns -1); out of memory returns ENOMEM, to be reported like
 * a failed start. */
static int spawn_args_read(napi_env env, napi_value* args, napi_value cwd_arg, spawn_args* a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < 3; i++) {
    if (napi_get_value_int32(env, args[3 + i], &a->fds[i]) != napi_ok) return fail(env, "spawn: fds expected"), -1;
  }
  if (cwd_arg) {
    napi_valuetype ct;
    if (napi_typeof(env, cwd_arg, &ct) != napi_ok) return fail(env, "spawn: cwd"), -1;
    if (ct == napi_string && !(a->cwd = get_string(env, cwd_arg, NULL))) return ENOMEM;
  }
  /* A value of another type is the caller's mistake, said as one: not a memory error (ENOMEM). */
  for (int i = 0; i < 3; i++) {
    napi_valuetype t;
    if (napi_typeof(env, args[i], &t) != napi_ok || t != napi_string) return fail(env, "spawn: file, argv and env must be strings"), -1;
  }
  size_t alen = 0, elen = 0;
  a->file = get_string(env, args[0], NULL);
  a->astr = get_string(env, args[1], &alen);
  a->estr = get_string(env, args[2], &elen);
  a->argv = a->astr ? split_nul(a->astr, alen) : NULL;
  a->envp = a->estr ? split_nul(a->estr, elen) : NULL;
  return a->file && a->argv && a->envp ? 0 : ENOMEM;
}

/* Start the child `a` describes: its pid in *pid, or an errno. Touches no JS value, so it can run
 * on any thread (js_spawn calls it on the main thread, the spawner thread for spawnStart). The
 * start itself is child_start.c's, in place of posix_spawn (it says why). */
static int spawn_run(const spawn_args* a, pid_t* pid) {
  fspl_child c = {a->argv, a->envp, a->cwd, {a->fds[0], a->fds[1], a->fds[2]}, a->flags & (SPAWN_SETSID | SPAWN_SETPGID)};
  if (a->fds[1] < 0 || a->fds[2] < 0) return EBADF; /* only stdin may be /dev/null (-1) */
  /* As libuv does in its child for fds 0-2: the child gets blocking descriptors. (The flag
   * belongs to the open file description, which the child shares: the effect is the same.) */
  for (int i = 0; i < 3; i++) {
    if (a->fds[i] < 0) continue;
    int fl = fcntl(a->fds[i], F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(a->fds[i], F_SETFL, fl & ~O_NONBLOCK);
  }
  int err = fspl_child_begin(&c);
  if (err) return err;
  err = spawn_path(pid, a->file, &c);
  fspl_child_end();
  return err;
}

/* Wait for pid and call on_exit(code, signal) from the loop: through a pidfd, else on the thread
 * pool. 0, or -1 when neither can be set up (no memory): the caller decides about the child. */
static int wait_start(napi_env env, pid_t pid, napi_value on_exit) {
  if (pidfd_wait_start(env, pid, on_exit) == 0) return 0;
  wait_req* req = calloc(1, sizeof *req);
  napi_value name;
  if (!req) return -1;
  req->pid = pid;
  if (napi_create_reference(env, on_exit, 1, &req->callback) != napi_ok ||
      napi_create_string_utf8(env, "fspl:waitpid", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, wait_execute, wait_complete, req, &req->work) != napi_ok ||
      napi_queue_async_work(env, req->work) != napi_ok) {
    free(req);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* chain: the next job of a queue started at the exit of the one before it                     */
/*
 * A queue runs its jobs one after the other, and between two of them it records the first
 * (src/process/finish.ts: a note, nextseq, the file deleted) and starts the second. Done in JS,
 * that step held about 180 us of the main thread per job, against 60 us for the same system
 * calls in C (docs/benchmarks-notes.md, "Issue 43, seventh pass"). chain(pid, record, next...)
 * arms the running child `pid`: at its exit with status 0, wait_ready runs the record (the same
 * batch, in the same order, that fsBatchSync would run from JS) and, only if all of it
 * succeeded and the next job's name still holds the file it was opened from, starts the next
 * job (as spawn) and waits for it (as spawn); then onExit of the
 * first child gets two more arguments: the record's results (an Int32Array, as fsBatchSync's)
 * and the next child's pid, -errno if it could not start, or 0 if the record failed (nothing
 * started). Any other exit (a status other than 0, a signal) runs nothing and adds nothing:
 * JS decides, as without a chain. unchain(pid) takes the arming back (the run stops, say).
 * JS keeps the next job's descriptors open until the first child's onExit has come.
 */
typedef struct job_chain {
  struct batch_job* record;
  spawn_args next;
  char* next_path; /* the next job's file: started only while its name holds ... */
  double next_ino; /* ... the inode it was opened with (as JS compares them: doubles) */
  napi_ref on_exit; /* the next child's */
} job_chain;

static void chain_free(napi_env env, job_chain* c) {
  fspl_batch_free(c->record);
  spawn_args_free(&c->next);
  free(c->next_path);
  if (c->on_exit) napi_delete_reference(env, c->on_exit);
  free(c);
}

/* At the armed child's exit with status 0: the record, then the next start. */
static void chain_fire(napi_env env, job_chain* c, napi_value* results, napi_value* next) {
  int started = 0;
  struct stat st;
  fspl_batch_run(c->record);
  /* The name is in jobs/, which the queue's writers may change: a file removed or replaced under
   * it since it was opened is not started here, and its turn opens it anew (O_NOFOLLOW, checked).
   * lstat, not stat: nothing is followed, and a link put at the name (even to the same file) is
   * not the regular file opened. The start uses the descriptor opened then, never this name. */
  if (fspl_batch_ok(c->record) && lstat(c->next_path, &st) == 0 && S_ISREG(st.st_mode) &&
      (double)st.st_ino == c->next_ino) {
    pid_t pid;
    napi_value cb;
    int err = spawn_run(&c->next, &pid);
    if (err) started = -err;
    else {
      /* The child runs: it must be waited for, or JS would start it again. */
      if (napi_get_reference_value(env, c->on_exit, &cb) != napi_ok || wait_start(env, pid, cb) != 0)
        napi_fatal_error("fspl chain", NAPI_AUTO_LENGTH, "cannot wait for a started job", NAPI_AUTO_LENGTH);
      started = pid;
    }
  }
  *results = fspl_batch_results(env, c->record);
  *next = make_int(env, started);
  if (!*results || !*next) napi_fatal_error("fspl chain", NAPI_AUTO_LENGTH, "cannot report a job's record", NAPI_AUTO_LENGTH);
}

/* chain(pid, record, file, argv, env, stdin, stdout, stderr, flags, jobPath, jobIno, onExit) -> true,
 * or false when `pid` is no running child waited for through a pidfd, or is chained already. */
static napi_value js_chain(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 12;
  napi_value args[12];
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  int32_t pid = 0, flags = 0;
  double ino = 0;
  napi_valuetype t, pt;
  if (argc < 12 || napi_get_value_int32(env, args[0], &pid) != napi_ok || napi_get_value_int32(env, args[8], &flags) != napi_ok ||
      napi_typeof(env, args[9], &pt) != napi_ok || pt != napi_string || napi_get_value_double(env, args[10], &ino) != napi_ok ||
      napi_typeof(env, args[11], &t) != napi_ok || t != napi_function) {
    napi_throw_type_error(env, NULL, "chain: pid, record, file, argv, env, 3 fds, flags, job path, inode, onExit expected");
    return NULL;
  }
  napi_value out;
  pidfd_wait* w = waits_find(env, (pid_t)pid);
  if (!w || w->chain) {
    CHECK(napi_get_boolean(env, false, &out));
    return out;
  }
  job_chain* c = calloc(1, sizeof *c);
  if (!c) return fail(env, "chain: out of memory");
  const char* problem = NULL;
  if (!(c->record = fspl_batch_parse(env, args[1], &problem))) {
    free(c);
    napi_throw_type_error(env, NULL, problem);
    return NULL;
  }
  int err = spawn_args_read(env, args + 2, NULL, &c->next);
  c->next.flags = flags & (SPAWN_SETSID | SPAWN_SETPGID);
  c->next_ino = ino;
  if (err == 0 && !(c->next_path = get_string(env, args[9], NULL))) err = ENOMEM;
  if (err != 0 || napi_create_reference(env, args[11], 1, &c->on_exit) != napi_ok) {
    chain_free(env, c);
    return err < 0 ? NULL : fail(env, "chain: out of memory");
  }
  w->chain = c;
  CHECK(napi_get_boolean(env, true, &out));
  return out;
}

/* unchain(pid) -> whether a chain was taken back (false: none, or the child has exited). */
static napi_value js_unchain(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value args[1], out;
  int32_t pid = 0;
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  if (argc < 1 || napi_get_value_int32(env, args[0], &pid) != napi_ok) {
    napi_throw_type_error(env, NULL, "unchain: a pid expected");
    return NULL;
  }
  pidfd_wait* w = waits_find(env, (pid_t)pid);
  job_chain* c = w ? w->chain : NULL;
  if (c) {
    w->chain = NULL;
    chain_free(env, c);
  }
  CHECK(napi_get_boolean(env, c != NULL, &out));
  return out;
}

/* spawn(file, argv, env, stdin, stdout, stderr, onExit, [cwd], [flags]) */
static napi_value js_spawn(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 9;
  napi_value args[9];
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  if (argc < 7) {
    napi_throw_type_error(env, NULL, "spawn: 7 arguments expected");
    return NULL;
  }
  int flags = 0;
  if (argc >= 9) {
    napi_valuetype ft;
    CHECK(napi_typeof(env, args[8], &ft));
    if (ft == napi_number) CHECK(napi_get_value_int32(env, args[8], &flags));
  }
  napi_valuetype t;
  CHECK(napi_typeof(env, args[6], &t));
  if (t != napi_function && !(flags & SPAWN_NOWAIT)) {
    napi_throw_type_error(env, NULL, "spawn: onExit must be a function");
    return NULL;
  }
  spawn_args a;
  int err = spawn_args_read(env, args, argc >= 8 ? args[7] : NULL, &a);
  a.flags = flags;
  pid_t pid = -1;
  if (err == 0) err = spawn_run(&a, &pid);
  spawn_args_free(&a);
  if (err < 0) return NULL; /* thrown */
  if (err) return make_int(env, -err);
  if (flags & SPAWN_NOWAIT) return make_int(env, pid);
  if (wait_start(env, pid, args[6]) == 0) return make_int(env, pid);
  /* Cannot happen in practice; do not leave a zombie behind. */
  int st;
  waitpid(pid, &st, 0);
  return fail(env, "spawn: cannot wait for the child");
}

/* reap(pid): a child started with SPAWN_NOWAIT that has exited is reaped: [code, signal]
 * (code -1 when killed by a signal). null while it runs. Called on the main thread (on SIGCHLD),
 * so a kill() from JS can never reach a recycled pid. */
static napi_value js_reap(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value args[1];
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  int32_t pid;
  if (argc < 1 || napi_get_value_int32(env, args[0], &pid) != napi_ok || pid <= 0) {
    napi_throw_type_error(env, NULL, "reap: a pid expected");
    return NULL;
  }
  int st = 0;
  pid_t r;
  do r = waitpid((pid_t)pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  napi_value out, nul;
  if (r == 0) {
    CHECK(napi_get_null(env, &nul));
    return nul;
  }
  int code = -1, sig = 0;
  if (r == pid) {
    if (WIFEXITED(st)) code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) sig = WTERMSIG(st);
  } /* else ECHILD: reaped by someone else; report an unknown status */
  CHECK(napi_create_array_with_length(env, 2, &out));
  CHECK(napi_set_element(env, out, 0, make_int(env, code)));
  CHECK(napi_set_element(env, out, 1, make_int(env, sig)));
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* spawnStart: net firings started on a thread of their own                                    */
/*
 * A start returns only once the child has called exec (CLONE_VFORK suspends the calling
 * thread until then): 0.15-0.6 ms on an idle machine, about 3 ms under load, and a net runner
 * called it on its event loop for every firing (2.1 ms a firing in the profile of a chain of
 * `cat`s under load). spawnStart hands the start to one dedicated thread and calls back on the
 * main thread with the pid (or -errno) through a napi_threadsafe_function.
 *
 * Not libuv's pool (napi async work): its 4 threads are shared with the commit's fs calls,
 * which a start would then wait behind, and the reverse. One thread does the starts one after
 * the other, in the order asked; that is enough, as a start is well under a millisecond.
 *
 * The children are SPAWN_NOWAIT ones: the JS side reaps them with reap() on the main thread
 * (on SIGCHLD), as before. A child can exit before its pid reaches the main thread; it then
 * stays a zombie (nothing else reaps it) until the JS side, having registered the pid, tries
 * reap() once. The caller keeps the child's descriptors open until the callback has come.
 *
 * One spawner per napi_env (main thread or worker), made on first use: the state is the data of
 * the spawnStart function. It is freed once both the env's cleanup hook (which stops and joins
 * the thread) and the threadsafe function's finaliser have run: Node runs cleanup hooks in
 * reverse order of registration, so the function (made later) is finalised first, and the
 * thread must never call it after that (calls are made under the lock, which the finaliser
 * takes to clear it).
 */

typedef struct spawn_job {
  struct spawn_job* next;
  spawn_args args;
  napi_ref callback;
  int result; /* pid, or -errno */
} spawn_job;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  spawn_job *head, *tail; /* waiting to be started, oldest first */
  int stopping;
  int thread_ok;
  pthread_t thread;
  napi_threadsafe_function tsfn; /* NULL before first use and once finalised */
  uint32_t in_flight;            /* asked for and not yet called back (main thread only) */
  int owners;                    /* the cleanup hook, and the tsfn while it lives */
} spawner;

static void spawn_job_free(spawn_job* j) {
  spawn_args_free(&j->args);
  free(j);
}

static void spawner_release(spawner* s) {
  if (--s->owners > 0) return;
  for (spawn_job* j = s->head; j;) {
    spawn_job* next = j->next;
    spawn_job_free(j); /* their napi_refs die with the env */
    j = next;
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->wake);
  free(s);
}

static void* spawner_main(void* arg) {
  spawner* s = arg;
  pthread_setname_np(pthread_self(), "fspl-spawner"); /* as ps and top show it */
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stopping) pthread_cond_wait(&s->wake, &s->lock);
    if (s->stopping) break;
    spawn_job* j = s->head;
    s->head = j->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    pid_t pid = -1;
    int err = spawn_run(&j->args, &pid);
    j->result = err ? -err : (int)pid;
    pthread_mutex_lock(&s->lock);
    /* Under the lock: the finaliser clears tsfn under it too. Unbounded queue: never blocks. */
    if (!s->tsfn || napi_call_threadsafe_function(s->tsfn, j, napi_tsfn_nonblocking) != napi_ok) spawn_job_free(j);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* On the main thread: hand the result to the JS callback. env is NULL when the function is being
 * torn down with calls still queued. */
static void spawner_deliver(napi_env env, napi_value js_cb, void* context, void* data) {
  (void)js_cb;
  spawner* s = context;
  spawn_job* j = data;
  if (env) {
    napi_value cb, global, argv[1];
    if (--s->in_flight == 0) napi_unref_threadsafe_function(env, s->tsfn);
    if (napi_get_reference_value(env, j->callback, &cb) == napi_ok && cb && napi_get_global(env, &global) == napi_ok &&
        (argv[0] = make_int(env, j->result))) {
      napi_call_function(env, global, cb, 1, argv, NULL); /* an exception propagates as uncaught */
    }
    napi_delete_reference(env, j->callback);
  }
  spawn_job_free(j);
}

static void spawner_finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  spawner* s = data;
  pthread_mutex_lock(&s->lock);
  s->tsfn = NULL;
  s->stopping = 1;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  spawner_release(s);
}

static void spawner_cleanup(void* arg) {
  spawner* s = arg;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  if (s->thread_ok) pthread_join(s->thread, NULL); /* at most one start to finish */
  spawner_release(s);
}

/* The threadsafe function and the thread, on first use. 0, or -1 with an exception thrown. */
static int spawner_start(napi_env env, spawner* s) {
  if (s->thread_ok) return 0;
  napi_value name;
  if (napi_create_string_utf8(env, "fspl:spawner", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, s, spawner_finalize, s, spawner_deliver, &s->tsfn) != napi_ok)
    return fail(env, "spawnStart: cannot make the threadsafe function"), -1;
  s->owners++;
  /* Referenced only while starts are in flight: an idle spawner keeps no process alive. */
  napi_unref_threadsafe_function(env, s->tsfn);
  /* Every signal blocked in the thread (it inherits the mask): they go to Node's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&s->thread, NULL, spawner_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    napi_release_threadsafe_function(s->tsfn, napi_tsfn_abort);
    napi_throw_error(env, NULL, "spawnStart: cannot start the spawner thread");
    return -1;
  }
  s->thread_ok = 1;
  return 0;
}

/* spawnStart(file, argv, env, stdin, stdout, stderr, cwd, flags, onStarted) -> undefined.
 * onStarted(pid or -errno) comes later, on the main thread. Always SPAWN_NOWAIT: reap() them. */
static napi_value js_spawn_start(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 9;
  napi_value args[9];
  void* data = NULL;
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, &data));
  spawner* s = data;
  napi_valuetype t = napi_undefined;
  if (argc >= 9) CHECK(napi_typeof(env, args[8], &t));
  if (t != napi_function) {
    napi_throw_type_error(env, NULL, "spawnStart: 9 arguments expected, the last a function");
    return NULL;
  }
  int flags = 0;
  CHECK(napi_get_value_int32(env, args[7], &flags));
  if (spawner_start(env, s) < 0) return NULL;
  spawn_job* j = calloc(1, sizeof *j);
  if (!j) return fail(env, "out of memory");
  int err = spawn_args_read(env, args, args[6], &j->args);
  j->args.flags = flags | SPAWN_NOWAIT;
  if (err == 0 && napi_create_reference(env, args[8], 1, &j->callback) != napi_ok) err = -1;
  if (err) {
    spawn_job_free(j);
    return err < 0 ? NULL : fail(env, "out of memory");
  }
  if (s->in_flight++ == 0) napi_ref_threadsafe_function(env, s->tsfn);
  pthread_mutex_lock(&s->lock);
  if (s->tail) s->tail->next = j;
  else s->head = j;
  s->tail = j;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Make the per-env spawner state and the spawnStart function that carries it. */
static int spawner_export(napi_env env, napi_value exports) {
  spawner* s = calloc(1, sizeof *s);
  napi_value fn;
  if (!s) return -1;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  s->owners = 1;
  if (napi_add_env_cleanup_hook(env, spawner_cleanup, s) != napi_ok) {
    spawner_release(s);
    return -1;
  }
  if (napi_create_function(env, "spawnStart", NAPI_AUTO_LENGTH, js_spawn_start, s, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "spawnStart", fn) != napi_ok)
    return -1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Header parsing: only the one encoding that fspl and the reference write                     */
/*
 * The packet header is a 30-byte prefix ("*FILESPOOLER", version 1, metadata length, CRC-32 of
 * the metadata, CRC-32 of the prefix) and MessagePack metadata:
 *
 *   {"seq": uint, "ctime": [int secs, uint nanos],
 *    "cmd_type": "NOP" | "Fail" | {"Command": {"params": [bytes...], "env": [[bytes, bytes]...]}}}
 *
 * with fixstr keys in that order and byte strings as arrays of integers 0..255 (positive fixint
 * or uint8). That is what src/packet/codec.ts encodeMetadata and the reference write. For such a
 * header the JS decoder (decodeMetadata) returns exactly what is decoded here; anything else (a
 * bad CRC, other MessagePack forms it also accepts, trailing bytes, errors) is NOT parsed here
 * (kind -1) and the JS side decodes the bytes itself. This must never accept a header the JS
 * decoder would reject or read differently: test/native.test.ts compares the two.
 */

static uint32_t crc_table[256];

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc32_buf(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  while (n--) c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static uint64_t be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

typedef struct {
  const uint8_t* p;
  const uint8_t* end;
} reader;

/* Growable outputs of the parse: decoded byte strings, and the layout of Command headers. */
typedef struct {
  uint8_t* data;
  size_t data_len, data_cap;
  int32_t* layout;
  size_t layout_len, layout_cap;
  int oom;
} outputs;

static int push_layout(outputs* o, int32_t v) {
  if (o->layout_len == o->layout_cap) {
    size_t ncap = o->layout_cap ? o->layout_cap * 2 : 1024;
    int32_t* n = realloc(o->layout, ncap * sizeof(int32_t));
    if (!n) return o->oom = 1, 0;
    o->layout = n;
    o->layout_cap = ncap;
  }
  o->layout[o->layout_len++] = v;
  return 1;
}

static int need(reader* r, size_t n) { return (size_t)(r->end - r->p) >= n; }

static int expect(reader* r, const char* bytes, size_t n) {
  if (!need(r, n) || memcmp(r->p, bytes, n) != 0) return 0;
  r->p += n;
  return 1;
}

/* Any unsigned integer form; *v gets the value. */
static int read_uint(reader* r, uint64_t* v) {
  if (!need(r, 1)) return 0;
  uint8_t b = *r->p++;
  int n;
  if (b <= 0x7f) return *v = b, 1;
  switch (b) {
    case 0xcc: n = 1; break;
    case 0xcd: n = 2; break;
    case 0xce: n = 4; break;
    case 0xcf: n = 8; break;
    default: return 0;
  }
  if (!need(r, (size_t)n)) return 0;
  *v = be(r->p, n);
  r->p += n;
  return 1;
}

/* Any integer form whose value fits in an int64. */
static int read_sint(reader* r, int64_t* v) {
  if (!need(r, 1)) return 0;
  uint8_t b = *r->p;
  if (b >= 0xe0) return r->p++, *v = (int8_t)b, 1;
  int n;
  switch (b) {
    case 0xd0: n = 1; break;
    case 0xd1: n = 2; break;
    case 0xd2: n = 4; break;
    case 0xd3: n = 8; break;
    default: {
      uint64_t u;
      if (!read_uint(r, &u) || u > (uint64_t)INT64_MAX) return 0;
      return *v = (int64_t)u, 1;
    }
  }
  r->p++;
  if (!need(r, (size_t)n)) return 0;
  uint64_t u = be(r->p, n);
  r->p += n;
  switch (n) {
    case 1: *v = (int8_t)u; break;
    case 2: *v = (int16_t)u; break;
    case 4: *v = (int32_t)u; break;
    default: *v = (int64_t)u; break;
  }
  return 1;
}

/* An array header (fixarray, array16, array32) declaring no more elements than bytes left. */
static int read_array(reader* r, uint32_t* len) {
  if (!need(r, 1)) return 0;
  uint8_t b = *r->p++;
  uint64_t n;
  if (b >= 0x90 && b <= 0x9f) {
    n = b & 0x0f;
  } else if (b == 0xdc || b == 0xdd) {
    int w = b == 0xdc ? 2 : 4;
    if (!need(r, (size_t)w)) return 0;
    n = be(r->p, w);
    r->p += w;
  } else {
    return 0;
  }
  if (n > (uint64_t)(r->end - r->p)) return 0;
  *len = (uint32_t)n;
  return 1;
}

/* A byte string written as an array of integers 0..255; appended to o->data, with its offset and
 * length pushed to the layout. */
static int read_bytes(reader* r, outputs* o) {
  uint32_t n;
  if (!read_array(r, &n)) return 0;
  if (o->data_cap - o->data_len < n) {
    size_t ncap = o->data_cap ? o->data_cap : 4096;
    while (ncap - o->data_len < n) ncap *= 2;
    uint8_t* d = realloc(o->data, ncap);
    if (!d) return o->oom = 1, 0;
    o->data = d;
    o->data_cap = ncap;
  }
  uint8_t* w = o->data + o->data_len;
  for (uint32_t i = 0; i < n; i++) {
    if (!need(r, 1)) return 0;
    uint8_t b = *r->p++;
    if (b <= 0x7f) {
      w[i] = b;
    } else if (b == 0xcc && need(r, 1)) {
      w[i] = *r->p++;
    } else {
      return 0;
    }
  }
  if (o->data_len > INT32_MAX || !push_layout(o, (int32_t)o->data_len) || !push_layout(o, (int32_t)n)) return 0;
  o->data_len += n;
  return 1;
}

typedef struct {
  uint64_t seq;
  int64_t secs;
  uint32_t nanos;
  int32_t kind; /* -1: not parsed, 0: NOP, 1: Fail, 2: Command */
  int32_t layout; /* Command: index in the layout of [nparams, (off, len)..., nenv, (koff, klen, voff, vlen)...] */
} header;

/* Parse the header at buf[0..n); 1 if parsed. On failure, the outputs are rolled back. */
static int parse_header(const uint8_t* buf, size_t n, header* h, outputs* o) {
  static const uint8_t tag[12] = {'*', 'F', 'I', 'L', 'E', 'S', 'P', 'O', 'O', 'L', 'E', 'R'};
  h->kind = -1;
  if (n < 30 || memcmp(buf, tag, 12) != 0 || be(buf + 12, 2) != 1) return 0;
  if (be(buf + 26, 4) != crc32_buf(buf, 26)) return 0;
  uint64_t mlen = be(buf + 14, 8);
  if (mlen > n - 30) return 0;
  const uint8_t* meta = buf + 30;
  if (be(buf + 22, 4) != crc32_buf(meta, (size_t)mlen)) return 0;
  reader rd = {meta, meta + mlen};
  reader* r = &rd;
  size_t data_mark = o->data_len, layout_mark = o->layout_len;
  uint64_t nanos;
  if (!expect(r, "\x83\xa3seq", 5) || !read_uint(r, &h->seq)) goto no;
  if (!expect(r, "\xa5" "ctime\x92", 7) || !read_sint(r, &h->secs) || !read_uint(r, &nanos) || nanos > 0xFFFFFFFFu) goto no;
  h->nanos = (uint32_t)nanos;
  if (!expect(r, "\xa8" "cmd_type", 9)) goto no;
  if (expect(r, "\xa3NOP", 4)) {
    h->kind = 0;
  } else if (expect(r, "\xa4" "Fail", 5)) {
    h->kind = 1;
  } else if (expect(r, "\x81\xa7" "Command\x82\xa6params", 17)) {
    h->kind = 2;
    if (o->layout_len > INT32_MAX) goto no;
    h->layout = (int32_t)o->layout_len;
    uint32_t count;
    if (!read_array(r, &count) || !push_layout(o, (int32_t)count)) goto no;
    for (uint32_t i = 0; i < count; i++)
      if (!read_bytes(r, o)) goto no;
    if (!expect(r, "\xa3" "env", 4) || !read_array(r, &count) || !push_layout(o, (int32_t)count)) goto no;
    for (uint32_t i = 0; i < count; i++)
      if (!expect(r, "\x92", 1) || !read_bytes(r, o) || !read_bytes(r, o)) goto no;
  } else {
    goto no;
  }
  if (r->p != r->end) goto no; /* trailing bytes: the JS decoder's error */
  return 1;
no:
  o->data_len = data_mark;
  o->layout_len = layout_mark;
  h->kind = -1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* readHeads                                                                                  */

/* The parsed headers as JS values: [kinds, seqs, secs, nanos, layouts, layout, data], typed arrays
 * over one ArrayBuffer (the 64-bit ones first, so that each is aligned): one backing store to make
 * and, once collected, to sweep, where there were seven, for every scan and every job opened (a
 * pass over 1,000 queues made 14,000). */
static napi_value parsed_value(napi_env env, const header* hs, uint32_t count, outputs* o) {
  napi_value whole, arr[5], layout, data, result;
  static const napi_typedarray_type types[5] = {napi_biguint64_array, napi_bigint64_array, napi_int32_array, napi_uint32_array,
                                                napi_int32_array};
  static const size_t sizes[5] = {8, 8, 4, 4, 4};
  size_t at[5], off = 0;
  for (int k = 0; k < 5; k++) {
    at[k] = off;
    off += count * sizes[k];
  }
  size_t layout_at = off;
  size_t data_at = layout_at + o->layout_len * sizeof(int32_t);
  uint8_t* p;
  CHECK(napi_create_arraybuffer(env, data_at + o->data_len, (void**)&p, &whole));
  for (int k = 0; k < 5; k++) CHECK(napi_create_typedarray(env, types[k], count, whole, at[k], &arr[k]));
  for (uint32_t i = 0; i < count; i++) {
    ((uint64_t*)(p + at[0]))[i] = hs[i].seq;
    ((int64_t*)(p + at[1]))[i] = hs[i].secs;
    ((int32_t*)(p + at[2]))[i] = hs[i].kind;
    ((uint32_t*)(p + at[3]))[i] = hs[i].nanos;
    ((int32_t*)(p + at[4]))[i] = hs[i].layout;
  }
  if (o->layout_len) memcpy(p + layout_at, o->layout, o->layout_len * sizeof(int32_t));
  CHECK(napi_create_typedarray(env, napi_int32_array, o->layout_len, whole, layout_at, &layout));
  if (o->data_len) memcpy(p + data_at, o->data, o->data_len);
  CHECK(napi_create_typedarray(env, napi_uint8_array, o->data_len, whole, data_at, &data));
  /* In the order the JS side reads them (src/sys/native.ts ParsedArrays). */
  napi_value in_order[7] = {arr[2], arr[0], arr[1], arr[3], arr[4], layout, data};
  CHECK(napi_create_array_with_length(env, 7, &result));
  for (uint32_t k = 0; k < 7; k++) CHECK(napi_set_element(env, result, k, in_order[k]));
  return result;
}

/* One thread's share of a readHeads call: files [start, end). Each has its own byte buffer and
 * parse outputs; lengths and headers go straight into the shared arrays (disjoint indices). */
typedef struct {
  int dfd;
  char** names;
  uint32_t start, end, max;
  int32_t* lv;
  header* hs; /* NULL: no parsing */
  char* out;
  size_t cap, used;
  outputs o;
  int fatal; /* out of memory for the bytes themselves */
} range_job;

static void* read_range(void* arg) {
  range_job* j = arg;
  j->cap = (size_t)(j->end - j->start) * 256 + j->max;
  j->out = malloc(j->cap);
  if (!j->out) return j->fatal = 1, NULL;
  for (uint32_t i = j->start; i < j->end; i++) {
    if (j->cap - j->used < j->max) {
      char* nout = realloc(j->out, j->cap * 2);
      if (!nout) return j->fatal = 1, NULL;
      j->out = nout;
      j->cap *= 2;
    }
    int fd;
    /* O_NONBLOCK: a FIFO named like a job must not hang the scan (no effect on regular files). */
    do fd = openat(j->dfd, j->names[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW); /* never a link planted in jobs/ */
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      j->lv[i] = -errno;
      continue;
    }
    /* Only a regular file with this one name: a hard link (to a packet only we may read) is not a
     * job; the JS reader then says why (src/sys/untrusted.ts openJobFile). */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
      j->lv[i] = -EMLINK;
      close(fd);
      continue;
    }
    ssize_t n;
    do n = pread(fd, j->out + j->used, j->max, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
      j->lv[i] = -errno;
    } else {
      j->lv[i] = (int32_t)n;
      if (j->hs) parse_header((const uint8_t*)j->out + j->used, (size_t)n, &j->hs[i], &j->o);
      j->used += (size_t)n;
    }
    close(fd);
  }
  return NULL;
}

/* Below this many files one thread does it all; above, two share the work (the opens and reads
 * dominate, and the calling thread would only wait). */
#define THREAD_THRESHOLD 1024

static napi_value js_read_heads(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 5;
  napi_value args[5];
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  if (argc < 5) {
    napi_throw_type_error(env, NULL, "readHeads: 5 arguments expected");
    return NULL;
  }
  uint32_t count, max;
  bool parse;
  CHECK(napi_get_value_uint32(env, args[2], &count));
  CHECK(napi_get_value_uint32(env, args[3], &max));
  CHECK(napi_get_value_bool(env, args[4], &parse));
  if (max == 0 || max > (1u << 20)) max = 4096;

  napi_value lens_ab, lens;
  int32_t* lv = NULL;
  CHECK(napi_create_arraybuffer(env, (size_t)count * sizeof(int32_t), (void**)&lv, &lens_ab));
  CHECK(napi_create_typedarray(env, napi_int32_array, count, lens_ab, 0, &lens));

  size_t nlen = 0;
  char* dir = get_string(env, args[0], NULL);
  char* names = get_string(env, args[1], &nlen);
  char** name_at = names ? split_nul(names, nlen) : NULL;
  header* hs = parse ? calloc(count ? count : 1, sizeof(header)) : NULL; /* zeroed: unparsed entries are copied out too */
  if (!dir || !name_at || (parse && !hs)) {
    free(dir);
    free(names);
    free(name_at);
    free(hs);
    return fail(env, "out of memory");
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int open_errno = errno; /* before free() can change it */
  free(dir);
  if (dfd < 0) {
    int e = open_errno;
    free(names);
    free(name_at);
    free(hs);
    return make_int(env, -e);
  }
  uint32_t have = 0; /* names actually given; any missing one is EINVAL */
  while (have < count && name_at[have]) have++;
  for (uint32_t i = 0; i < count; i++) {
    if (hs) hs[i].kind = -1;
    if (i >= have) lv[i] = -EINVAL;
  }

  range_job jobs[2];
  memset(jobs, 0, sizeof jobs);
  int parts = have >= THREAD_THRESHOLD && sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;
  for (int k = 0; k < parts; k++) {
    jobs[k].dfd = dfd;
    jobs[k].names = name_at;
    jobs[k].start = (uint32_t)((uint64_t)have * (uint64_t)k / (uint64_t)parts);
    jobs[k].end = (uint32_t)((uint64_t)have * (uint64_t)(k + 1) / (uint64_t)parts);
    jobs[k].max = max;
    jobs[k].lv = lv;
    jobs[k].hs = hs;
  }
  pthread_t helper;
  int threaded = parts == 2 && pthread_create(&helper, NULL, read_range, &jobs[1]) == 0;
  read_range(&jobs[0]);
  if (threaded) pthread_join(helper, NULL);
  else if (parts == 2) read_range(&jobs[1]);
  close(dfd);
  free(names);
  free(name_at);

  /* Put the parts together: bytes in file order; parse outputs with offsets shifted. */
  int fatal = 0, oom = 0;
  size_t used = 0, data_len = 0, layout_len = 0;
  for (int k = 0; k < parts; k++) {
    fatal |= jobs[k].fatal;
    oom |= jobs[k].o.oom;
    used += jobs[k].used;
    data_len += jobs[k].o.data_len;
    layout_len += jobs[k].o.layout_len;
  }
  napi_value result = NULL, buf, parsed = NULL;
  void* bdata = NULL;
  outputs all = {0};
  if (fatal) {
    fail(env, "out of memory");
    goto done;
  }
  if (hs) {
    /* Parsing is an optimisation: without memory for it, let JS decode everything. */
    int ok = !oom && data_len <= INT32_MAX && layout_len <= INT32_MAX;
    if (ok) {
      all.data = malloc(data_len ? data_len : 1);
      all.layout = malloc((layout_len ? layout_len : 1) * sizeof(int32_t));
      ok = all.data && all.layout;
    }
    for (int k = 0; k < parts && ok; k++) {
      range_job* j = &jobs[k];
      int32_t dshift = (int32_t)all.data_len, lshift = (int32_t)all.layout_len;
      if (j->o.data_len) memcpy(all.data + all.data_len, j->o.data, j->o.data_len);
      if (j->o.layout_len) memcpy(all.layout + all.layout_len, j->o.layout, j->o.layout_len * sizeof(int32_t));
      if (k > 0) {
        for (uint32_t i = j->start; i < j->end; i++) {
          if (hs[i].kind != 2) continue;
          int32_t at = hs[i].layout += lshift;
          int32_t* L = all.layout;
          int32_t np = L[at++];
          for (int32_t q = 0; q < np; q++, at += 2) L[at] += dshift;
          int32_t ne = L[at++];
          for (int32_t q = 0; q < ne; q++, at += 4) {
            L[at] += dshift;
            L[at + 2] += dshift;
          }
        }
      }
      all.data_len += j->o.data_len;
      all.layout_len += j->o.layout_len;
    }
    if (!ok) {
      for (uint32_t i = 0; i < count; i++) hs[i].kind = -1;
      all.data_len = all.layout_len = 0;
    }
    parsed = parsed_value(env, hs, count, &all);
    if (!parsed) goto done;
  }
  if (napi_create_buffer(env, used, &bdata, &buf) != napi_ok) {
    fail(env, "readHeads: cannot allocate");
    goto done;
  }
  size_t at = 0;
  for (int k = 0; k < parts; k++) {
    if (jobs[k].used) memcpy((char*)bdata + at, jobs[k].out, jobs[k].used);
    at += jobs[k].used;
  }
  if (napi_create_array_with_length(env, 3, &result) != napi_ok || napi_set_element(env, result, 0, buf) != napi_ok ||
      napi_set_element(env, result, 1, lens) != napi_ok || (parsed && napi_set_element(env, result, 2, parsed) != napi_ok)) {
    result = fail(env, "readHeads: cannot build the result");
  }
done:
  for (int k = 0; k < parts; k++) {
    free(jobs[k].out);
    free(jobs[k].o.data);
    free(jobs[k].o.layout);
  }
  free(all.data);
  free(all.layout);
  free(hs);
  return result;
}

/* ------------------------------------------------------------------------------------------ */
/* openHead                                                                                   */
/*
 * openHead(path, max) -> [fd, payloadOffset, parsed | null], or -errno
 *   A job file opened for its payload: open(O_RDONLY), one pread of up to max bytes at 0, the
 *   header parsed (parse_header, as readHeads does) and, when it is, the descriptor moved to the
 *   payload (lseek). Otherwise payloadOffset is 0, parsed null, and the descriptor is at 0 for
 *   the JS decoder. queue-process opens every job this way before running it: through Node's
 *   open, two reads and the JS decoder, that was some 20 us a job (docs/benchmarks-notes.md).
 */
static napi_value js_open_head(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value args[2];
  uint32_t max;
  CHECK(napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL));
  if (argc < 2 || napi_get_value_uint32(env, args[1], &max) != napi_ok) return fail(env, "openHead(path, max)");
  if (max < 30 || max > (1u << 20)) max = 4096;
  size_t plen = 0;
  char* path = get_string(env, args[0], &plen);
  uint8_t* buf = malloc(max);
  if (!path || !buf || strlen(path) != plen) {
    free(path);
    free(buf);
    return path && buf ? make_int(env, -EINVAL) : fail(env, "out of memory");
  }
  int fd;
  /* never a link planted in jobs/, nor a FIFO swapped in since the scan, whose open would wait for a writer */
  do fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  while (fd < 0 && errno == EINTR);
  int e = errno;
  free(path);
  if (fd < 0) {
    free(buf);
    return make_int(env, -e);
  }
  struct stat st; /* a regular file with one name only, as in read_range */
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    free(buf);
    return make_int(env, -EMLINK);
  }
  ssize_t n;
  do n = pread(fd, buf, max, 0);
  while (n < 0 && errno == EINTR);
  header h = {0};
  outputs o = {0};
  int parsed = n > 0 && parse_header(buf, (size_t)n, &h, &o);
  int64_t offset = parsed ? 30 + (int64_t)be(buf + 14, 8) : 0;
  free(buf);
  if (n < 0 || (parsed && lseek(fd, (off_t)offset, SEEK_SET) != (off_t)offset)) {
    e = errno;
    close(fd);
    free(o.data);
    free(o.layout);
    return make_int(env, -e);
  }
  napi_value result, v, heads = NULL;
  if (parsed) heads = parsed_value(env, &h, 1, &o);
  free(o.data);
  free(o.layout);
  if (napi_create_array_with_length(env, 3, &result) != napi_ok || napi_set_element(env, result, 0, make_int(env, fd)) != napi_ok ||
      napi_create_int64(env, offset, &v) != napi_ok || napi_set_element(env, result, 1, v) != napi_ok ||
      (heads ? napi_set_element(env, result, 2, heads) : napi_get_null(env, &v) == napi_ok ? napi_set_element(env, result, 2, v) : napi_generic_failure) != napi_ok) {
    close(fd);
    return fail(env, "openHead: cannot build the result");
  }
  return result;
}

// ------------------------------------------------------------------------------------------------
// copy

enum { K_OTHER, K_PIPE, K_FILE };

static int fd_kind(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return K_OTHER;
  if (S_ISFIFO(st.st_mode)) return K_PIPE;
  if (S_ISREG(st.st_mode)) return K_FILE;
  return K_OTHER;
}

static napi_value js_copy(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t in_fd, out_fd;
  double limit_d;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) return fail(env, "copy: expected (inFd, outFd, limit)");
  CHECK(napi_get_value_int32(env, argv[0], &in_fd));
  CHECK(napi_get_value_int32(env, argv[1], &out_fd));
  CHECK(napi_get_value_double(env, argv[2], &limit_d));
  int ki = fd_kind(in_fd), ko = fd_kind(out_fd);
  int use_cfr = ki == K_FILE && ko == K_FILE;
  int use_splice = !use_cfr && (ki == K_PIPE || ko == K_PIPE) && ki != K_OTHER && ko != K_OTHER;
  int err = 0;
  uint64_t copied = 0;
  int unlimited = limit_d < 0;
  uint64_t limit = unlimited ? 0 : (uint64_t)limit_d;
  if (!use_cfr && !use_splice) {
    err = EINVAL;
  } else {
    for (;;) {
      size_t want = use_cfr ? (size_t)1 << 30 : (size_t)1 << 20;
      if (!unlimited) {
        if (copied >= limit) break;
        if (limit - copied < want) want = (size_t)(limit - copied);
      }
      ssize_t n = use_cfr ? copy_file_range(in_fd, NULL, out_fd, NULL, want, 0) : splice(in_fd, NULL, out_fd, NULL, want, SPLICE_F_MOVE);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      if (n == 0) break;
      copied += (uint64_t)n;
    }
  }
  napi_value result, v;
  CHECK(napi_create_array_with_length(env, 2, &result));
  CHECK(napi_create_double(env, (double)copied, &v));
  CHECK(napi_set_element(env, result, 0, v));
  CHECK(napi_create_int32(env, err, &v));
  CHECK(napi_set_element(env, result, 1, v));
  return result;
}

static napi_value js_flock(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd, op;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) return fail(env, "flock: expected (fd, operation)");
  CHECK(napi_get_value_int32(env, argv[0], &fd));
  CHECK(napi_get_value_int32(env, argv[1], &op));
  int r;
  do r = flock(fd, op);
  while (r != 0 && errno == EINTR);
  return make_int(env, r == 0 ? 0 : errno);
}

/* A file opened as src/sys/untrusted.ts openExisting opens it (never through a link, never waiting on a
 * FIFO) and checked as it checks one with singleLink: a regular file with this one name. The fd, or
 * -errno; -1000 for a file that is not one (JS then says why, as openExisting does). */
#define OPEN_REFUSED 1000
static int open_checked(const char* path, int flags) {
  int fd;
  do fd = open(path, flags | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0666);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    return -OPEN_REFUSED;
  }
  return fd;
}

/* readSmall(path, buf) -> bytes read from the start into buf, or a negative number: a seqfile's text
 * (src/sys/seq-text.ts), opened and checked as openExisting does, in one call instead of four
 * through Node's fs (about 4 us each time, twice a queue in a pass). On any failure the caller
 * does it again through Node's fs, which then says what went wrong, in its words. */
static napi_value js_read_small(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void* data;
  size_t len, plen;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2 || napi_get_buffer_info(env, argv[1], &data, &len) != napi_ok) return fail(env, "readSmall(path, buf)");
  char* path = get_string(env, argv[0], &plen);
  if (!path) return fail(env, "out of memory");
  int fd = strlen(path) == plen ? open_checked(path, O_RDONLY) : -EINVAL;
  free(path);
  if (fd < 0) return make_int(env, fd);
  ssize_t n;
  do n = pread(fd, data, len, 0);
  while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  return make_int(env, n < 0 ? -e : (int)n);
}

/* statInfo(path, follow, out) -> 0 or -errno: stat(2) (lstat(2) without follow) of a name, its mode,
 * uid, gid and size into out (a Float64Array of 4). What a queue's look and lock ask of a name
 * (the lock file's size, nextseq's owner and kind), without the fs.Stats and four Dates that Node
 * makes for each stat: about 1 KiB of garbage and 3 us each, twice a queue in a pass. */
static napi_value js_stat_info(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  bool follow = false;
  napi_typedarray_type type;
  size_t length, plen;
  void* data;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3 || napi_get_value_bool(env, argv[1], &follow) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &type, &length, &data, NULL, NULL) != napi_ok || type != napi_float64_array ||
      length < 4)
    return fail(env, "statInfo(path, follow, out)");
  char* path = get_string(env, argv[0], &plen);
  if (!path) return fail(env, "out of memory");
  struct stat st;
  int r = strlen(path) != plen ? -EINVAL : (follow ? stat(path, &st) : lstat(path, &st)) == 0 ? 0 : -errno;
  free(path);
  if (r == 0) {
    double* out = data;
    out[0] = (double)st.st_mode;
    out[1] = (double)st.st_uid;
    out[2] = (double)st.st_gid;
    out[3] = (double)st.st_size;
  }
  return make_int(env, r);
}

/* lockOpen(path, create) -> a lock file (src/sys/lock.ts) opened as openExisting opens it (created
 * if missing with create), checked, and locked (flock LOCK_EX|LOCK_NB): its fd, or a negative number,
 * the file closed. One call where Node's fs made three (open, fstat, then flock), for every queue
 * a pass takes. On any failure (a busy lock too) the caller does it again its own way, which waits
 * a busy lock out and says what went wrong. */
static napi_value js_lock_open(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  bool create = false;
  size_t plen;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2 || napi_get_value_bool(env, argv[1], &create) != napi_ok) return fail(env, "lockOpen(path, create)");
  char* path = get_string(env, argv[0], &plen);
  if (!path) return fail(env, "out of memory");
  int fd = strlen(path) == plen ? open_checked(path, O_RDWR | (create ? O_CREAT : 0)) : -EINVAL;
  free(path);
  if (fd < 0) return make_int(env, fd);
  int r;
  do r = flock(fd, LOCK_EX | LOCK_NB);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    int e = errno;
    close(fd);
    return make_int(env, -e);
  }
  return make_int(env, fd);
}

static napi_value js_stamps(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint32_t n;
  napi_typedarray_type type;
  size_t length;
  void* data;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) return fail(env, "stamps: expected (paths, out)");
  CHECK(napi_get_array_length(env, argv[0], &n));
  CHECK(napi_get_typedarray_info(env, argv[1], &type, &length, &data, NULL, NULL));
  if (type != napi_float64_array || length < (size_t)n * 3) return fail(env, "stamps: out is too short");
  double* out = data;
  char path[PATH_MAX + 1]; /* one more: a longer string comes back truncated to PATH_MAX bytes, and fails */
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    size_t len;
    struct stat st;
    CHECK(napi_get_element(env, argv[0], i, &v));
    CHECK(napi_get_value_string_utf8(env, v, path, sizeof path, &len));
    if (len >= PATH_MAX || stat(path, &st) != 0) {
      out[i * 3] = NAN;
      continue;
    }
    out[i * 3] = (double)st.st_ino;
    out[i * 3 + 1] = (double)st.st_mtim.tv_sec * 1e3 + (double)st.st_mtim.tv_nsec / 1e6;
    out[i * 3 + 2] = (double)st.st_ctim.tv_sec * 1e3 + (double)st.st_ctim.tv_nsec / 1e6;
  }
  return NULL;
}

/* names(dir, max): see the top of this file. */
static napi_value js_names(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], out, v;
  uint32_t max;
  char path[PATH_MAX + 1]; /* one more: a longer string comes back truncated to PATH_MAX bytes */
  size_t len;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) return fail(env, "names: expected (dir, max)");
  CHECK(napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len));
  CHECK(napi_get_value_uint32(env, argv[1], &max));
  if (len >= PATH_MAX) return make_int(env, ENAMETOOLONG);
  DIR* d = opendir(path);
  if (!d) return make_int(env, errno);
  napi_status st = napi_create_array(env, &out);
  uint32_t n = 0;
  for (;;) {
    errno = 0;
    struct dirent* e = readdir(d);
    if (!e) break;
    const char* name = e->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    if (n == max) {
      closedir(d);
      return st == napi_ok && napi_get_null(env, &v) == napi_ok ? v : fail(env, "names");
    }
    if (st == napi_ok) st = napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &v);
    if (st == napi_ok) st = napi_set_element(env, out, n++, v);
  }
  int err = errno;
  closedir(d);
  if (st != napi_ok) return fail(env, "names");
  return err ? make_int(env, err) : out;
}

/* fsBatch: file operations in order on one pool thread (fs_batch.c). */
napi_status fspl_register_fs_batch(napi_env env, napi_value exports);

NAPI_MODULE_INIT() {
  /* The functions without data of their own (spawnStart carries its env's spawner: spawner_export). */
  static const struct {
    const char* name;
    napi_callback fn;
  } functions[] = {
      {"spawn", js_spawn},           {"reap", js_reap},         {"chain", js_chain},          {"unchain", js_unchain},
      {"readHeads", js_read_heads},  {"openHead", js_open_head}, {"copy", js_copy},           {"flock", js_flock},
      {"readSmall", js_read_small},  {"statInfo", js_stat_info}, {"lockOpen", js_lock_open},  {"stamps", js_stamps},
      {"names", js_names},
  };
  napi_value fn;
  crc_init();
  fspl_child_prepare(); /* now, while few descriptors are open: the slots are low, and so is what each child keeps */
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++)
    if (napi_create_function(env, functions[i].name, NAPI_AUTO_LENGTH, functions[i].fn, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, functions[i].name, fn) != napi_ok)
      return NULL;
  if (spawner_export(env, exports) != 0) return NULL;
  if (fspl_register_fs_batch(env, exports) != napi_ok) return NULL;
  napi_value v;
  if (napi_create_int32(env, 1, &v) != napi_ok || napi_set_named_property(env, exports, "version", v) != napi_ok) return NULL;
  if (napi_create_int32(env, SPAWN_SETSID | SPAWN_NOWAIT | SPAWN_SETPGID, &v) != napi_ok ||
      napi_set_named_property(env, exports, "spawnFlags", v) != napi_ok)
    return NULL;
  return exports;
}
