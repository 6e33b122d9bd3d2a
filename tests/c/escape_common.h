/* Shared helpers for the adversarial programs tests/c/escape_*.c.
 *
 * Every attempt prints one machine-readable line on stdout:
 *
 *     RESULT attempt=<name> ok=<0|1> errno=<EACCES|...|0> [key=value...]
 *
 * ok=1 means the attempt reached what it tried to reach (an open that returned a descriptor
 * and could read or write through it, a call that returned success). When data was read, the
 * first bytes are printed as data=<text> (spaces and non-printables as '.'), so a leaked
 * secret shows up in the output whatever the program believes. Each program ends with a
 * "DONE" line, so a test can tell a finished run from one killed half way.
 */
#ifndef ESCAPE_COMMON_H
#define ESCAPE_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static __attribute__((unused)) const char *ename(int e) {
    static char buf[32];
    if (e == 0)
        return "0";
    const char *n = strerrorname_np(e);
    if (n)
        return n;
    snprintf(buf, sizeof buf, "E%d", e);
    return buf;
}

static __attribute__((unused)) void setup_output(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* RESULT line without extra fields. */
static __attribute__((unused)) void result(const char *attempt, int ok, int err) {
    printf("RESULT attempt=%s ok=%d errno=%s\n", attempt, ok, ok ? "0" : ename(err));
    fflush(stdout);
}

/* RESULT line with extra "key=value" text (printf-style). */
static __attribute__((unused)) void resultf(const char *attempt, int ok, int err, const char *fmt, ...) {
    char extra[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof extra, fmt, ap);
    va_end(ap);
    printf("RESULT attempt=%s ok=%d errno=%s %s\n", attempt, ok, ok ? "0" : ename(err), extra);
    fflush(stdout);
}

/* A syscall-style return value: ok when >= 0. */
static __attribute__((unused)) void result_rc(const char *attempt, long rc) {
    int e = errno;
    result(attempt, rc >= 0, rc >= 0 ? 0 : e);
}

/* Printable, space-free copy of the first bytes of buf. */
static __attribute__((unused)) void sanitize(const char *in, ssize_t n, char *out, size_t cap) {
    size_t j = 0;
    for (ssize_t i = 0; i < n && j + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        out[j++] = (c > 32 && c < 127) ? (char)c : '.';
    }
    out[j] = 0;
}

/* Reports on a descriptor an attempt obtained: reads up to 64 bytes from it. */
static __attribute__((unused)) void report_fd_read(const char *attempt, int fd) {
    char buf[65], clean[80];
    ssize_t n = read(fd, buf, 64);
    int e = errno;
    if (n < 0) {
        /* A descriptor was handed out, even if reading failed (a directory, say). */
        resultf(attempt, 1, 0, "read_errno=%s", ename(e));
        return;
    }
    sanitize(buf, n, clean, sizeof clean);
    resultf(attempt, 1, 0, "data=%s", clean);
}

/* openat(dirfd, path, O_RDONLY) and read: ok=1 when a descriptor came back. */
static __attribute__((unused)) void try_open_read(const char *attempt, int dirfd, const char *path) {
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        result(attempt, 0, errno);
        return;
    }
    report_fd_read(attempt, fd);
    close(fd);
}

/* openat(path, O_WRONLY) and close without writing: ok=1 when the open succeeded. For host
 * knobs (/proc/sys, /proc/sysrq-trigger) that the native controls also reach as root: opening
 * them for writing is the boundary under test, and writing would change the host. */
static __attribute__((unused)) void try_open_write_only(const char *attempt, const char *path) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        result(attempt, 0, errno);
        return;
    }
    close(fd);
    result(attempt, 1, 0);
}

/* openat(dirfd, path, flags) for writing and write a marker: ok=1 when the write landed. */
static __attribute__((unused)) void try_open_write(const char *attempt, int dirfd, const char *path, int flags) {
    int fd = openat(dirfd, path, flags | O_CLOEXEC, 0644);
    if (fd < 0) {
        result(attempt, 0, errno);
        return;
    }
    ssize_t n = write(fd, "PWNED\n", 6);
    int e = errno;
    close(fd);
    if (n < 0)
        resultf(attempt, 1, 0, "opened_but_write_errno=%s", ename(e));
    else
        result(attempt, 1, 0);
}

static __attribute__((unused)) double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* path = a + "/" + b, in a static-free caller buffer. */
static __attribute__((unused)) char *join(char *out, size_t cap, const char *a, const char *b) {
    snprintf(out, cap, "%s/%s", a, b);
    return out;
}

/* Whether this process runs under a seccomp filter (as it does under warden). Attempts that
 * would harm the host if they succeeded natively (mounting, creating device nodes) are only
 * made when this is true. */
static __attribute__((unused)) int under_seccomp_filter(void) {
    /* PR_GET_SECCOMP: 0 natively, 2 under a filter (or refused by the filter itself). Not
     * /proc/self/status, which the fast path's Landlock refuses to open. */
    return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0;
}

static __attribute__((unused)) void done(void) {
    printf("DONE\n");
    fflush(stdout);
}

#endif
