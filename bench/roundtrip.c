/* roundtrip: the kernel's floor for one user-notification round trip on this machine, with no
 * sandbox around it: a client makes notified openat calls in a loop and agent threads answer
 * each at once (ENOENT, or /dev/null injected with ADDFD|SEND), so what is measured is the
 * interposition alone: wake-ups, context switches, fd injection. Compare with the delegated rows
 * of `bench/run.sh --only micro` to see what the agent's own work adds.
 *
 * Usage: [PROC=1] roundtrip WORKERS SYNC FD SPIN_US PIN
 *   WORKERS  agent threads waiting in SECCOMP_IOCTL_NOTIF_RECV
 *   SYNC     1: SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener
 *   FD       1: answer with ADDFD|SEND (a delegated open), 0: with an errno (a denied call)
 *   SPIN_US  the first worker polls the listener this long before each RECV (0: never)
 *   PIN      none | same (client and agent on CPU 0) | split (client on 0, agent on 1)
 *   PROC=1   the client is another process (as under warden), not a thread of the agent's
 * Prints the best of 5 loops of 20,000 calls, in us per call.
 * Build: cc -O2 -o roundtrip bench/roundtrip.c -lpthread */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1UL
#endif

static int listener = -1, use_fd, spin_us, nworkers, sync_wake;
static char *pin;
static int devnull;
static volatile int ready;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static void pin_to(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static void *worker(void *arg) {
    long idx = (long)arg;
    if (!strcmp(pin, "same")) pin_to(0);
    if (!strcmp(pin, "split")) pin_to(1);
    while (!ready) usleep(100);
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    for (;;) {
        if (spin_us > 0 && idx == 0) {
            double until = now() + spin_us / 1e6;
            struct pollfd p = {listener, POLLIN, 0};
            while (now() < until && poll(&p, 1, 0) == 0) {}
        }
        memset(&req, 0, sizeof req);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR || errno == ENOENT) continue;
            return NULL;
        }
        if (use_fd) {
            struct seccomp_notif_addfd a = {.id = req.id, .flags = SECCOMP_ADDFD_FLAG_SEND,
                                            .srcfd = devnull, .newfd_flags = O_CLOEXEC};
            ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
        } else {
            memset(&resp, 0, sizeof resp);
            resp.id = req.id;
            resp.val = 0;
            resp.error = -ENOENT;
            ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        }
    }
}

/* The client's side: notify openat, allow the rest. Returns the listener (this thread only, no
 * TSYNC: agent threads started before stay unfiltered). */
static int install_filter(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (l < 0) {
        perror("seccomp");
        exit(1);
    }
    return l;
}

static void set_sync(void) {
    if (sync_wake && ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) < 0)
        perror("set_flags");
}

static void start_workers(void) {
    pthread_t t;
    for (long i = 0; i < nworkers; i++) pthread_create(&t, NULL, worker, (void *)i);
}

static void client_loop(int n) {
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (int i = 0; i < n; i++) {
            int fd = syscall(SYS_openat, AT_FDCWD, "/x", O_RDONLY);
            if (fd >= 0) close(fd);
        }
        double per = (now() - t0) / n * 1e6;
        if (per < best) best = per;
    }
    printf("workers=%d sync=%d fd=%d spin=%d pin=%s proc=%s: %.2f us/call\n", nworkers, sync_wake, use_fd,
           spin_us, pin, getenv("PROC") ? "yes" : "no", best);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: [PROC=1] roundtrip WORKERS SYNC FD SPIN_US none|same|split\n");
        return 2;
    }
    nworkers = atoi(argv[1]);
    sync_wake = atoi(argv[2]);
    use_fd = atoi(argv[3]);
    spin_us = atoi(argv[4]);
    pin = argv[5];
    int pinned = !strcmp(pin, "same") || !strcmp(pin, "split");
    int n = 20000;
    devnull = open("/dev/null", O_RDONLY);
    if (getenv("PROC")) {
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        pid_t pid = fork();
        if (pid == 0) {
            if (pinned) pin_to(0);
            int l = install_filter();
            write(sv[1], &l, sizeof l);
            char c;
            read(sv[1], &c, 1);
            client_loop(n);
            _exit(0);
        }
        int l;
        read(sv[0], &l, sizeof l);
        int pfd = syscall(SYS_pidfd_open, pid, 0);
        listener = syscall(SYS_pidfd_getfd, pfd, l, 0);
        set_sync();
        start_workers();
        ready = 1;
        write(sv[0], "g", 1);
        waitpid(pid, NULL, 0);
        return 0;
    }
    start_workers();
    if (pinned) pin_to(0);
    listener = install_filter();
    set_sync();
    ready = 1;
    usleep(20000);
    client_loop(n);
    return 0;
}
