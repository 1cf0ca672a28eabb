/*
 * The commands' own floor for bench/cost.mjs: the same commands a queue run starts, one after the
 * other, with no queue logic at all (no decoding, no options, no JavaScript). Compiled by the bench
 * with `cc -O2` into its temp dir.
 *
 *   floor-loop cat-loop LIST SHELL_COMMAND
 *     LIST: a file of job file paths, one a line. For each: open it, read its header as the
 *     reference does (the 30-byte prefix, then the metadata whose length is at bytes 14..21, big
 *     endian) so that the command's stdin is the payload alone, posix_spawn `/bin/sh -c
 *     SHELL_COMMAND` with that descriptor as stdin, close it, waitpid. Mirrors the commands of the
 *     reference's cron loop (one `fspl queue-process` per queue) and of ours over the same queues.
 *
 *   floor-loop true-loop QUEUE
 *     A queue of jobs run with `/bin/true`, as `queue-process -q QUEUE /bin/true` runs it, with the
 *     system calls a run records (bench/floors.mjs `nop`, src/process/finish.ts) made per job:
 *     the lock (nextseq.lock opened, flock), the queue directory held open; one scan of jobs/
 *     (each file opened, its header read, closed); then per job: the file opened again and its
 *     header read, posix_spawn of /bin/true with it as stdin, close, waitpid; the note in the lock
 *     file (pwrite of 1024 bytes, fdatasync); nextseq.temp created, written, fsynced, closed,
 *     renamed over nextseq; the queue directory fsynced; the job unlinked; jobs/ fsynced (ours
 *     fsyncs jobs/ once every 16 deletions: here once per job, a little more than ours does).
 *     At the end the lock file is emptied (ftruncate, fdatasync). Jobs are taken in directory
 *     order (the cost is the same in any order); nextseq ends at the number of jobs + 1.
 *
 * Exit status 0, or 1 with a message on stderr at the first failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void die(const char *what, const char *arg) {
    fprintf(stderr, "floor-loop: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
    exit(1);
}

/* Read the packet header as the reference does: the prefix, then the metadata. */
static void read_header(int fd, const char *name) {
    unsigned char pre[30];
    static unsigned char meta[1 << 16];
    if (read(fd, pre, sizeof pre) != (ssize_t)sizeof pre) die("short header", name);
    uint64_t len = 0;
    for (int i = 14; i < 22; i++) len = (len << 8) | pre[i];
    if (len > sizeof meta) {
        errno = EFBIG;
        die("metadata too long", name);
    }
    if (read(fd, meta, len) != (ssize_t)len) die("short metadata", name);
}

/* Start argv with fd as its stdin, wait for it; exit status 0 expected. */
static void run(char *const argv[], int fd, const char *name) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 0);
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        errno = err;
        die("posix_spawn", argv[0]);
    }
    close(fd);
    int status;
    if (waitpid(pid, &status, 0) < 0) die("waitpid", name);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        errno = 0;
        die("command failed for", name);
    }
}

static void fsync_fd(int fd, const char *name) {
    if (fsync(fd) < 0) die("fsync", name);
}

static int cat_loop(const char *list, const char *command) {
    FILE *f = fopen(list, "r");
    if (!f) die("open", list);
    char line[4096];
    char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!*line) continue;
        int fd = open(line, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open", line);
        read_header(fd, line);
        run(argv, fd, line);
    }
    fclose(f);
    return 0;
}

static int true_loop(const char *q) {
    char path[8192], temp[4096], seq[4096], jobsdir[4096];
    snprintf(seq, sizeof seq, "%s/nextseq", q);
    snprintf(temp, sizeof temp, "%s/nextseq.temp", q);
    snprintf(jobsdir, sizeof jobsdir, "%s/jobs", q);
    snprintf(path, sizeof path, "%s/nextseq.lock", q);
    int lock = open(path, O_RDWR | O_CLOEXEC);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) die("lock", path);
    int qfd = open(q, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (qfd < 0) die("open", q);
    int jfd = open(jobsdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (jfd < 0) die("open", jobsdir);

    /* The scan: every job's header read once. */
    DIR *d = opendir(jobsdir);
    if (!d) die("opendir", jobsdir);
    size_t n = 0, cap = 1024;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "fspl-", 5) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", jobsdir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open", path);
        read_header(fd, path);
        close(fd);
        if (n == cap) names = realloc(names, (cap *= 2) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);

    char note[1024];
    char *argv[] = {"/bin/true", NULL};
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", jobsdir, names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open", path);
        read_header(fd, path);
        run(argv, fd, path);
        /* 1. the note, durable before the rest */
        memset(note, ' ', sizeof note);
        int len = snprintf(note, sizeof note, "S %zu %s\n", i + 1, names[i]);
        note[len] = ' ';
        if (pwrite(lock, note, sizeof note, 0) != (ssize_t)sizeof note || fdatasync(lock) < 0) die("note", seq);
        /* 2. nextseq past it */
        int t = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (t < 0) die("open", temp);
        char buf[32];
        int bl = snprintf(buf, sizeof buf, "%zu\n", i + 2);
        if (write(t, buf, bl) != bl) die("write", temp);
        fsync_fd(t, temp);
        close(t);
        if (rename(temp, seq) < 0) die("rename", temp);
        fsync_fd(qfd, q);
        /* 3. the job deleted, jobs/ fsynced */
        if (unlink(path) < 0) die("unlink", path);
        fsync_fd(jfd, jobsdir);
        free(names[i]);
    }
    free(names);
    if (ftruncate(lock, 0) < 0 || fdatasync(lock) < 0) die("settle", seq);
    close(jfd);
    close(qfd);
    close(lock);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "cat-loop") == 0) return cat_loop(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "true-loop") == 0) return true_loop(argv[2]);
    fprintf(stderr, "usage: floor-loop cat-loop LIST SHELL_COMMAND | floor-loop true-loop QUEUE\n");
    return 2;
}
