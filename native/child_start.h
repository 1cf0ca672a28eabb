/* A child's start by clone and exec, with a table of descriptors of its own that is not a copy
 * of ours (child_start.c says why). fspl_native.c's spawn_run: begin, exec for each candidate of
 * PATH until one starts, end. */
#ifndef FSPL_CHILD_START_H
#define FSPL_CHILD_START_H

#include <sys/types.h>

#define FSPL_CHILD_SETSID 1 /* the child leads a new session and process group */
#define FSPL_CHILD_SETPGID 4 /* the child leads a new process group, in our session */

typedef struct {
  char* const* argv;
  char* const* envp;
  const char* cwd; /* NULL: ours */
  int fds[3]; /* the child's 0-2; fds[0] -1: /dev/null */
  int flags; /* FSPL_CHILD_* (other bits are ignored) */
} fspl_child;

/* Reserve the slots now (at the addon's load, while few descriptors are open, so that theirs are low). */
void fspl_child_prepare(void);
/* Take the process's start lock and put c's descriptors in the slots: 0, or an errno (the lock is
 * then not held): ENOSYS once a child could not have a table of its own (the caller starts it otherwise). */
int fspl_child_begin(const fspl_child* c);
/* Start c with `path` (between begin and end): 0 and its pid, or the errno of its clone, or of its
 * exec or an earlier step in the child (which is then reaped); ENOSYS when it could not have a
 * table of its own. */
int fspl_child_exec(pid_t* pid, const char* path, const fspl_child* c);
/* Empty the slots and let go of the lock. */
void fspl_child_end(void);

#endif
