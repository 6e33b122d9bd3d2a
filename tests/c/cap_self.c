/* A decompressor that compartmentalises itself, as the Capsicum paper's gzip: it opens its
 * input and output by path, limits them (input: read, seek, fstat; output: write, fstat),
 * enters capability mode with cap_enter from warden's C library (crates/warden-capsicum/c), and
 * only then lets zlib parse the untrusted input. Run by warden run --capsicum.
 *
 *   cap_self gunzip IN.gz OUT CANARY   decompress, then (as an exploited decompressor would)
 *                                      try everything capability mode forbids; one line per
 *                                      attempt: "NAME ok ..." or "NAME errno=N"
 *   cap_self split CANARY              a child enters capability mode, its parent does not:
 *                                      the mode is the process's
 *   cap_self hold FILE                 FILE on descriptor 7 limited to read,fstat, a child
 *                                      forked outside capability mode, the process in it;
 *                                      prints "ready" and waits (for warden inspect)
 *   cap_self trace                     under ptrace-allow inside: a child in capability mode
 *                                      cannot trace its parent; the parent, outside, can trace
 *                                      the child
 *   cap_self ownfilter                 a seccomp filter of the program's own is not capability
 *                                      mode; cap_enter afterwards is
 *   cap_self widen SECRET              entering gains nothing: SECRET (absolute, outside the
 *                                      policy) is opened through a descriptor of "/" before
 *                                      and after cap_enter
 *
 * Built with crates/warden-capsicum/c/capsicum.c and -lz -lpthread. */
#define _GNU_SOURCE
#include "capsicum.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static void say(const char *name, long rc) {
    if (rc < 0)
        printf("%s errno=%d\n", name, errno);
    else
        printf("%s ok %ld\n", name, rc);
    fflush(stdout);
}

static int mode(void) {
    unsigned int m = 9;
    if (cap_getmode(&m) < 0)
        return -errno;
    return (int)m;
}

static const char *canary;

/* Every way out an exploited decompressor would try. */
static void attempts(const char *prefix, int in, int out) {
    char name[64], buf[16];
#define TRY(what, expr) (snprintf(name, sizeof name, "%s%s", prefix, what), say(name, (expr)))
    TRY("open-abs", open("/etc/passwd", O_RDONLY));
    TRY("open-canary", open(canary, O_WRONLY | O_TRUNC));
    TRY("open-cwd", openat(AT_FDCWD, "x", O_RDONLY));
    TRY("unlink-canary", unlink(canary));
    TRY("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
    TRY("socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
    TRY("kill-parent", kill(getppid(), 0));
    TRY("write-in", write(in, "x", 1));
    TRY("pwrite-in", pwrite(in, "x", 1, 0));
    TRY("ftruncate-in", ftruncate(in, 0));
    TRY("read-out", read(out, buf, 1));
    TRY("pread-in", pread(in, buf, 1, 0));
    TRY("exec", execl("/bin/true", "true", (char *)NULL));
    cap_rights_t r;
    cap_rights_init(&r, CAP_READ, CAP_WRITE, CAP_SEEK);
    TRY("widen-in", cap_rights_limit(in, &r));
    /* Forged requests straight to the agent: widening, and nonsense. */
    TRY("forged-widen", syscall(SYS_socket, WARDEN_CAPSICUM_FAMILY + WARDEN_CAPSICUM_LIMIT, in,
                                (unsigned)CAP_ALL_KNOWN));
    TRY("forged-nonsense", syscall(SYS_socket, WARDEN_CAPSICUM_FAMILY + 77, 0, 0));
    TRY("forged-bits", syscall(SYS_socket, WARDEN_CAPSICUM_FAMILY + WARDEN_CAPSICUM_LIMIT, in,
                               1u << 30));
    TRY("mode", mode());
#undef TRY
}

struct targs {
    int in, out;
};

static void *thread_main(void *p) {
    struct targs *t = p;
    attempts("thread-", t->in, t->out);
    return NULL;
}

/* A thread started before cap_enter, released after it: TSYNC put it in the mode too. */
static int early_pipe[2];
static struct targs early_args;

static void *early_main(void *p) {
    (void)p;
    char c;
    if (read(early_pipe[0], &c, 1) == 1)
        attempts("early-", early_args.in, early_args.out);
    return NULL;
}

static int gunzip(const char *inpath, const char *outpath) {
    pthread_t early;
    pipe(early_pipe);
    pthread_create(&early, NULL, early_main, NULL);
    say("mode-before", mode());
    /* Opened with more access than needed on purpose: the limits below take it away. */
    int in = open(inpath, O_RDWR);
    int out = open(outpath, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) {
        perror("open");
        return 2;
    }
    cap_rights_t r;
    cap_rights_init(&r, CAP_READ, CAP_SEEK, CAP_FSTAT);
    say("limit-in", cap_rights_limit(in, &r));
    cap_rights_init(&r, CAP_WRITE, CAP_FSTAT);
    say("limit-out", cap_rights_limit(out, &r));
    cap_rights_t got = {0};
    say("get-in", cap_rights_get(in, &got) < 0 ? -1 : (long)got.cr_rights);
    say("get-out", cap_rights_get(out, &got) < 0 ? -1 : (long)got.cr_rights);
    say("enter", cap_enter());
    say("mode-after", mode());

    /* The untrusted part. */
    gzFile gz = gzdopen(dup(in), "rb");
    char buf[65536];
    int n, exploited = 0;
    long total = 0;
    while (gz && (n = gzread(gz, buf, sizeof buf)) > 0) {
        if (total == 0 && n >= 7 && memcmp(buf, "EXPLOIT", 7) == 0)
            exploited = 1;
        if (write(out, buf, n) != n) {
            perror("write");
            return 2;
        }
        total += n;
    }
    if (gz)
        gzclose(gz);
    say("decompressed", total);
    if (!exploited)
        return 0;

    attempts("", in, out);
    early_args.in = in;
    early_args.out = out;
    write(early_pipe[1], "x", 1);
    pthread_join(early, NULL);
    struct targs t = {in, out};
    pthread_t th;
    pthread_create(&th, NULL, thread_main, &t);
    pthread_join(th, NULL);
    pid_t child = fork();
    if (child == 0) {
        attempts("child-", in, out);
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    say("child-exit", WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
    return 0;
}

static int split(void) {
    int p[2];
    if (pipe(p) < 0)
        return 2;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        say("child-enter", cap_enter());
        say("child-mode", mode());
        say("child-open-abs", open("/etc/passwd", O_RDONLY));
        write(p[1], "x", 1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        return 2;
    /* The parent never entered: the mode is the child's, not the sandbox's. */
    say("parent-mode", mode());
    say("parent-open-abs", open("/etc/passwd", O_RDONLY));
    say("parent-open-canary", open(canary, O_RDONLY));
    say("parent-socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
    say("parent-kill-child", kill(child, SIGKILL));
    int st;
    waitpid(child, &st, 0);
    say("child-killed", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    return 0;
}

/* Capability mode only takes away: a walk beneath a directory capability is still held to
 * the policy. */
static int widen(const char *secret) {
    int root = open("/", O_RDONLY | O_DIRECTORY);
    say("root", root);
    say("before-secret", openat(root, secret + 1, O_RDONLY));
    say("before-shadow", openat(root, "etc/shadow", O_RDONLY));
    say("before-passwd", openat(root, "etc/passwd", O_RDONLY));
    say("before-create", openat(root, "etc/warden-made", O_WRONLY | O_CREAT, 0644));
    cap_rights_t r;
    say("limit-none", cap_rights_limit(0, cap_rights_init(&r, CAP_FSTAT)));
    /* A directory may be limited to lookups: its read-only open stays. (Another directory than
     * "/": rights are the object's, and "/" is used below.) */
    int dir = open("/usr", O_RDONLY | O_DIRECTORY);
    say("limit-dir-lookup", cap_rights_limit(dir, cap_rights_init(&r, CAP_LOOKUP, CAP_FSTAT)));
    cap_rights_t got = {0};
    say("get-dir", cap_rights_get(dir, &got) < 0 ? -1 : (long)got.cr_rights);
    say("enter", cap_enter());
    say("after-secret", openat(root, secret + 1, O_RDONLY));
    say("after-shadow", openat(root, "etc/shadow", O_RDONLY));
    say("after-passwd", openat(root, "etc/passwd", O_RDONLY));
    say("after-create", openat(root, "etc/warden-made", O_WRONLY | O_CREAT, 0644));
    say("after-trunc", openat(root, secret + 1, O_WRONLY | O_TRUNC));
    say("after-mkdir", mkdirat(root, "etc/warden-dir", 0755));
    say("after-unlink", unlinkat(root, secret + 1, 0));
    struct stat st;
    say("after-stat-secret", fstatat(root, secret + 1, &st, 0));
    return 0;
}

static int ownfilter(void) {
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {.len = 1, .filter = &allow};
    say("own-filter", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
    say("own-mode", mode());
    say("own-open-abs", open("/etc/passwd", O_RDONLY));
    say("enter", cap_enter());
    say("mode", mode());
    say("open-abs", open("/etc/passwd", O_RDONLY));
    return 0;
}

static int traced_value = 42;

static int trace(void) {
    int p[2];
    if (pipe(p) < 0)
        return 2;
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        say("child-enter", cap_enter());
        int v = 0;
        struct iovec local = {&v, sizeof v}, remote = {&traced_value, sizeof v};
        say("child-vm-read-parent", process_vm_readv(parent, &local, 1, &remote, 1, 0));
        say("child-ptrace-parent", ptrace(PTRACE_ATTACH, parent, NULL, NULL));
        write(p[1], "x", 1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        return 2;
    int v = 0;
    struct iovec local = {&v, sizeof v}, remote = {&traced_value, sizeof v};
    long n = process_vm_readv(child, &local, 1, &remote, 1, 0);
    say("parent-vm-read-child", n < 0 ? n : v);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}

static int hold(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0 || dup2(fd, 7) < 0)
        return 2;
    cap_rights_t r;
    if (cap_rights_limit(7, cap_rights_init(&r, CAP_READ, CAP_FSTAT)) < 0)
        return 3;
    if (fork() == 0) {
        for (;;)
            pause();
    }
    if (cap_enter() < 0)
        return 4;
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 5 && strcmp(argv[1], "gunzip") == 0) {
        canary = argv[4];
        return gunzip(argv[2], argv[3]);
    }
    if (argc == 2 && strcmp(argv[1], "ownfilter") == 0)
        return ownfilter();
    if (argc == 2 && strcmp(argv[1], "trace") == 0)
        return trace();
    if (argc == 3 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2]);
    if (argc == 3 && strcmp(argv[1], "widen") == 0)
        return widen(argv[2]);
    if (argc == 3 && strcmp(argv[1], "split") == 0) {
        canary = argv[2];
        return split();
    }
    fprintf(stderr, "usage: cap_self gunzip IN.gz OUT CANARY | cap_self split CANARY\n");
    return 2;
}
