/*
 * pcfs: a power-cut file system for tests (libfuse3, high-level API).
 *
 *   pcfs [--work WORKDIR] BACKING_DIR MOUNTPOINT [fuse options]
 *
 * A pass-through of BACKING_DIR at MOUNTPOINT that remembers what a power cut would keep, and on
 * command throws away everything else. It always runs in the foreground and single-threaded (it
 * adds -f -s), with default_permissions (and allow_other when run as root), and it tells the
 * kernel to cache nothing that could outlive a cut: entry, negative and attribute timeouts of 0,
 * no page cache kept across opens, no writeback cache. WORKDIR (default BACKING_DIR.pcfs-work)
 * must be on the same file system as BACKING_DIR: it holds the graveyard, the shadow copies and
 * the tree being built during a cut.
 *
 * THE MODEL (POSIX's rules, applied strictly)
 * - Everything present at mount time, and after a cut, is durable.
 * - A file's DATA is durable only after fsync or fdatasync of that file (the `fsync` op; a write
 *   through an O_SYNC/O_DSYNC descriptor counts as write + fsync). After a cut a file's content
 *   is what it was at its last fsync (or at mount, or at the last cut); a file created since then
 *   and never fsynced is empty, if any name of it survives.
 * - A DIRECTORY ENTRY (create, mkdir, mknod, symlink, link, rename, unlink, rmdir) is durable only
 *   after fsync of the directory that holds it (the `fsyncdir` op: Node's
 *   fs.fsyncSync(fs.openSync(dir, 'r')) gets there). Each directory's entry set is its own: a
 *   rename is durable at its target when the target directory is fsynced, and the old name is gone
 *   durably when the source directory is fsynced. So after a cut a renamed file may have both names
 *   (one inode, two hard links) or neither, as POSIX allows. A directory created since the last
 *   fsync of itself comes back empty (if its name survives).
 * - Mode, owner and times are not tracked: after a cut every inode has the metadata it had live.
 *   A symlink's target is durable with its entry.
 * - sync(2)/syncfs(2) are not modelled: they make nothing durable here.
 *
 * Limits: no torn or partial writes. A file's data is all-or-nothing at fsync granularity: after
 * a cut it is exactly the content at its last fsync, never some of the later writes (real file
 * systems may keep some, in any order, or tear a page). Real file systems are kinder than this
 * model in other ways too: ext4 commits its journal every few seconds, and keeps metadata
 * operations in order (data=ordered), so many of the losses modelled here are merely allowed, not
 * likely. Directory cycles that durable entries could form (a directory durably inside its own
 * durable descendant, after renames of directories) are broken by dropping the entry that closes
 * the cycle; a directory durably named twice comes back as two copies. Locks (flock, fcntl) are
 * not implemented here, so the kernel keeps them locally, which is what we want: processes see
 * each other's locks, and a cut (which kills every holder) drops them. But libfuse's high-level
 * API gives each NAME its own kernel inode: locks taken through two hard links of one file do not
 * see each other (locks through one name, from any process, do). xattrs, fallocate and O_TMPFILE
 * are not implemented (they fail cleanly); copy_file_range is not either, and the kernel falls
 * back to reads and writes, which pcfs tracks.
 *
 * HOW (inode numbers of the backing file system are the keys)
 * - A file is CLEAN (durable = live) until its first data change after mount, cut or fsync. Just
 *   before that change it gets a state: PREFIX(n), durable = the first n bytes of the live file,
 *   as long as every change lands at or after byte n (appends cost nothing: journals); or COPY,
 *   durable = a copy in WORKDIR/shadow/INO, taken before the first change below byte n. fsync
 *   drops the state. A new file starts as PREFIX(0).
 * - A directory is CLEAN until its first entry change. Then, for each name changed since, the
 *   entry it had at that moment (inode and type, or none) is kept in an undo list; durable entries
 *   = live entries with the undo list applied. fsyncdir drops it. A new directory is "new": its
 *   durable entry set is empty whatever happens to it until its own fsyncdir.
 * - Nothing is really deleted until the next cut, so that no inode number a durable state may name
 *   is reused: unlink and a rename over a file first hard-link the victim into WORKDIR/grave/INO;
 *   rmdir and a rename over a directory move it there. A file unlinked while open is renamed by
 *   libfuse to .fuse_hiddenXXXX beside it until its last close (so fstat still works on it):
 *   pcfs counts that rename as the unlink, and such names are never listed nor durable. rmdir
 *   ignores them (and drops them: fstat of such a file, once its directory is removed, fails with
 *   ENOENT; reads and writes still work).
 * - THE CUT: walk the live tree and the graveyard (inode -> where it is), then build the durable
 *   tree in WORKDIR/next from the root down: directories are made anew (mode, owner and times
 *   copied), every other inode is hard-linked from where it lives (CLEAN), truncated to n
 *   (PREFIX), or its shadow copy linked in (COPY); an inode named several times gets hard links.
 *   Then BACKING_DIR is swapped with WORKDIR/next, and the old tree, the graveyard and the shadows
 *   are removed. Handles opened before the cut are stale: every operation on them fails with EIO
 *   (the harness kills every process that could hold one before it cuts).
 *
 * CONTROL: a hidden file MOUNTPOINT/.pcfs-ctl (mode 0600, owned by root; readdir does not list it;
 * it cannot be renamed, linked or removed).
 * - Writing "cut\n" performs the cut before the write returns (EIO if it failed; see stderr).
 * - Writing "sync\n" makes everything durable at once (a test's setup, done before a workload).
 * - Reading it returns one line of counters: gen= cuts= syncs= dirty_files= dirty_dirs=
 *   undo_entries= grave= shadow_copies= last_cut_us= last_cut_inodes= missing= cycles=
 *   (missing: durable entries naming an inode found nowhere, which would be a bug of pcfs;
 *   cycles: entries dropped to break a directory cycle).
 * - Writing "fault OP ERRNO WHEN [path=GLOB]" adds a fault rule (below); "clear" removes them all.
 * - Reading it also returns: rules= (in force) faults= (operations failed by a rule) lies=
 *   (fsyncs that reported success but made nothing durable, below) poisoned= (such files now)
 *   calls_write= calls_fsync= calls_rename= calls_create= calls_mkdir= calls_unlink= (the
 *   operations of each kind seen since mount, whether a rule matched or not).
 * Several commands may be written at once, one a line. A bad command fails with EINVAL.
 *
 * FAULTS (the second mode; test/faults/harness.ts is its TypeScript side)
 * A rule makes one kind of operation fail with ENOSPC, EIO, EDQUOT or EROFS:
 *   OP     write | fsync (files and directories) | rename | create (a new file) | mkdir |
 *          unlink (files; rmdir too)
 *   WHEN   nth=N            the Nth matching call after the rule was set, once (then it is spent)
 *          rate=P seed=S    each matching call with probability P (0..1), from a seeded PRNG
 *          from=N           every matching call from the Nth on, until "clear"
 *          always           every matching call from now on, until "clear"
 *   path=GLOB               only calls on paths (from the mount's root, "/q/jobs") that fnmatch(3)
 *                           GLOB ('*' also matches '/'); a rename matches by either path
 * A failing operation changes nothing, live or durable, except fsync: as on Linux, a file whose
 * fsync failed has lost the data it was to make durable (the durable state stays as it was),
 * reads still return the new data, and later fsyncs of it report success while making nothing
 * durable, until every byte of the file has been written again ("fsyncgate"; counted in lies=).
 * Likewise a failed fsync of a directory: the names changed before it stay as they durably were
 * through later fsyncs of the directory, each until it changes again (a directory made since the
 * last cut, though, is durable at its next fsync). A cut then shows the loss. Rules and call counts survive cuts; poisoned files are healed by a cut or a sync.
 * Real full disks: put BACKING_DIR on a small tmpfs (statfs passes through).
 *
 * Other options: --work WORKDIR; --watch-stdin: when standard input reaches end of file (the
 * process that started pcfs died), unmount lazily (fusermount3 -u -z) and exit, so that a crashed
 * test leaves no mount behind.
 *
 * Build: cc -O2 -Wall pcfs.c $(pkg-config --cflags --libs fuse3) -o pcfs
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <search.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CTL_PATH "/.pcfs-ctl"
#define CTL_INO ((ino_t)0x7fffffffffff0001ULL)

static char *backing_path; /* absolute */
static char *work_path;    /* absolute */
static char *mount_path;   /* as given */
static int rootfd = -1;    /* BACKING_DIR: the live tree */
static int workfd = -1;    /* WORKDIR */
static int gravefd = -1;   /* WORKDIR/grave */
static int shadowfd = -1;  /* WORKDIR/shadow */
static unsigned long generation, ncuts, nsyncs, ncopies, last_cut_us, last_cut_inodes, nmissing, ncycles;

static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pcfs: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---------- paths ---------- */

/* "/a/b" -> "a/b"; "/" -> "." (relative to rootfd). */
static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

struct split {
  char parent[PATH_MAX]; /* relative to rootfd */
  const char *name;
};

static int split(const char *path, struct split *s) {
  const char *slash = strrchr(path, '/');
  size_t n = (size_t)(slash - path);
  if (!slash || !slash[1] || n >= sizeof s->parent) return -EINVAL;
  if (n == 0) {
    strcpy(s->parent, ".");
  } else {
    memcpy(s->parent, path + 1, n - 1);
    s->parent[n - 1] = 0;
  }
  s->name = slash + 1;
  return 0;
}

static int join(char *out, size_t size, const char *dir, const char *name) {
  int n = strcmp(dir, ".") == 0 ? snprintf(out, size, "%s", name) : snprintf(out, size, "%s/%s", dir, name);
  return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int is_ctl(const char *path) { return path && strcmp(path, CTL_PATH) == 0; }

/*
 * libfuse's high-level API keeps a file that is unlinked while open under a hidden name
 * (.fuse_hiddenXXXX, in the same directory) until it is closed, so that path-based operations
 * (fstat) still reach it. To pcfs such a name is not an entry: readdir hides it, the durable state
 * never has it, and the rename that hides a file counts as its unlink.
 */
#define HIDDEN_PREFIX ".fuse_hidden"
static int is_hidden_name(const char *name) { return strncmp(name, HIDDEN_PREFIX, sizeof HIDDEN_PREFIX - 1) == 0; }
static int is_hidden_path(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  return slash && is_hidden_name(slash + 1);
}

/* ---------- small sets keyed by inode (tsearch) ---------- */

static int cmp_ino(const void *a, const void *b) {
  ino_t x = *(const ino_t *)a, y = *(const ino_t *)b;
  return x < y ? -1 : x > y;
}

/* Graveyard members (for st_nlink: a grave link is not a name the workload can see). */
struct gent {
  ino_t ino;
};
static void *gtree;
static unsigned long ngrave;

static int in_grave(ino_t ino) { return tfind(&ino, &gtree, cmp_ino) != NULL; }

static void grave_add(ino_t ino) {
  if (in_grave(ino)) return;
  struct gent *g = malloc(sizeof *g);
  g->ino = ino;
  tsearch(g, &gtree, cmp_ino);
  ngrave++;
}

static void grave_del(ino_t ino) {
  void *p = tfind(&ino, &gtree, cmp_ino);
  if (!p) return;
  struct gent *g = *(struct gent **)p;
  tdelete(&ino, &gtree, cmp_ino);
  free(g);
  ngrave--;
}

static void grave_name(char *buf, size_t size, ino_t ino) { snprintf(buf, size, "%llu", (unsigned long long)ino); }

/* ---------- file data state ---------- */

enum { F_PREFIX, F_COPY };
struct fstate {
  ino_t ino;
  int kind;
  off_t size; /* F_PREFIX: the durable content is the live file's first `size` bytes */
};
static void *ftree;
static unsigned long nfstates;

static struct fstate *fstate_get(ino_t ino) {
  void *p = tfind(&ino, &ftree, cmp_ino);
  return p ? *(struct fstate **)p : NULL;
}

static struct fstate *fstate_add(ino_t ino, int kind, off_t size) {
  struct fstate *f = malloc(sizeof *f);
  f->ino = ino;
  f->kind = kind;
  f->size = size;
  tsearch(f, &ftree, cmp_ino);
  nfstates++;
  return f;
}

/* fsync: the live content is durable now. */
static void file_synced(ino_t ino) {
  struct fstate *f = fstate_get(ino);
  if (!f) return;
  if (f->kind == F_COPY) {
    char name[32];
    grave_name(name, sizeof name, ino);
    unlinkat(shadowfd, name, 0);
  }
  tdelete(&ino, &ftree, cmp_ino);
  free(f);
  nfstates--;
}

/* A new file: its durable content is empty. */
static void file_new(ino_t ino) {
  file_synced(ino); /* (an inode number is not reused within a generation; just in case) */
  fstate_add(ino, F_PREFIX, 0);
}

static int copy_range(int src, int dst, off_t len) {
  off_t in = 0, out = 0;
  while (in < len) {
    ssize_t n = copy_file_range(src, &in, dst, &out, (size_t)(len - in), 0);
    if (n > 0) continue;
    if (n == 0) return -EIO; /* the file is shorter than its durable prefix: cannot be */
    if (errno == EINTR) continue;
    /* No copy_file_range here: plain reads and writes. */
    char buf[65536];
    while (in < len) {
      size_t want = len - in < (off_t)sizeof buf ? (size_t)(len - in) : sizeof buf;
      ssize_t r = pread(src, buf, want, in);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r < 0 ? -errno : -EIO;
      ssize_t w = pwrite(dst, buf, (size_t)r, out);
      if (w != r) return w < 0 ? -errno : -EIO;
      in += r;
      out += r;
    }
  }
  return 0;
}

/*
 * About to change the file's bytes from offset `lo` on (a write at lo, or a truncate to lo).
 * The file is given by an open descriptor (fd >= 0) or by a path relative to rootfd.
 */
static int file_before_modify(ino_t ino, int fd, const char *relpath, off_t lo) {
  struct fstate *f = fstate_get(ino);
  struct stat st;
  if (!f) {
    int r = fd >= 0 ? fstat(fd, &st) : fstatat(rootfd, relpath, &st, AT_SYMLINK_NOFOLLOW);
    if (r < 0) return -errno;
    f = fstate_add(ino, F_PREFIX, st.st_size);
  }
  if (f->kind != F_PREFIX || lo >= f->size) return 0;
  /* A change inside the durable prefix: copy the prefix away first. */
  int src;
  if (fd >= 0) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    src = open(proc, O_RDONLY | O_CLOEXEC);
  } else {
    src = openat(rootfd, relpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (src < 0) return -errno;
  char name[32];
  grave_name(name, sizeof name, ino);
  int dst = openat(shadowfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (dst < 0) {
    int e = -errno;
    close(src);
    return e;
  }
  int r = copy_range(src, dst, f->size);
  close(src);
  close(dst);
  if (r < 0) {
    unlinkat(shadowfd, name, 0);
    return r;
  }
  f->kind = F_COPY;
  ncopies++;
  return 0;
}

/* ---------- directory entry state ---------- */

struct undo {
  char *name;
  int present; /* the entry this name had when it first changed: present? then its inode */
  ino_t ino;
  int lost; /* changed before a failed fsyncdir (fault mode): no later fsyncdir makes it durable, until it changes again */
  struct undo *next;
};
struct dstate {
  ino_t ino;
  int is_new; /* made since the last cut or sync: durably empty until its own fsyncdir */
  void *names; /* tsearch of struct undo by name */
  struct undo *list;
};
static void *dtree;
static unsigned long ndstates, nundo;

static int cmp_undo(const void *a, const void *b) { return strcmp(((const struct undo *)a)->name, ((const struct undo *)b)->name); }

static struct dstate *dstate_get(ino_t ino) {
  void *p = tfind(&ino, &dtree, cmp_ino);
  return p ? *(struct dstate **)p : NULL;
}

static struct dstate *dstate_add(ino_t ino, int is_new) {
  struct dstate *d = calloc(1, sizeof *d);
  d->ino = ino;
  d->is_new = is_new;
  tsearch(d, &dtree, cmp_ino);
  ndstates++;
  return d;
}

static void noop_free(void *p) { (void)p; }

static void dstate_free(struct dstate *d) {
  tdestroy(d->names, noop_free);
  for (struct undo *u = d->list, *next; u; u = next) {
    next = u->next;
    free(u->name);
    free(u);
    nundo--;
  }
  free(d);
}

/* fsyncdir: the live entries are durable now. */
static unsigned long nlies;

static void dir_synced(ino_t ino) {
  struct dstate *d = dstate_get(ino);
  if (!d) return;
  int lost = 0;
  for (struct undo *u = d->list; u; u = u->next) lost |= u->lost;
  if (lost) { /* keep the entries a failed fsyncdir lost; the others are durable now */
    struct undo **link = &d->list;
    while (*link) {
      struct undo *u = *link;
      if (u->lost) {
        link = &u->next;
        continue;
      }
      *link = u->next;
      tdelete(u, &d->names, cmp_undo);
      free(u->name);
      free(u);
      nundo--;
    }
    nlies++;
    return;
  }
  tdelete(&ino, &dtree, cmp_ino);
  dstate_free(d);
  ndstates--;
}

static void dir_new(ino_t ino) {
  dir_synced(ino);
  dstate_add(ino, 1);
}

/* Inode number of a directory given relative to rootfd. */
static int ino_of(const char *relpath, ino_t *ino) {
  struct stat st;
  if (fstatat(rootfd, relpath, &st, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  *ino = st.st_ino;
  return 0;
}

/* About to change entry `name` of directory `parent` (relative to rootfd): remember what it was. */
static int dir_note(const char *parent, const char *name) {
  ino_t dino = 0;
  int r = ino_of(parent, &dino);
  if (r < 0) return r;
  struct dstate *d = dstate_get(dino);
  if (!d) d = dstate_add(dino, 0);
  if (d->is_new) return 0;
  struct undo key = {.name = (char *)name};
  void *found = tfind(&key, &d->names, cmp_undo);
  if (found) {
    (*(struct undo **)found)->lost = 0; /* changed again: the next fsyncdir makes its new state durable */
    return 0;
  }
  char p[PATH_MAX];
  if ((r = join(p, sizeof p, parent, name)) < 0) return r;
  struct stat st;
  struct undo *u = calloc(1, sizeof *u);
  u->name = strdup(name);
  if (fstatat(rootfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    u->present = 1;
    u->ino = st.st_ino;
  } else if (errno != ENOENT) {
    int e = -errno;
    free(u->name);
    free(u);
    return e;
  }
  tsearch(u, &d->names, cmp_undo);
  u->next = d->list;
  d->list = u;
  nundo++;
  return 0;
}

/* ---------- open handles ---------- */

struct handle {
  int fd;
  int flags;
  ino_t ino;
  unsigned long gen;
  int ctl;
};

static struct handle *H(struct fuse_file_info *fi) { return fi ? (struct handle *)(uintptr_t)fi->fh : NULL; }

/* The handle of fi, or NULL with *err set when it is stale (opened before a cut). */
static struct handle *live_handle(struct fuse_file_info *fi, int *err) {
  struct handle *h = H(fi);
  if (h && h->gen != generation) {
    *err = -EIO;
    return NULL;
  }
  return h;
}

static struct handle *handle_new(int fd, int flags, ino_t ino) {
  struct handle *h = calloc(1, sizeof *h);
  h->fd = fd;
  h->flags = flags;
  h->ino = ino;
  h->gen = generation;
  return h;
}

/* New inodes belong to the caller (we run as root), with the group of a setgid parent. */
static void own(const char *relpath, const char *parent) {
  struct fuse_context *c = fuse_get_context();
  uid_t uid = c->uid;
  gid_t gid = c->gid;
  struct stat pst;
  if (fstatat(rootfd, parent, &pst, 0) == 0 && (pst.st_mode & S_ISGID)) gid = pst.st_gid;
  if (uid == 0 && gid == 0) return;
  fchownat(rootfd, relpath, uid, gid, AT_SYMLINK_NOFOLLOW);
}

/* ---------- tree helpers ---------- */

static int rmtree_at(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    int e = -errno;
    close(fd);
    return e;
  }
  struct dirent *de;
  int r = 0;
  while ((de = readdir(dir))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    int isdir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      isdir = fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    int e = isdir ? rmtree_at(fd, de->d_name) : (unlinkat(fd, de->d_name, 0) < 0 ? -errno : 0);
    if (e < 0 && !r) r = e;
  }
  closedir(dir);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && !r) r = -errno;
  return r;
}

/*
 * Whether a directory is empty (1) or not (0), for rmdir: hidden names do not count (they are no
 * entries). With drop_hidden, an empty directory's hidden names are unlinked, so that it can go
 * (their inodes are in the graveyard already).
 */
static int dir_is_empty(const char *relpath, int drop_hidden) {
  int fd = openat(rootfd, relpath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -EIO;
  }
  struct dirent *de;
  int empty = 1, hidden = 0;
  while ((de = readdir(dir))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (is_hidden_name(de->d_name)) {
      hidden = 1;
      continue;
    }
    empty = 0;
    break;
  }
  if (empty && hidden && drop_hidden) {
    rewinddir(dir);
    while ((de = readdir(dir)))
      if (is_hidden_name(de->d_name)) unlinkat(fd, de->d_name, 0);
  }
  closedir(dir);
  return empty;
}

static int open_subdir(int parent, const char *name) { return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }

/* Make WORKDIR/grave and WORKDIR/shadow empty. */
static int reset_work_dirs(void) {
  if (gravefd >= 0) close(gravefd);
  if (shadowfd >= 0) close(shadowfd);
  gravefd = shadowfd = -1;
  int r;
  if ((r = rmtree_at(workfd, "grave")) < 0 || (r = rmtree_at(workfd, "shadow")) < 0) return r;
  if (mkdirat(workfd, "grave", 0700) < 0 || mkdirat(workfd, "shadow", 0700) < 0) return -errno;
  gravefd = open_subdir(workfd, "grave");
  shadowfd = open_subdir(workfd, "shadow");
  return gravefd < 0 || shadowfd < 0 ? -errno : 0;
}

static void forget_faults_state(void);

static void forget_all(void) {
  forget_faults_state();
  tdestroy(ftree, free);
  ftree = NULL;
  nfstates = 0;
  tdestroy(dtree, (void (*)(void *))dstate_free);
  dtree = NULL;
  ndstates = 0;
  tdestroy(gtree, free);
  gtree = NULL;
  ngrave = 0;
}

/* ---------- faults (the second mode) ---------- */

/*
 * Rules that make chosen operations fail, set and cleared at run time through the control file.
 * An operation checked against the rules fails before it changes anything (the live tree and the
 * durable state stay as they were), except fsync, whose failure has the consequence it has on
 * Linux (below).
 */
enum { OP_WRITE, OP_FSYNC, OP_RENAME, OP_CREATE, OP_MKDIR, OP_UNLINK, NOPS };
static const char *const op_names[NOPS] = {"write", "fsync", "rename", "create", "mkdir", "unlink"};
enum { WHEN_NTH, WHEN_RATE, WHEN_ALWAYS, WHEN_FROM };
#define MAX_RULES 32
struct rule {
  int used, op, err, when;
  unsigned long n;    /* WHEN_NTH: fail the nth matching call after the rule was set, once; WHEN_FROM: every one from the nth on */
  unsigned long seen; /* matching calls since the rule was set */
  double rate;        /* WHEN_RATE: each matching call fails with this probability */
  uint64_t rng;       /* xorshift64* state, from the seed */
  char glob[PATH_MAX]; /* "": every path; else fnmatch(3) on the path (either path of a rename) */
};
static struct rule rules[MAX_RULES];
static unsigned long op_calls[NOPS], nfaults;

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* 0, or the error an operation on path (and path2, a rename's target) must fail with. */
static int nrules(void) {
  int n = 0;
  for (int i = 0; i < MAX_RULES; i++) n += rules[i].used;
  return n;
}

static int fault_check(int op, const char *path, const char *path2) {
  op_calls[op]++;
  if (!path) path = "";
  int fail = 0;
  for (int i = 0; i < MAX_RULES; i++) {
    struct rule *r = &rules[i];
    if (!r->used || r->op != op) continue;
    if (r->glob[0] && fnmatch(r->glob, path, 0) != 0 && !(path2 && fnmatch(r->glob, path2, 0) == 0)) continue;
    r->seen++;
    int hit = r->when == WHEN_ALWAYS || (r->when == WHEN_NTH && r->seen == r->n) || (r->when == WHEN_FROM && r->seen >= r->n) ||
              (r->when == WHEN_RATE && (double)(rng_next(&r->rng) >> 11) / 9007199254740992.0 < r->rate);
    if (r->when == WHEN_NTH && r->seen >= r->n) r->used = 0; /* spent */
    if (hit && !fail) fail = r->err;
  }
  if (fail) nfaults++;
  return fail ? -fail : 0;
}

/*
 * A file whose fsync failed (injected). On Linux the pages that fsync was to write are then
 * marked clean and their data is lost to the disk, though reads still see it, and the next fsync
 * reports success ("fsyncgate", PostgreSQL, 2018). Here: the durable state stays what it was,
 * and later fsyncs of the file succeed without making anything durable, until every byte of the
 * file has been written again since the failure (then the next fsync is a real one again). The
 * rewritten bytes are tracked as one range [lo, hi); a truncate cuts it. Counted in `lies`.
 */
struct poison {
  ino_t ino;
  off_t lo, hi;
};
static void *ptree;
static unsigned long npoisoned;

static struct poison *poison_get(ino_t ino) {
  void *p = tfind(&ino, &ptree, cmp_ino);
  return p ? *(struct poison **)p : NULL;
}

static void poison_add(ino_t ino) {
  if (poison_get(ino)) return;
  struct poison *p = calloc(1, sizeof *p);
  p->ino = ino;
  tsearch(p, &ptree, cmp_ino);
  npoisoned++;
}

static void poison_del(ino_t ino) {
  struct poison *p = poison_get(ino);
  if (!p) return;
  tdelete(&ino, &ptree, cmp_ino);
  free(p);
  npoisoned--;
}

/* Bytes [a, b) of a poisoned file written again. */
static void poison_wrote(ino_t ino, off_t a, off_t b) {
  struct poison *p = poison_get(ino);
  if (!p || a >= b) return;
  if (p->lo == p->hi) p->lo = a, p->hi = b;
  else if (a <= p->hi && b >= p->lo) p->lo = a < p->lo ? a : p->lo, p->hi = b > p->hi ? b : p->hi;
  else if (a == 0 || (p->lo != 0 && b - a > p->hi - p->lo)) p->lo = a, p->hi = b; /* keep one range */
}

static void poison_truncated(ino_t ino, off_t size) {
  struct poison *p = poison_get(ino);
  if (!p) return;
  if (p->hi > size) p->hi = size;
  if (p->lo >= p->hi) p->lo = p->hi = 0;
}

/* Whether an fsync of a poisoned file of this live size is a real one (everything rewritten). */
static int poison_healed(struct poison *p, off_t size) { return size == 0 || (p->lo == 0 && p->hi >= size); }

static void forget_faults_state(void) {
  tdestroy(ptree, free);
  ptree = NULL;
  npoisoned = 0;
}

/* A successful fsync of the file behind h: its live content is durable, unless it is poisoned. */
static void fsync_done(struct handle *h) {
  struct poison *p = poison_get(h->ino);
  if (p) {
    struct stat st;
    if (fstat(h->fd, &st) < 0 || !poison_healed(p, st.st_size)) {
      nlies++;
      return;
    }
    poison_del(h->ino);
  }
  file_synced(h->ino);
}

/*
 * fault_check for an operation on an open file or directory (write, fsync): libfuse gives no path
 * there (nullpath_ok), so the path is the descriptor's, as the kernel knows it now.
 */
static int fault_check_fd(int op, int fd) {
  char path[PATH_MAX] = "";
  if (nrules() > 0) {
    char proc[64], link[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, link, sizeof link - 1);
    size_t b = strlen(backing_path);
    if (n > 0) {
      link[n] = 0;
      if (!strncmp(link, backing_path, b) && (link[b] == '/' || link[b] == 0)) snprintf(path, sizeof path, "%s", link[b] ? link + b : "/");
    }
  }
  return fault_check(op, path, NULL);
}

static int parse_errno(const char *s) {
  if (!strcmp(s, "ENOSPC")) return ENOSPC;
  if (!strcmp(s, "EIO")) return EIO;
  if (!strcmp(s, "EDQUOT")) return EDQUOT;
  if (!strcmp(s, "EROFS")) return EROFS;
  return 0;
}

/* "fault OP ERRNO (nth=N | from=N | rate=P seed=S | always) [path=GLOB]" */
static int add_rule(char *args) {
  struct rule r = {.used = 1, .op = -1, .when = -1};
  int seeded = 0;
  char *save = NULL;
  for (char *w = strtok_r(args, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    if (r.op < 0) {
      for (int i = 0; i < NOPS; i++)
        if (!strcmp(w, op_names[i])) r.op = i;
      if (r.op < 0) return -EINVAL;
    } else if (!r.err) {
      if (!(r.err = parse_errno(w))) return -EINVAL;
    } else if (!strncmp(w, "nth=", 4)) {
      r.when = WHEN_NTH;
      r.n = strtoul(w + 4, NULL, 10);
      if (r.n == 0) return -EINVAL;
    } else if (!strncmp(w, "from=", 5)) {
      r.when = WHEN_FROM;
      r.n = strtoul(w + 5, NULL, 10);
      if (r.n == 0) return -EINVAL;
    } else if (!strncmp(w, "rate=", 5)) {
      r.when = WHEN_RATE;
      r.rate = strtod(w + 5, NULL);
    } else if (!strncmp(w, "seed=", 5)) {
      r.rng = strtoull(w + 5, NULL, 10) * 0x9E3779B97F4A7C15ULL + 1;
      seeded = 1;
    } else if (!strcmp(w, "always")) {
      r.when = WHEN_ALWAYS;
    } else if (!strncmp(w, "path=", 5) && strlen(w + 5) < sizeof r.glob) {
      strcpy(r.glob, w + 5);
    } else {
      return -EINVAL;
    }
  }
  if (r.op < 0 || !r.err || r.when < 0 || (r.when == WHEN_RATE && !seeded)) return -EINVAL;
  for (int i = 0; i < MAX_RULES; i++) {
    if (rules[i].used) continue;
    rules[i] = r;
    return 0;
  }
  return -ENOSPC;
}

static void clear_rules(void) { memset(rules, 0, sizeof rules); }


/* ---------- the cut ---------- */

/* Where each inode of the live tree and the graveyard is. */
struct loc {
  ino_t ino;
  int base;  /* rootfd or gravefd */
  char *rel; /* relative to base */
  int isdir;
  int onstack; /* being built (cycle check) */
  char *newrel; /* non-directories: its first name in the new tree (relative to it) */
};
static void *ltree;

static struct loc *loc_get(ino_t ino) {
  void *p = tfind(&ino, &ltree, cmp_ino);
  return p ? *(struct loc **)p : NULL;
}

static void loc_add(ino_t ino, int base, const char *relpath, int isdir) {
  if (loc_get(ino)) return;
  struct loc *l = calloc(1, sizeof *l);
  l->ino = ino;
  l->base = base;
  l->rel = strdup(relpath);
  l->isdir = isdir;
  tsearch(l, &ltree, cmp_ino);
}

static void loc_free(void *p) {
  struct loc *l = p;
  free(l->rel);
  free(l->newrel);
  free(l);
}

static int walk(int base, const char *relpath) {
  int fd = openat(base, relpath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -EIO;
  }
  struct dirent *de;
  int r = 0;
  while (!r && (de = readdir(dir))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    int isdir = de->d_type == DT_DIR;
    ino_t ino = de->d_ino;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
      isdir = S_ISDIR(st.st_mode);
      ino = st.st_ino;
    }
    char p[PATH_MAX];
    if ((r = join(p, sizeof p, relpath, de->d_name)) < 0) break;
    int known = loc_get(ino) != NULL;
    loc_add(ino, base, p, isdir);
    if (isdir && !known) r = walk(base, p);
  }
  closedir(dir);
  return r;
}

struct ent {
  char *name;
  ino_t ino;
};

static int cmp_ent(const void *a, const void *b) { return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name); }

/* The durable entries of a directory, sorted by name (so that a cut is deterministic). */
static int durable_entries(struct loc *dl, struct ent **out, size_t *n) {
  struct dstate *d = dstate_get(dl->ino);
  size_t cap = 16, len = 0;
  struct ent *v = malloc(cap * sizeof *v);
  *out = v;
  *n = 0;
  if (d && d->is_new) return 0;
  int fd = openat(dl->base, dl->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -EIO;
  }
  struct dirent *de;
  while ((de = readdir(dir))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || is_hidden_name(de->d_name)) continue;
    if (d) {
      struct undo key = {.name = de->d_name};
      if (tfind(&key, &d->names, cmp_undo)) continue; /* changed since: its undo entry decides */
    }
    ino_t ino = de->d_ino;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
      ino = st.st_ino;
    }
    if (len == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    v[len].name = strdup(de->d_name);
    v[len++].ino = ino;
  }
  closedir(dir);
  if (d)
    for (struct undo *u = d->list; u; u = u->next) {
      if (!u->present) continue;
      if (len == cap) v = realloc(v, (cap *= 2) * sizeof *v);
      v[len].name = strdup(u->name);
      v[len++].ino = u->ino;
    }
  qsort(v, len, sizeof *v, cmp_ent);
  *out = v;
  *n = len;
  return 0;
}

static void copy_meta(int fd, const struct stat *st) {
  if (fchown(fd, st->st_uid, st->st_gid) < 0) { /* best effort */
  }
  fchmod(fd, st->st_mode & 07777);
}

/* Materialise non-directory inode l under name `name` of new directory newfd (newrel: its path). */
static int build_leaf(struct loc *l, int newroot, int newfd, const char *name, const char *newrel) {
  if (l->newrel) return linkat(newroot, l->newrel, newfd, name, 0) < 0 ? -errno : 0;
  struct fstate *f = fstate_get(l->ino);
  if (f && f->kind == F_COPY) {
    char sname[32];
    grave_name(sname, sizeof sname, l->ino);
    if (linkat(shadowfd, sname, newfd, name, 0) < 0) return -errno;
    struct stat st;
    int fd = openat(newfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (fstatat(l->base, l->rel, &st, AT_SYMLINK_NOFOLLOW) == 0) copy_meta(fd, &st);
    close(fd);
  } else {
    if (linkat(l->base, l->rel, newfd, name, 0) < 0) return -errno;
    if (f) { /* F_PREFIX */
      int fd = openat(newfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return -errno;
      int r = ftruncate(fd, f->size) < 0 ? -errno : 0;
      close(fd);
      if (r < 0) return r;
    }
  }
  l->newrel = strdup(newrel);
  last_cut_inodes++;
  return 0;
}

static int build_dir(struct loc *dl, int newroot, int newfd, const char *newrel) {
  struct ent *v;
  size_t n;
  int r = durable_entries(dl, &v, &n);
  dl->onstack = 1;
  last_cut_inodes++;
  for (size_t i = 0; !r && i < n; i++) {
    struct loc *l = loc_get(v[i].ino);
    char p[PATH_MAX];
    if (!l) {
      nmissing++;
      logf_("cut: %s/%s names inode %llu, found nowhere", newrel, v[i].name, (unsigned long long)v[i].ino);
      continue;
    }
    if ((r = join(p, sizeof p, newrel, v[i].name)) < 0) break;
    if (!l->isdir) {
      r = build_leaf(l, newroot, newfd, v[i].name, p);
      continue;
    }
    if (l->onstack) {
      ncycles++;
      continue;
    }
    if (mkdirat(newfd, v[i].name, 0700) < 0) {
      r = -errno;
      break;
    }
    int sub = open_subdir(newfd, v[i].name);
    if (sub < 0) {
      r = -errno;
      break;
    }
    r = build_dir(l, newroot, sub, p);
    struct stat st;
    if (!r && fstatat(l->base, l->rel, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      copy_meta(sub, &st);
      struct timespec ts[2] = {st.st_atim, st.st_mtim};
      futimens(sub, ts);
    }
    close(sub);
  }
  dl->onstack = 0;
  for (size_t i = 0; i < n; i++) free(v[i].name);
  free(v);
  return r;
}

static int do_cut(void) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  last_cut_inodes = 0;
  int r = 0, newroot = -1;
  struct stat rst;
  if (fstat(rootfd, &rst) < 0) return -errno;
  loc_add(rst.st_ino, rootfd, ".", 1);
  if ((r = walk(rootfd, ".")) < 0) goto out;
  {
    /* The graveyard: files and (empty) directories that are no longer named live. */
    DIR *g = fdopendir(dup(gravefd));
    if (!g) {
      r = -errno;
      goto out;
    }
    rewinddir(g);
    struct dirent *de;
    while ((de = readdir(g))) {
      struct stat st;
      if (de->d_name[0] == '.' || fstatat(gravefd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
      loc_add(st.st_ino, gravefd, de->d_name, S_ISDIR(st.st_mode));
    }
    closedir(g);
  }
  if ((r = rmtree_at(workfd, "next")) < 0) goto out;
  if (mkdirat(workfd, "next", 0700) < 0 || (newroot = open_subdir(workfd, "next")) < 0) {
    r = -errno;
    goto out;
  }
  if ((r = build_dir(loc_get(rst.st_ino), newroot, newroot, ".")) < 0) goto out;
  copy_meta(newroot, &rst);
  struct timespec ts[2] = {rst.st_atim, rst.st_mtim};
  futimens(newroot, ts);

  /* Swap: BACKING_DIR <- WORKDIR/next; the old tree goes. */
  char old[PATH_MAX], next[PATH_MAX];
  snprintf(old, sizeof old, "%s/old", work_path);
  snprintf(next, sizeof next, "%s/next", work_path);
  rmtree_at(workfd, "old");
  if (rename(backing_path, old) < 0) {
    r = -errno;
    goto out;
  }
  if (rename(next, backing_path) < 0) {
    r = -errno;
    rename(old, backing_path);
    goto out;
  }
  close(rootfd);
  rootfd = newroot;
  newroot = -1;
  rmtree_at(workfd, "old");
  forget_all();
  r = reset_work_dirs();
  generation++;
  ncuts++;
out:
  if (newroot >= 0) {
    close(newroot);
    rmtree_at(workfd, "next");
  }
  tdestroy(ltree, loc_free);
  ltree = NULL;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  last_cut_us = (unsigned long)((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000);
  if (r < 0) logf_("cut failed: %s", strerror(-r));
  return r;
}

static int do_sync(void) {
  forget_all();
  nsyncs++;
  return reset_work_dirs();
}

static int counters(char *buf, size_t size) {
  return snprintf(buf, size,
                  "gen=%lu cuts=%lu syncs=%lu dirty_files=%lu dirty_dirs=%lu undo_entries=%lu grave=%lu shadow_copies=%lu "
                  "last_cut_us=%lu last_cut_inodes=%lu missing=%lu cycles=%lu rules=%d faults=%lu lies=%lu poisoned=%lu "
                  "calls_write=%lu calls_fsync=%lu calls_rename=%lu calls_create=%lu calls_mkdir=%lu calls_unlink=%lu\n",
                  generation, ncuts, nsyncs, nfstates, ndstates, nundo, ngrave, ncopies, last_cut_us, last_cut_inodes, nmissing,
                  ncycles, nrules(), nfaults, nlies, npoisoned, op_calls[OP_WRITE], op_calls[OP_FSYNC], op_calls[OP_RENAME],
                  op_calls[OP_CREATE], op_calls[OP_MKDIR], op_calls[OP_UNLINK]);
}

/* ---------- operations ---------- */

static void *pc_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  cfg->use_ino = 1;
  cfg->readdir_ino = 0;
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 0; /* unlinked open files are renamed to .fuse_hidden*: see is_hidden_name */
  cfg->kernel_cache = 0;
  cfg->auto_cache = 0;
  cfg->direct_io = 0;
  conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_READDIRPLUS);
  return NULL;
}

static void fix_nlink(struct stat *st) {
  if (!S_ISDIR(st->st_mode) && st->st_nlink > 0 && in_grave(st->st_ino)) st->st_nlink--;
}

static int pc_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  int err = 0;
  if (is_ctl(path) && !H(fi)) {
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0600;
    st->st_nlink = 1;
    st->st_ino = CTL_INO;
    return 0;
  }
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h && h->ctl) return pc_getattr(CTL_PATH, st, NULL);
  int r = h ? fstat(h->fd, st) : fstatat(rootfd, rel(path), st, AT_SYMLINK_NOFOLLOW);
  if (r < 0) return -errno;
  fix_nlink(st);
  if (is_hidden_path(path) && st->st_nlink > 0) st->st_nlink--; /* the hidden name is no name either */
  return 0;
}

static int pc_access(const char *path, int mask) {
  (void)mask;
  if (is_ctl(path)) return 0;
  struct stat st;
  return fstatat(rootfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int pc_readlink(const char *path, char *buf, size_t size) {
  ssize_t n = readlinkat(rootfd, rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = 0;
  return 0;
}

static int pc_opendir(const char *path, struct fuse_file_info *fi) {
  int fd = openat(rootfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  fi->fh = (uintptr_t)handle_new(fd, O_RDONLY, st.st_ino);
  return 0;
}

static int pc_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
  (void)path;
  (void)off;
  (void)flags;
  int err = 0;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  int fd = dup(h->fd);
  if (fd < 0) return -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -errno;
  }
  rewinddir(dir);
  struct dirent *de;
  while ((de = readdir(dir))) {
    if (is_hidden_name(de->d_name)) continue;
    struct stat st = {0};
    st.st_ino = de->d_ino;
    st.st_mode = DTTOIF(de->d_type);
    if (filler(buf, de->d_name, &st, 0, 0)) break;
  }
  closedir(dir);
  return 0;
}

/* Close and free a handle: the one release of files and directories alike. */
static int drop_handle(struct fuse_file_info *fi) {
  struct handle *h = H(fi);
  if (h->fd >= 0) close(h->fd);
  free(h);
  return 0;
}

static int pc_releasedir(const char *path, struct fuse_file_info *fi) {
  (void)path;
  return drop_handle(fi);
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path;
  (void)datasync;
  int err = 0;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  /*
   * A failed fsync of a directory makes nothing durable, and (as for a file) a later one does not
   * make durable the changes made before it: each such name stays as it was until it changes again.
   */
  if ((err = fault_check_fd(OP_FSYNC, h->fd)) < 0) {
    struct dstate *d = dstate_get(h->ino);
    if (d)
      for (struct undo *u = d->list; u; u = u->next) u->lost = 1;
    return err;
  }
  dir_synced(h->ino);
  return 0;
}

static int pc_mkdir(const char *path, mode_t mode) {
  struct split s;
  int r;
  if (is_ctl(path)) return -EEXIST;
  if ((r = fault_check(OP_MKDIR, path, NULL)) < 0) return r;
  if ((r = split(path, &s)) < 0 || (r = dir_note(s.parent, s.name)) < 0) return r;
  if (mkdirat(rootfd, rel(path), mode) < 0) return -errno;
  ino_t ino = 0;
  if ((r = ino_of(rel(path), &ino)) < 0) return r;
  dir_new(ino);
  own(rel(path), s.parent);
  return 0;
}

static int pc_mknod(const char *path, mode_t mode, dev_t rdev) {
  struct split s;
  int r;
  if (is_ctl(path)) return -EEXIST;
  if ((r = fault_check(OP_CREATE, path, NULL)) < 0) return r;
  if ((r = split(path, &s)) < 0 || (r = dir_note(s.parent, s.name)) < 0) return r;
  if (mknodat(rootfd, rel(path), mode, rdev) < 0) return -errno;
  ino_t ino = 0;
  if ((r = ino_of(rel(path), &ino)) < 0) return r;
  if (S_ISREG(mode)) file_new(ino);
  own(rel(path), s.parent);
  return 0;
}

static int pc_symlink(const char *target, const char *path) {
  struct split s;
  int r;
  if (is_ctl(path)) return -EEXIST;
  if ((r = split(path, &s)) < 0 || (r = dir_note(s.parent, s.name)) < 0) return r;
  if (symlinkat(target, rootfd, rel(path)) < 0) return -errno;
  own(rel(path), s.parent);
  return 0;
}

/* Keep an inode that is about to lose a name alive until the next cut (hard link in the grave). */
static int bury_file(const char *relpath, ino_t ino) {
  char name[32];
  grave_name(name, sizeof name, ino);
  if (linkat(rootfd, relpath, gravefd, name, 0) < 0 && errno != EEXIST) return -errno;
  grave_add(ino);
  return 0;
}

static int pc_unlink(const char *path) {
  struct split s;
  struct stat st;
  int r;
  if (is_ctl(path)) return -EPERM;
  if (is_hidden_path(path)) /* the last close of a file unlinked while open: it is buried already */
    return unlinkat(rootfd, rel(path), 0) < 0 ? -errno : 0;
  if ((r = split(path, &s)) < 0) return r;
  if (fstatat(rootfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  if (S_ISDIR(st.st_mode)) return -EISDIR;
  if ((r = fault_check(OP_UNLINK, path, NULL)) < 0) return r;
  if ((r = dir_note(s.parent, s.name)) < 0 || (r = bury_file(rel(path), st.st_ino)) < 0) return r;
  return unlinkat(rootfd, rel(path), 0) < 0 ? -errno : 0;
}

/* Move an empty directory into the graveyard (rmdir, or the victim of a rename). */
static int bury_dir(const char *relpath, ino_t ino) {
  int e = dir_is_empty(relpath, 1);
  if (e < 0) return e;
  if (!e) return -ENOTEMPTY;
  char name[32];
  grave_name(name, sizeof name, ino);
  if (renameat(rootfd, relpath, gravefd, name) < 0) return -errno;
  grave_add(ino);
  return 0;
}

static int pc_rmdir(const char *path) {
  struct split s;
  struct stat st;
  int r;
  if (is_ctl(path)) return -ENOTDIR;
  if (!strcmp(path, "/")) return -EBUSY;
  if ((r = split(path, &s)) < 0) return r;
  if (fstatat(rootfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
  if (dir_is_empty(rel(path), 0) == 0) return -ENOTEMPTY;
  if ((r = fault_check(OP_UNLINK, path, NULL)) < 0) return r;
  if ((r = dir_note(s.parent, s.name)) < 0) return r;
  return bury_dir(rel(path), st.st_ino);
}

static int pc_rename(const char *from, const char *to, unsigned int flags) {
  struct split sf, st_;
  struct stat a, b;
  int r;
  if (is_ctl(from) || is_ctl(to)) return -EPERM;
  if (flags & ~RENAME_NOREPLACE) return -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT: not modelled */
  if ((r = split(from, &sf)) < 0 || (r = split(to, &st_)) < 0) return r;
  if (fstatat(rootfd, rel(from), &a, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  if (is_hidden_path(to) && !is_hidden_path(from)) { /* libfuse hides a file unlinked while open */
    if ((r = fault_check(OP_UNLINK, from, NULL)) < 0) return r;
    if ((r = dir_note(sf.parent, sf.name)) < 0 || (r = bury_file(rel(from), a.st_ino)) < 0) return r;
    return renameat(rootfd, rel(from), rootfd, rel(to)) < 0 ? -errno : 0;
  }
  if ((r = fault_check(OP_RENAME, from, to)) < 0) return r;
  int exists = fstatat(rootfd, rel(to), &b, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return -errno;
  if (exists && (flags & RENAME_NOREPLACE)) return -EEXIST;
  if (exists && a.st_ino == b.st_ino) /* two names of one inode: POSIX says do nothing */
    return renameat(rootfd, rel(from), rootfd, rel(to)) < 0 ? -errno : 0;
  if (exists && S_ISDIR(b.st_mode)) {
    if (!S_ISDIR(a.st_mode)) return -EISDIR;
    if (dir_is_empty(rel(to), 0) == 0) return -ENOTEMPTY;
  }
  if (exists && !S_ISDIR(b.st_mode) && S_ISDIR(a.st_mode)) return -ENOTDIR;
  if ((r = dir_note(sf.parent, sf.name)) < 0 || (r = dir_note(st_.parent, st_.name)) < 0) return r;
  if (!exists) return renameat(rootfd, rel(from), rootfd, rel(to)) < 0 ? -errno : 0;
  if (!S_ISDIR(b.st_mode)) {
    if ((r = bury_file(rel(to), b.st_ino)) < 0) return r;
    return renameat(rootfd, rel(from), rootfd, rel(to)) < 0 ? -errno : 0;
  }
  if ((r = bury_dir(rel(to), b.st_ino)) < 0) return r;
  if (renameat(rootfd, rel(from), rootfd, rel(to)) < 0) {
    int e = -errno;
    char name[32];
    grave_name(name, sizeof name, b.st_ino);
    if (renameat(gravefd, name, rootfd, rel(to)) == 0) grave_del(b.st_ino); /* put the victim back */
    return e;
  }
  return 0;
}

static int pc_link(const char *from, const char *to) {
  struct split s;
  int r;
  if (is_ctl(from) || is_ctl(to)) return -EPERM;
  if ((r = split(to, &s)) < 0 || (r = dir_note(s.parent, s.name)) < 0) return r;
  return linkat(rootfd, rel(from), rootfd, rel(to), 0) < 0 ? -errno : 0;
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  int err = 0;
  if (is_ctl(path) && !H(fi)) return -EPERM;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h && h->ctl) return -EPERM;
  int r = h ? fchmod(h->fd, mode) : fchmodat(rootfd, rel(path), mode, 0);
  return r < 0 ? -errno : 0;
}

static int pc_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
  int err = 0;
  if (is_ctl(path) && !H(fi)) return -EPERM;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h && h->ctl) return -EPERM;
  int r = h ? fchown(h->fd, uid, gid) : fchownat(rootfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
  return r < 0 ? -errno : 0;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  int err = 0, r;
  if (is_ctl(path) && !H(fi)) return 0; /* `echo cut > .pcfs-ctl` truncates first */
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h && h->ctl) return 0;
  if (h) {
    if ((r = file_before_modify(h->ino, h->fd, NULL, size)) < 0) return r;
    if (ftruncate(h->fd, size) < 0) return -errno;
    poison_truncated(h->ino, size);
    return 0;
  }
  int fd = openat(rootfd, rel(path), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0) r = -errno;
  else if ((r = file_before_modify(st.st_ino, fd, NULL, size)) == 0 && ftruncate(fd, size) < 0) r = -errno;
  else if (r == 0) poison_truncated(st.st_ino, size);
  close(fd);
  return r;
}

static int pc_utimens(const char *path, const struct timespec ts[2], struct fuse_file_info *fi) {
  int err = 0;
  if (is_ctl(path) && !H(fi)) return 0;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h && h->ctl) return 0;
  int r = h ? futimens(h->fd, ts) : utimensat(rootfd, rel(path), ts, AT_SYMLINK_NOFOLLOW);
  return r < 0 ? -errno : 0;
}

/* Flags for the backing descriptor: the caller's, less what the kernel did already or we cannot. */
static int backing_flags(int flags) { return (flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT)) | O_CLOEXEC | O_NOFOLLOW; }

static int open_ctl(struct fuse_file_info *fi) {
  struct fuse_context *c = fuse_get_context();
  if (c->uid != 0) return -EACCES;
  struct handle *h = handle_new(-1, fi->flags, CTL_INO);
  h->ctl = 1;
  fi->fh = (uintptr_t)h;
  fi->direct_io = 1; /* reads and writes reach us whatever the (zero) size says */
  fi->nonseekable = 0;
  return 0;
}

static int pc_open(const char *path, struct fuse_file_info *fi) {
  if (is_ctl(path)) return open_ctl(fi);
  int r;
  const char *p = rel(path);
  if (fi->flags & O_TRUNC) { /* the kernel passes O_TRUNC through (atomic_o_trunc) */
    struct stat st;
    if (fstatat(rootfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      if ((r = file_before_modify(st.st_ino, -1, p, 0)) < 0) return r;
      poison_truncated(st.st_ino, 0);
    }
  }
  int fd = openat(rootfd, p, backing_flags(fi->flags));
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  fi->fh = (uintptr_t)handle_new(fd, fi->flags, st.st_ino);
  fi->keep_cache = 0;
  return 0;
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  struct split s;
  int r;
  if (is_ctl(path)) return fi->flags & O_EXCL ? -EEXIST : open_ctl(fi);
  if ((r = split(path, &s)) < 0) return r;
  struct stat st;
  if (fstatat(rootfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) == 0) { /* it exists after all */
    if (fi->flags & O_EXCL) return -EEXIST;
    return pc_open(path, fi);
  }
  if ((r = fault_check(OP_CREATE, path, NULL)) < 0) return r;
  if ((r = dir_note(s.parent, s.name)) < 0) return r;
  int fd = openat(rootfd, rel(path), backing_flags(fi->flags) | O_CREAT | O_EXCL, mode);
  if (fd < 0) return -errno;
  if (fstat(fd, &st) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  file_new(st.st_ino);
  own(rel(path), s.parent);
  fi->fh = (uintptr_t)handle_new(fd, fi->flags, st.st_ino);
  fi->keep_cache = 0;
  return 0;
}

static int pc_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)path;
  int err = 0;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h->ctl) {
    char text[512];
    int n = counters(text, sizeof text);
    if (off >= n) return 0;
    size_t len = (size_t)(n - off) < size ? (size_t)(n - off) : size;
    memcpy(buf, text + off, len);
    return (int)len;
  }
  ssize_t n = pread(h->fd, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int ctl_write(const char *buf, size_t size) {
  char line[PATH_MAX + 64];
  size_t i = 0;
  while (i < size) {
    size_t j = i;
    while (j < size && buf[j] != '\n') j++;
    size_t n = j - i < sizeof line - 1 ? j - i : sizeof line - 1;
    memcpy(line, buf + i, n);
    line[n] = 0;
    i = j + 1;
    int r = 0;
    if (!strcmp(line, "cut")) r = do_cut();
    else if (!strcmp(line, "sync")) r = do_sync();
    else if (!strncmp(line, "fault ", 6)) r = add_rule(line + 6);
    else if (!strcmp(line, "clear")) clear_rules();
    else if (line[0]) r = -EINVAL;
    if (r < 0) return r == -EINVAL ? r : -EIO;
  }
  return (int)size;
}

static int pc_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)path;
  int err = 0, r;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h->ctl) return ctl_write(buf, size);
  if ((r = fault_check_fd(OP_WRITE, h->fd)) < 0) return r;
  off_t at = off;
  if (h->flags & O_APPEND) { /* the backing descriptor appends wherever the kernel thinks the end is */
    struct stat st;
    if (fstat(h->fd, &st) < 0) return -errno;
    at = st.st_size;
  }
  if (size && (r = file_before_modify(h->ino, h->fd, NULL, at)) < 0) return r;
  ssize_t n = pwrite(h->fd, buf, size, off);
  if (n < 0) return -errno;
  poison_wrote(h->ino, at, at + n);
  if (h->flags & O_DSYNC) fsync_done(h); /* O_SYNC includes O_DSYNC */
  return (int)n;
}

static int pc_statfs(const char *path, struct statvfs *sv) {
  (void)path;
  return fstatvfs(rootfd, sv) < 0 ? -errno : 0;
}

static int pc_flush(const char *path, struct fuse_file_info *fi) {
  (void)path;
  (void)fi;
  return 0;
}

static int pc_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  return drop_handle(fi);
}

static int pc_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path;
  (void)datasync;
  int err = 0;
  struct handle *h = live_handle(fi, &err);
  if (err) return err;
  if (h->ctl) return 0;
  if ((err = fault_check_fd(OP_FSYNC, h->fd)) < 0) {
    poison_add(h->ino); /* the data is lost to the disk, and the next fsync will not say so */
    return err;
  }
  fsync_done(h);
  return 0;
}

static const struct fuse_operations ops = {
    .init = pc_init,
    .getattr = pc_getattr,
    .access = pc_access,
    .readlink = pc_readlink,
    .opendir = pc_opendir,
    .readdir = pc_readdir,
    .releasedir = pc_releasedir,
    .fsyncdir = pc_fsyncdir,
    .mkdir = pc_mkdir,
    .mknod = pc_mknod,
    .symlink = pc_symlink,
    .unlink = pc_unlink,
    .rmdir = pc_rmdir,
    .rename = pc_rename,
    .link = pc_link,
    .chmod = pc_chmod,
    .chown = pc_chown,
    .truncate = pc_truncate,
    .utimens = pc_utimens,
    .open = pc_open,
    .create = pc_create,
    .read = pc_read,
    .write = pc_write,
    .statfs = pc_statfs,
    .flush = pc_flush,
    .release = pc_release,
    .fsync = pc_fsync,
    /* No .lock/.flock: the kernel then keeps flock and fcntl locks itself. */
};

/* ---------- main ---------- */

static void *watch_stdin(void *arg) {
  (void)arg;
  char buf[256];
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;
  }
  /* Our parent is gone: unmount lazily; the session loop then ends. */
  char *argv[] = {"fusermount3", "-u", "-z", "--", mount_path, NULL};
  pid_t pid;
  extern char **environ;
  if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ) == 0) waitpid(pid, NULL, 0);
  sleep(5);
  _exit(0);
}

static void usage(void) {
  fprintf(stderr, "usage: pcfs [--work WORKDIR] [--watch-stdin] BACKING_DIR MOUNTPOINT [fuse options]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *work = NULL;
  int watch = 0, i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--work") && i + 1 < argc) work = argv[++i];
    else if (!strcmp(argv[i], "--watch-stdin")) watch = 1;
    else break;
  }
  if (argc - i < 2) usage();
  backing_path = realpath(argv[i], NULL);
  mount_path = argv[i + 1];
  if (!backing_path) {
    perror(argv[i]);
    return 2;
  }
  char def[PATH_MAX];
  if (!work) {
    snprintf(def, sizeof def, "%s.pcfs-work", backing_path);
    work = def;
  }
  mkdir(work, 0700);
  work_path = realpath(work, NULL);
  if (!work_path) {
    perror(work);
    return 2;
  }
  umask(0); /* modes arrive already masked by the kernel */
  rootfd = open(backing_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  workfd = open(work_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat s1, s2;
  if (rootfd < 0 || workfd < 0 || fstat(rootfd, &s1) < 0 || fstat(workfd, &s2) < 0) {
    perror("pcfs: open");
    return 2;
  }
  if (s1.st_dev != s2.st_dev) {
    fprintf(stderr, "pcfs: %s and %s must be on one file system\n", backing_path, work_path);
    return 2;
  }
  rmtree_at(workfd, "next");
  rmtree_at(workfd, "old");
  if (reset_work_dirs() < 0) {
    perror("pcfs: work dir");
    return 2;
  }

  struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
  fuse_opt_add_arg(&args, argv[0]);
  fuse_opt_add_arg(&args, mount_path);
  fuse_opt_add_arg(&args, "-f");
  fuse_opt_add_arg(&args, "-s");
  fuse_opt_add_arg(&args, "-odefault_permissions,fsname=pcfs,subtype=pcfs");
  if (geteuid() == 0) fuse_opt_add_arg(&args, "-oallow_other");
  for (int j = i + 2; j < argc; j++) fuse_opt_add_arg(&args, argv[j]);

  if (watch) {
    pthread_t t;
    pthread_create(&t, NULL, watch_stdin, NULL);
    pthread_detach(t);
  }
  int r = fuse_main(args.argc, args.argv, &ops, NULL);
  fuse_opt_free_args(&args);
  return r;
}
