/* capbench: the Capsicum paper's measurements (USENIX Security 2010, section 5) for warden's
 * capability mode, natively and under `warden run --capsicum`. Linked with warden's C library
 * (crates/warden-capsicum/c/capsicum.c) and zlib.
 *
 *   capbench calls DIR N        per-operation costs, N iterations (fork-like ones N/20), one line
 *                               each "NAME NS_PER_OP ERRNO" (ERRNO 0: the calls succeeded):
 *     pread_unlimited   pread of 1 byte on a descriptor with every right
 *     pread_limited     the same descriptor after cap_rights_limit(read): the kernel's access
 *                       mode, so no check is added to the call
 *     openat_policy     openat(DIR, "f") + close outside capability mode (the policy's agent)
 *     fork              fork + _exit + waitpid
 *     pdfork            pdfork + _exit + pdwait + close
 *     sandbox_rpc       pdfork a child that enters capability mode, one 1-byte request and
 *                       answer over a socket pair, close the process descriptor (SIGKILL) and
 *                       pdwait: the paper's "sandbox creation + one RPC + destruction"
 *     enter             cap_enter (once)
 *     openat_beneath    openat(DIR, "f") + close in capability mode (beneath the directory
 *                       capability, its rights checked)
 *   capbench lch WARDEN DIR N   the paper's figure on the real path, natively as the host: N times
 *                               lch_start (capbench serve under `WARDEN run --capability-mode
 *                               --exec DIR`, holding one named descriptor), one 1-byte request
 *                               and answer, lch_stop; prints "lch NS_PER_OP ERRNO"
 *   capbench serve              the sandbox of lch: answers each message with itself until the
 *                               host closes its end
 *   capbench gunzip IN OUT plain|sandbox
 *                               decompresses IN to OUT in-process (plain), or in a pdfork'ed
 *                               child that limits both descriptors and enters capability mode
 *                               first (sandbox, the paper's compartmentalised gzip); prints
 *                               "gunzip NS 0" */
#define _GNU_SOURCE
#include "capsicum.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void line(const char *name, long long ns, long n, int err) {
    printf("%s %.1f %d\n", name, (double)ns / n, err);
    fflush(stdout);
}

static int openat_loop(int dir, long n, long long *ns) {
    int err = 0;
    long long t0 = now_ns();
    for (long i = 0; i < n; i++) {
        int fd = openat(dir, "f", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            err = errno;
        else
            close(fd);
    }
    *ns = now_ns() - t0;
    return err;
}

static int calls(const char *dirpath, long n) {
    int dir = open(dirpath, O_RDONLY | O_DIRECTORY);
    int fd = openat(dir, "f", O_RDWR);
    if (dir < 0 || fd < 0) {
        perror("open");
        return 2;
    }
    char c;
    long long t0, ns;
    int err = 0;
    t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (pread(fd, &c, 1, 0) != 1)
            err = errno;
    line("pread_unlimited", now_ns() - t0, n, err);
    cap_rights_t r;
    cap_rights_limit(fd, cap_rights_init(&r, CAP_READ, CAP_FSTAT)); /* ENOSYS natively */
    t0 = now_ns();
    err = 0;
    for (long i = 0; i < n; i++)
        if (pread(fd, &c, 1, 0) != 1)
            err = errno;
    line("pread_limited", now_ns() - t0, n, err);
    err = openat_loop(dir, n, &ns);
    line("openat_policy", ns, n, err);

    long m = n / 20 > 10 ? n / 20 : 10;
    t0 = now_ns();
    for (long i = 0; i < m; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        waitpid(p, NULL, 0);
    }
    line("fork", now_ns() - t0, m, 0);
    err = 0;
    t0 = now_ns();
    for (long i = 0; i < m; i++) {
        int pd;
        if (pdfork(&pd, 0) == 0)
            _exit(0);
        if (pdwait(pd, NULL, 0) < 0)
            err = errno;
        close(pd);
    }
    line("pdfork", now_ns() - t0, m, err);
    err = 0;
    t0 = now_ns();
    for (long i = 0; i < m; i++) {
        int sv[2], pd;
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
        if (pdfork(&pd, 0) == 0) {
            close(sv[0]);
            cap_enter(); /* ENOSYS natively: the same work, without the mode */
            char q;
            if (read(sv[1], &q, 1) == 1)
                write(sv[1], &q, 1);
            pause();
            _exit(0);
        }
        close(sv[1]);
        char a = 'x';
        if (write(sv[0], &a, 1) != 1 || read(sv[0], &a, 1) != 1)
            err = EIO;
        close(pd); /* the last copy: the kernel kills the child */
        close(sv[0]);
        siginfo_t info;
        waitid(P_ALL, 0, &info, WEXITED | __WALL);
    }
    line("sandbox_rpc", now_ns() - t0, m, err);

    t0 = now_ns();
    err = cap_enter() < 0 ? errno : 0;
    line("enter", now_ns() - t0, 1, err);
    err = openat_loop(dir, n, &ns);
    line("openat_beneath", ns, n, err);
    return 0;
}

static int decompress(int in, int out) {
    gzFile gz = gzdopen(in, "rb");
    char buf[65536];
    int n;
    while (gz && (n = gzread(gz, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            return 1;
    if (gz)
        gzclose(gz);
    return 0;
}

static int gunzip(const char *inpath, const char *outpath, int sandbox) {
    long long t0 = now_ns();
    int in = open(inpath, O_RDONLY);
    int out = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0)
        return 2;
    int rc;
    if (!sandbox) {
        rc = decompress(in, out);
    } else {
        cap_rights_t r;
        cap_rights_limit(in, cap_rights_init(&r, CAP_READ, CAP_SEEK, CAP_FSTAT));
        cap_rights_limit(out, cap_rights_init(&r, CAP_WRITE, CAP_FSTAT));
        int pd;
        if (pdfork(&pd, 0) == 0) {
            if (cap_enter() < 0 && errno != ENOSYS)
                _exit(3);
            _exit(decompress(in, out));
        }
        int st = 0;
        pdwait(pd, &st, 0);
        close(pd);
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 4;
    }
    close(out);
    line("gunzip", now_ns() - t0, 1, rc);
    return rc;
}

static int lch(const char *warden, const char *dir, const char *self, long n) {
    int err = 0;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    cap_rights_t r;
    struct lc_named_fd fds[] = {{"null", null, *cap_rights_init(&r, CAP_READ)}};
    const char *wargs[] = {"--exec", dir, NULL};
    const char *argv[] = {self, "serve", NULL};
    long long t0 = now_ns();
    for (long i = 0; i < n && !err; i++) {
        struct lc_host h;
        if (lch_start(&h, warden, wargs, argv, fds, 1) < 0) {
            err = errno;
            break;
        }
        char q = 'x', a = 0;
        int none = 0;
        if (lch_send(&h, &q, 1, NULL, NULL, 0) < 0 || lch_recv(&h, &a, 1, NULL, &none) != 1 ||
            a != q)
            err = EIO;
        int st;
        lch_stop(&h, &st);
    }
    line("lch", now_ns() - t0, n, err);
    return err ? 1 : 0;
}

static int serve(void) {
    int sock = lcs_get();
    char buf[LC_MAX_MESSAGE];
    unsigned int mode = 0;
    if (sock < 0 || cap_getmode(&mode) < 0 || mode != 1)
        return 3; /* not started by lch_start, or not in capability mode */
    for (;;) {
        int none = 0;
        ssize_t n = lcs_recv(sock, buf, sizeof buf, NULL, &none);
        if (n <= 0)
            return 0;
        if (lcs_send(sock, buf, (size_t)n, NULL, 0) < 0)
            return 1;
    }
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "lch"))
        return lch(argv[2], argv[3], argv[0], atol(argv[4]));
    if (argc == 2 && !strcmp(argv[1], "serve"))
        return serve();
    if (argc == 4 && !strcmp(argv[1], "calls"))
        return calls(argv[2], atol(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "gunzip"))
        return gunzip(argv[2], argv[3], !strcmp(argv[4], "sandbox"));
    fprintf(stderr, "usage: capbench calls DIR N | capbench lch WARDEN DIR N | capbench serve | "
                    "capbench gunzip IN OUT plain|sandbox\n");
    return 2;
}
