/*
 * A child's start: clone and exec, in place of glibc's posix_spawn (fspl_native.c's spawn_run
 * calls it for every start: spawn, spawnStart and the job chain).
 *
 * Why not posix_spawn: it clones without CLONE_FILES, so the kernel copies the caller's whole
 * table of descriptors into every child (a reference to each open file), and exec then closes the
 * close-on-exec ones one by one. A net run holds a descriptor for every place it reads (the
 * place's consumer lock, for the whole run): with 1,000 places each child cost more CPU than the
 * command itself needs. Measured with a C loop starting 1,000 `sh -c 'cat >> /dev/null'`: 1.43-1.51 s
 * of children's CPU holding 5 descriptors, 1.53-1.72 s holding 1,100; and the clone's copy is the
 * caller's CPU (docs/benchmarks-notes.md, "Issue 43, ninth pass").
 *
 * Here the child shares the table for a moment (CLONE_FILES) and its first act is to make its own
 * with only the descriptors below `lo` (close_range with CLOSE_RANGE_UNSHARE, Linux 5.9; before
 * that, unshare(CLONE_FILES), a copy of the whole table as before; where a sandbox refuses both,
 * the start fails with ENOSYS, and child_process starts it and every later one). Below `lo` are
 * the standard descriptors, any fspl's parent passed without close-on-exec (they reach the
 * command, as they do under the reference), Node's first ones (close-on-exec: exec closes them),
 * and the slots: descriptors of ours where the caller puts the child's stdin, stdout and stderr
 * just before the clone (under a lock: one start at a time in the process), which the child then
 * moves to 0-2. A descriptor opened later without close-on-exec (none of ours) no longer reaches
 * the children.
 *
 * Names: the child's files come to it by descriptor only. By name, this file opens /dev/null (a
 * device in root's /dev, checked to be one) and lists /proc/self/fd (the kernel's view of our own
 * table), and the child enters its working directory: the runner's own setting, and the child is
 * still of the runner's user then (a firing run as another user goes through child_process, not
 * here), so a link there leads only where that user could go (docs/security.md).
 *
 * The rest is what glibc's posix_spawn does for the attributes fspl asks for: every signal at its
 * default, an empty mask, a session or a process group of its own, a working directory. (glibc's
 * two internal signals, 32 and 33, which its sigaction refuses to touch, are reset by exec, as
 * handled signals are: at their default, where posix_spawn left them ignored; docs/compatibility.md.)
 * All signals are blocked in the calling thread around the clone, so that no handler of Node's
 * runs in the child, which shares our memory until it calls exec (CLONE_VFORK holds the calling
 * thread until then). The child calls only thin system-call wrappers, on a stack of the caller's,
 * and reports a failure before exec through memory it shares with us.
 */
#define _GNU_SOURCE
#include "child_start.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* Room for the child's frames: a few system-call wrappers (musl's posix_spawn takes 1 KiB + PATH_MAX). */
#define CHILD_STACK 32768

/* The slots, reserved once per process (the addon's load: see fspl_child_prepare). */
static struct {
  int ready; /* 0 not yet, 1 reserved, -errno could not be */
  int null_fd; /* /dev/null, read-only: stdin when none is given, and the slots between two starts */
  int slot[3];
  unsigned lo; /* the child keeps the descriptors below this; 0 until the first start sets it */
  int no_own_table; /* a child could not make a table of its own (a sandbox): none is tried again */
} slots;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* /dev/null, above 2 (Node keeps 0-2 open, but a caller may not). Opened by name: a device of
 * root's /dev, which nobody fspl serves can replace; checked to be a character device all the same. */
static int open_null(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
    close(fd);
    errno = ENODEV;
    return -1;
  }
  if (fd > 2) return fd;
  int up = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return up;
}

/* The highest descriptor open without close-on-exec (what fspl's parent passed in), or -1.
 * /proc/self/fd is the kernel's view of our own table: nobody else writes it. */
static int highest_inherited(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1; /* no /proc: only those below the slots reach the children */
  int high = -1;
  for (struct dirent* e; (e = readdir(d));) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d)) continue;
    int fl = fcntl(fd, F_GETFD);
    if (fl >= 0 && !(fl & FD_CLOEXEC) && fd > high) high = fd;
  }
  closedir(d);
  return high;
}

/* Reserve the slots (holding slots_lock): /dev/null and three copies of it. 0, or an errno. */
static int slots_reserve(void) {
  if (slots.ready) return slots.ready < 0 ? -slots.ready : 0;
  int fds[4] = {open_null(), -1, -1, -1};
  for (int i = 1; i < 4 && fds[0] >= 0; i++) {
    fds[i] = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
    if (fds[i] >= 0) continue;
    int err = errno;
    while (i-- > 0) close(fds[i]);
    errno = err;
    fds[0] = -1;
  }
  if (fds[0] < 0) {
    slots.ready = -(errno ? errno : EMFILE);
    return -slots.ready;
  }
  slots.null_fd = fds[0];
  for (int i = 0; i < 3; i++) slots.slot[i] = fds[i + 1];
  slots.ready = 1;
  return 0;
}

/* The first start's bound: above the slots and above what fspl was given to pass on (read then, not
 * at the addon's load: a command that starts nothing never lists its descriptors). */
static void slots_bound(void) {
  if (slots.lo) return;
  int high = highest_inherited();
  const int ours[4] = {slots.null_fd, slots.slot[0], slots.slot[1], slots.slot[2]};
  for (int i = 0; i < 4; i++)
    if (ours[i] > high) high = ours[i];
  slots.lo = (unsigned)high + 1;
}

void fspl_child_prepare(void) {
  pthread_mutex_lock(&slots_lock);
  slots_reserve();
  pthread_mutex_unlock(&slots_lock);
}

/* What the child needs; err is written by the child when it fails before exec. */
typedef struct {
  const char* path;
  const fspl_child* c;
  volatile int err;
  volatile int no_own_table; /* the kernel (or a sandbox) refused both ways to a table of its own */
} child_ctx;

static void child_fail(child_ctx* x) {
  x->err = errno ? errno : EINVAL;
  _exit(127);
}

/* In the child, on the caller's memory: its own table first, then glibc's posix_spawn's steps, then exec. */
static int child_main(void* arg) {
  child_ctx* x = arg;
  const fspl_child* c = x->c;
  if (syscall(SYS_close_range, slots.lo, ~0U, CLOSE_RANGE_UNSHARE) != 0 && unshare(CLONE_FILES) != 0) {
    /* It still shares our table: nothing may be changed in it. ENOSYS: the caller starts it otherwise. */
    x->no_own_table = 1;
    errno = ENOSYS;
    child_fail(x);
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL); /* 32 and 33: EINVAL, and exec resets them */
  if ((c->flags & FSPL_CHILD_SETSID) && setsid() < 0) child_fail(x);
  if ((c->flags & FSPL_CHILD_SETPGID) && setpgid(0, 0) != 0) child_fail(x);
  if (c->cwd && chdir(c->cwd) != 0) child_fail(x);
  for (int i = 0; i < 3; i++)
    if (dup2(i == 0 && c->fds[0] < 0 ? slots.null_fd : slots.slot[i], i) < 0) child_fail(x);
  sigset_t none;
  sigemptyset(&none);
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, NSIG / 8) != 0) child_fail(x);
  execve(x->path, c->argv, c->envp);
  child_fail(x);
  return 127;
}

int fspl_child_exec(pid_t* pid, const char* path, const fspl_child* c) {
  child_ctx x = {path, c, 0, 0};
  char* stack = malloc(CHILD_STACK);
  if (!stack) return ENOMEM;
  /* The raw call: glibc's sigprocmask leaves its two internal signals unblocked. */
  uint64_t every = ~(uint64_t)0;
  sigset_t old;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &every, &old, NSIG / 8);
  int r = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &x);
  int err = r < 0 ? errno : 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, NSIG / 8);
  free(stack);
  if (r < 0) return err;
  if (x.err) {
    /* It has exited already (CLONE_VFORK returns at its exit): reaped here, never seen by the caller. */
    while (waitpid(r, NULL, 0) < 0 && errno == EINTR) {
    }
    if (x.no_own_table) slots.no_own_table = 1; /* holding slots_lock (begin) */
    return x.err;
  }
  *pid = r;
  return 0;
}

int fspl_child_begin(const fspl_child* c) {
  pthread_mutex_lock(&slots_lock);
  int err = slots_reserve();
  if (!err && slots.no_own_table) err = ENOSYS;
  if (!err) slots_bound();
  for (int i = 0; i < 3 && !err; i++)
    if (c->fds[i] >= 0 && dup3(c->fds[i], slots.slot[i], O_CLOEXEC) < 0) err = errno;
  if (err) fspl_child_end();
  return err;
}

void fspl_child_end(void) {
  /* The slots let go of the child's files: a pipe's writer left open here would keep its reader from its end. */
  if (slots.ready > 0)
    for (int i = 0; i < 3; i++) dup3(slots.null_fd, slots.slot[i], O_CLOEXEC);
  pthread_mutex_unlock(&slots_lock);
}
