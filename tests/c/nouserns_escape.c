/* What a program tries when warden runs it without namespaces (tests/nouserns.rs): reach a
 * process, a System V object, an abstract socket or the network outside the sandbox. Each
 * attempt prints one line:
 *
 *     RESULT attempt=<name> ok=<0|1> errno=<E...> [detail]
 *
 * ok=1: the call succeeded (the test decides whether that is an escape; for the controls it is
 * the point). The last line is DONE.
 *
 *   nouserns_escape signals PID...   kill/tkill/tgkill/rt_sigqueueinfo/pidfd_send_signal of
 *                                    SIGUSR1 to each PID; kill of group 0 and -1; ptrace attach
 *   nouserns_escape proc PATH...     open and read each path
 *   nouserns_escape ipc              shmget/msgget/semget IPC_PRIVATE and key 0x5741524e, mq_open
 *   nouserns_escape abstract NAME    connect to the abstract unix socket NAME
 *   nouserns_escape tcp PORT         connect to 127.0.0.1:PORT
 *   nouserns_escape unshare          unshare/clone with each namespace flag, setns, chroot
 *   nouserns_escape ids              uid, gid and capabilities, and setuid(0)
 *   nouserns_escape child            a child of its own: signalled, and reaped
 *   nouserns_escape reuse DIR        a child's pid, once the child is gone and DIR/go appears
 *                                    (the test gave the pid to a process outside), signalled */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

static const char *ename(int e) {
    static char buf[32];
    if (e == 0)
        return "0";
    const char *n = strerrorname_np(e);
    if (n)
        return n;
    snprintf(buf, sizeof buf, "E%d", e);
    return buf;
}

static void result(const char *name, long rc, const char *detail) {
    int e = rc < 0 ? errno : 0;
    printf("RESULT attempt=%s ok=%d errno=%s %s\n", name, rc >= 0, ename(e), detail ? detail : "");
    fflush(stdout);
}

static void signals(int pid) {
    char name[64];
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGUSR1;
    info.si_code = SI_QUEUE;
    snprintf(name, sizeof name, "kill-%d", pid);
    result(name, kill(pid, SIGUSR1), NULL);
    snprintf(name, sizeof name, "tkill-%d", pid);
    result(name, syscall(SYS_tkill, pid, SIGUSR1), NULL);
    snprintf(name, sizeof name, "tgkill-%d", pid);
    result(name, syscall(SYS_tgkill, pid, pid, SIGUSR1), NULL);
    snprintf(name, sizeof name, "sigqueueinfo-%d", pid);
    result(name, syscall(SYS_rt_sigqueueinfo, pid, SIGUSR1, &info), NULL);
    snprintf(name, sizeof name, "tgsigqueueinfo-%d", pid);
    result(name, syscall(SYS_rt_tgsigqueueinfo, pid, pid, SIGUSR1, &info), NULL);
    snprintf(name, sizeof name, "pidfd-%d", pid);
    long fd = syscall(SYS_pidfd_open, pid, 0);
    result(name, fd, NULL);
    if (fd >= 0) {
        snprintf(name, sizeof name, "pidfd-signal-%d", pid);
        result(name, syscall(SYS_pidfd_send_signal, (int)fd, SIGUSR1, NULL, 0), NULL);
        close((int)fd);
    }
    snprintf(name, sizeof name, "ptrace-%d", pid);
    result(name, ptrace(PTRACE_SEIZE, pid, 0, 0), NULL);
    snprintf(name, sizeof name, "prlimit-%d", pid);
    struct rlimit rl = {0, 0};
    result(name, prlimit(pid, RLIMIT_CORE, &rl, NULL), NULL);
    snprintf(name, sizeof name, "setpriority-%d", pid);
    result(name, setpriority(PRIO_PROCESS, pid, 19), NULL);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    const char *what = argv[1];
    if (strcmp(what, "signals") == 0) {
        signal(SIGUSR1, SIG_IGN);
        for (int i = 2; i < argc; i++)
            signals(atoi(argv[i]));
        result("kill-group-0", kill(0, SIGUSR1), NULL);
        result("kill-minus-1", kill(-1, SIGUSR1), NULL);
        result("kill-group-of-parent", kill(-getpgid(getppid()), SIGUSR1), NULL);
        result("setpriority-user", setpriority(PRIO_USER, getuid(), 19), NULL);
        result("setpriority-pgrp", setpriority(PRIO_PGRP, 0, 19), NULL);
    } else if (strcmp(what, "proc") == 0) {
        for (int i = 2; i < argc; i++) {
            char buf[64] = {0}, detail[160];
            int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
            long rc = fd;
            if (fd >= 0) {
                rc = read(fd, buf, sizeof buf - 1);
                close(fd);
            }
            for (int j = 0; j < (int)sizeof buf - 1; j++)
                if (buf[j] && (buf[j] < 33 || buf[j] > 126))
                    buf[j] = '.';
            snprintf(detail, sizeof detail, "path=%s data=%s", argv[i], buf);
            result("proc", rc, detail);
        }
    } else if (strcmp(what, "ipc") == 0) {
        result("shmget-private", shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0666), NULL);
        result("shmget-key", shmget(0x5741524e, 0, 0), NULL);
        result("shmat-id0", (long)(shmat(0, NULL, SHM_RDONLY) == (void *)-1 ? -1 : 0), NULL);
        result("msgget-private", msgget(IPC_PRIVATE, IPC_CREAT | 0666), NULL);
        result("msgget-key", msgget(0x5741524e, 0), NULL);
        result("semget-private", semget(IPC_PRIVATE, 1, IPC_CREAT | 0666), NULL);
        result("mq_open", mq_open("/warden-nouserns", O_RDWR | O_CREAT, 0666, NULL), NULL);
    } else if (strcmp(what, "abstract") == 0 && argc > 2) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        size_t n = strlen(argv[2]);
        memcpy(a.sun_path + 1, argv[2], n);
        result("abstract-connect", connect(s, (struct sockaddr *)&a, sizeof(sa_family_t) + 1 + n), NULL);
        int b = socket(AF_UNIX, SOCK_STREAM, 0);
        result("abstract-bind", bind(b, (struct sockaddr *)&a, sizeof(sa_family_t) + 1 + n), NULL);
        int d = socket(AF_UNIX, SOCK_DGRAM, 0);
        result("unix-dgram", d, NULL);
    } else if (strcmp(what, "tcp") == 0 && argc > 2) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        result("tcp-socket", s, NULL);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (s >= 0)
            result("tcp-connect", connect(s, (struct sockaddr *)&a, sizeof a), NULL);
        result("udp-socket", socket(AF_INET, SOCK_DGRAM, 0), NULL);
        result("inet6-socket", socket(AF_INET6, SOCK_STREAM, 0), NULL);
        result("packet-socket", socket(AF_PACKET, SOCK_RAW, 0), NULL);
    } else if (strcmp(what, "unshare") == 0) {
        static const struct { const char *n; int f; } flags[] = {
            {"user", CLONE_NEWUSER}, {"mount", CLONE_NEWNS}, {"pid", CLONE_NEWPID},
            {"net", CLONE_NEWNET},   {"ipc", CLONE_NEWIPC},  {"uts", CLONE_NEWUTS},
            {"cgroup", CLONE_NEWCGROUP},
        };
        for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; i++) {
            char name[32];
            snprintf(name, sizeof name, "unshare-%s", flags[i].n);
            result(name, unshare(flags[i].f), NULL);
            snprintf(name, sizeof name, "clone-%s", flags[i].n);
            long pid = syscall(SYS_clone, flags[i].f | SIGCHLD, 0, 0, 0, 0);
            if (pid == 0)
                _exit(0);
            if (pid > 0)
                waitpid((pid_t)pid, NULL, 0);
            result(name, pid, NULL);
        }
        result("clone3", syscall(SYS_clone3, NULL, 0), NULL);
        int fd = open("/proc/1/ns/mnt", O_RDONLY);
        result("setns", setns(fd, 0), NULL);
        result("chroot", chroot("/tmp"), NULL);
        result("sethostname", sethostname("x", 1), NULL);
        result("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL), NULL);
        result("keyctl", syscall(SYS_add_key, "user", "k", "v", 1, -2), NULL);
    } else if (strcmp(what, "ids") == 0) {
        char line[256], detail[256] = "";
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "CapPrm:", 7) ||
                !strncmp(line, "CapBnd:", 7) || !strncmp(line, "NoNewPrivs:", 11)) {
                line[strcspn(line, "\n")] = 0;
                for (char *c = line; *c; c++)
                    if (*c == '\t' || *c == ' ')
                        *c = '_';
                strncat(detail, line, sizeof detail - strlen(detail) - 2);
                strcat(detail, " ");
            }
        }
        printf("IDS uid=%d euid=%d gid=%d %s\n", getuid(), geteuid(), getgid(), detail);
        result("setuid-0", setuid(0), NULL);
    } else if (strcmp(what, "child") == 0) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        usleep(50000);
        result("kill-child", kill(c, SIGTERM), NULL);
        int status = 0;
        waitpid(c, &status, 0);
        result("child-terminated", WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : -1,
               NULL);
        c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        usleep(50000);
        long fd = syscall(SYS_pidfd_open, c, 0);
        result("pidfd-child", fd, NULL);
        result("pidfd-signal-child", syscall(SYS_pidfd_send_signal, (int)fd, SIGKILL, NULL, 0), NULL);
        waitpid(c, &status, 0);
        result("child-killed", WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -1, NULL);
    } else if (strcmp(what, "reuse") == 0 && argc > 2) {
        pid_t c = fork();
        if (c == 0)
            _exit(0);
        waitpid(c, NULL, 0);
        printf("PID %d\n", c);
        fflush(stdout);
        char go[512];
        snprintf(go, sizeof go, "%s/go", argv[2]);
        for (int i = 0; i < 3000 && access(go, F_OK) != 0; i++)
            usleep(10000);
        signals(c);
    } else {
        return 2;
    }
    printf("DONE\n");
    return 0;
}
