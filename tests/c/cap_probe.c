/* An adversary in capability mode (warden run --capability-mode): each argument is one attempt
 * to name something outside the descriptors it was given; each prints one line
 * "NAME ok [DATA]" or "NAME errno=N", which the test checks from outside.
 * The directory capability is WARDEN_FDLIST's "d"; "bin" (optional) holds this program. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int named(const char *name) {
    const char *list = getenv("WARDEN_FDLIST");
    size_t n = strlen(name);
    while (list && *list) {
        if (strncmp(list, name, n) == 0 && list[n] == '=')
            return atoi(list + n + 1);
        list = strchr(list, ',');
        if (list) list++;
    }
    return -1;
}

static void result(const char *what, int rc, const char *data) {
    if (rc < 0)
        printf("%s errno=%d\n", what, errno);
    else
        printf("%s ok %s\n", what, data ? data : "");
    fflush(stdout);
}

/* Opens and reads (up to 63 bytes of) a file. */
static void read_at(const char *what, int dir, const char *path) {
    char buf[64] = {0};
    int fd = openat(dir, path, O_RDONLY);
    if (fd < 0) { result(what, -1, NULL); return; }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = 0;
    result(what, (int)n, buf);
}

static void attempt(const char *a);

static void *thread_main(void *arg) { attempt((const char *)arg); return NULL; }

static void attempt(const char *a) {
    int d = named("d");
    struct stat st;
    if (!strcmp(a, "inside")) read_at(a, d, "f");
    else if (!strcmp(a, "subdir")) {
        int s = openat(d, "sub", O_RDONLY | O_DIRECTORY);
        if (s < 0) { result(a, -1, NULL); return; }
        read_at(a, s, "g");
    } else if (!strcmp(a, "subdir-dotdot")) {
        /* .. from a subdirectory opened through the capability, above the capability. */
        int s = openat(d, "sub", O_RDONLY | O_DIRECTORY);
        read_at(a, s, "../../secret");
    } else if (!strcmp(a, "absolute")) read_at(a, AT_FDCWD, "/etc/passwd");
    else if (!strcmp(a, "absolute-at")) read_at(a, d, "/etc/passwd");
    else if (!strcmp(a, "cwd")) read_at(a, AT_FDCWD, "f");
    /* With d = /etc: a file the policy's path-deny carves out of it, and one it does not. */
    else if (!strcmp(a, "etc-shadow")) read_at(a, d, "shadow");
    else if (!strcmp(a, "etc-passwd")) read_at(a, d, "passwd");
    else if (!strcmp(a, "dotdot")) read_at(a, d, "../secret");
    else if (!strcmp(a, "dotdot-inside")) read_at(a, d, "sub/../f");
    else if (!strcmp(a, "symlink-abs")) read_at(a, d, "abs");
    else if (!strcmp(a, "symlink-out")) read_at(a, d, "esc");
    else if (!strcmp(a, "symlink-in")) read_at(a, d, "in");
    else if (!strcmp(a, "proc-fd")) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", d);
        read_at(a, AT_FDCWD, p);
    } else if (!strcmp(a, "stat-abs")) result(a, fstatat(d, "/etc/shadow", &st, 0), NULL);
    else if (!strcmp(a, "stat-dotdot")) result(a, fstatat(d, "../secret", &st, 0), NULL);
    else if (!strcmp(a, "stat-inside")) result(a, fstatat(d, "f", &st, 0), NULL);
    else if (!strcmp(a, "fstat")) result(a, fstat(d, &st), NULL);
    else if (!strcmp(a, "write-ro")) result(a, openat(d, "f", O_RDWR), NULL);
    else if (!strcmp(a, "create-ro")) result(a, openat(d, "new", O_WRONLY | O_CREAT, 0644), NULL);
    else if (!strcmp(a, "create")) {
        int fd = openat(d, "made", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        result(a, fd < 0 ? -1 : (int)write(fd, "made\n", 5), NULL);
    } else if (!strcmp(a, "unlink")) result(a, unlinkat(d, "made", 0), NULL);
    else if (!strcmp(a, "mkdir")) result(a, mkdirat(d, "newdir", 0755), NULL);
    else if (!strcmp(a, "chdir")) result(a, chdir("/"), NULL);
    else if (!strcmp(a, "exec")) {
        char *argv[] = {"sh", "-c", "echo escaped", NULL};
        result(a, execve("/bin/sh", argv, environ), NULL);
    } else if (!strcmp(a, "socket")) result(a, socket(AF_INET, SOCK_STREAM, 0), NULL);
    else if (!strcmp(a, "socket-unix")) result(a, socket(AF_UNIX, SOCK_STREAM, 0), NULL);
    else if (!strcmp(a, "socketpair")) { int sv[2]; result(a, socketpair(AF_UNIX, SOCK_STREAM, 0, sv), NULL); }
    else if (!strcmp(a, "kill-self")) result(a, kill(getpid(), 0), NULL);
    else if (!strcmp(a, "kill-parent")) result(a, kill(getppid(), 0), NULL);
    else if (!strcmp(a, "kill-all")) result(a, kill(-1, 0), NULL);
    else if (!strcmp(a, "pidfd-open")) result(a, (int)syscall(SYS_pidfd_open, getpid(), 0), NULL);
    else if (!strcmp(a, "shmget")) result(a, shmget(IPC_PRIVATE, 4096, 0600), NULL);
    else if (!strncmp(a, "readlink-", 9)) {
        /* readlink-in, readlink-abs (the link's own text), readlink-dotdot, readlink-cwd */
        char buf[64] = {0};
        const char *p = !strcmp(a, "readlink-in") ? "in" : !strcmp(a, "readlink-abs") ? "abs" : "../secret";
        int dir = !strcmp(a, "readlink-cwd") ? AT_FDCWD : d;
        if (dir == AT_FDCWD) p = "in";
        ssize_t n = readlinkat(dir, p, buf, sizeof buf - 1);
        result(a, (int)n, buf);
    } else if (!strcmp(a, "rename-in")) {
        close(openat(d, "r1", O_WRONLY | O_CREAT, 0644));
        result(a, renameat(d, "r1", d, "sub/r2"), NULL);
    } else if (!strcmp(a, "rename-out")) result(a, renameat(d, "f", d, "../stolen"), NULL);
    else if (!strcmp(a, "rename-from-out")) result(a, renameat(d, "../secret", d, "got"), NULL);
    else if (!strcmp(a, "rename-cwd")) result(a, rename("f", "g"), NULL);
    else if (!strcmp(a, "rename-dir-sub")) result(a, renameat(d, "sub", d, "sub-moved"), NULL);
    else if (!strcmp(a, "rename-dir-a")) result(a, renameat(d, "a", d, "a-moved"), NULL);
    else if (!strcmp(a, "link-in")) result(a, linkat(d, "f", d, "f-link", 0), NULL);
    else if (!strcmp(a, "link-out")) result(a, linkat(d, "../secret", d, "got2", 0), NULL);
    else if (!strcmp(a, "link-follow")) result(a, linkat(d, "esc", d, "got3", AT_SYMLINK_FOLLOW), NULL);
    else if (!strcmp(a, "symlinkat-in")) result(a, symlinkat("/etc/passwd", d, "sl"), NULL);
    else if (!strcmp(a, "symlinkat-read")) read_at(a, d, "sl");
    else if (!strcmp(a, "chmod-in")) result(a, fchmodat(d, "f", 0600, 0), NULL);
    else if (!strcmp(a, "chmod-setuid")) result(a, fchmodat(d, "sub/g", 04755, 0), NULL);
    else if (!strcmp(a, "chmod-out")) result(a, fchmodat(d, "../secret", 0600, 0), NULL);
    else if (!strcmp(a, "chmod-abs")) result(a, chmod("/tmp", 0777), NULL);
    /* Owners and nodes beneath the capability (65534: nobody's own ids; 0: root's). */
    else if (!strcmp(a, "chown-in")) result(a, fchownat(d, "f", 65534, 65534, 0), NULL);
    else if (!strcmp(a, "chown-root")) result(a, fchownat(d, "sub/g", 0, 0, 0), NULL);
    else if (!strcmp(a, "chown-out")) result(a, fchownat(d, "../secret", 65534, 65534, 0), NULL);
    else if (!strcmp(a, "chown-esc")) result(a, fchownat(d, "esc", 65534, 65534, 0), NULL);
    else if (!strcmp(a, "chown-link")) {
        /* The symlink itself, not what it names (out of the capability). */
        result(a, fchownat(d, "esc", 65534, 65534, AT_SYMLINK_NOFOLLOW), NULL);
    } else if (!strcmp(a, "chown-cwd")) result(a, fchownat(AT_FDCWD, "secret", 65534, 65534, 0), NULL);
    else if (!strcmp(a, "chown-abs")) result(a, chown("/tmp", 65534, 65534), NULL);
    else if (!strcmp(a, "fchown-in")) {
        int fd = openat(d, "a", O_RDONLY | O_DIRECTORY);
        result(a, fd < 0 ? -1 : fchown(fd, 65534, 65534), NULL);
    } else if (!strcmp(a, "mknod-fifo")) result(a, mknodat(d, "fifo", S_IFIFO | 06644, 0), NULL);
    else if (!strcmp(a, "mknod-file")) result(a, mknodat(d, "node", S_IFREG | 0644, 0), NULL);
    else if (!strcmp(a, "mknod-dev")) result(a, mknodat(d, "null", S_IFCHR | 0666, makedev(1, 3)), NULL);
    else if (!strcmp(a, "mknod-out")) result(a, mknodat(d, "../fifo", S_IFIFO | 0644, 0), NULL);
    else if (!strcmp(a, "mknod-cwd")) result(a, mknodat(AT_FDCWD, "fifo", S_IFIFO | 0644, 0), NULL);
    else if (!strcmp(a, "utimens-in")) {
        struct timespec t[2] = {{1, 0}, {1, 0}};
        result(a, utimensat(d, "f", t, 0), NULL);
    } else if (!strcmp(a, "utimens-out")) {
        struct timespec t[2] = {{1, 0}, {1, 0}};
        result(a, utimensat(d, "../secret", t, 0), NULL);
    } else if (!strcmp(a, "setown-parent")) {
        /* A descriptor whose I/O would send SIGKILL to another process. */
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        result(a, fcntl(sv[0], F_SETOWN, getppid()), NULL);
    } else if (!strcmp(a, "setown-ex")) {
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        struct f_owner_ex o = {F_OWNER_PID, getppid()};
        result(a, fcntl(sv[0], F_SETOWN_EX, &o), NULL);
    } else if (!strcmp(a, "fiosetown")) {
        int sv[2], pid = getppid();
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        result(a, ioctl(sv[0], FIOSETOWN, &pid), NULL);
    } else if (!strcmp(a, "setown-self")) {
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        result(a, fcntl(sv[0], F_SETOWN, getpid()), NULL);
    } else if (!strcmp(a, "fcntl-getfl")) result(a, fcntl(d, F_GETFL), NULL);
    else if (!strcmp(a, "raise")) { signal(SIGUSR1, SIG_IGN); result(a, raise(SIGUSR1), NULL); }
    else if (!strncmp(a, "thread:", 7)) {
        pthread_t t;
        pthread_create(&t, NULL, thread_main, (void *)(a + 7));
        pthread_join(t, NULL);
    } else if (!strncmp(a, "fork:", 5)) {
        pid_t p = fork();
        if (p == 0) { attempt(a + 5); _exit(0); }
        int status;
        waitpid(p, &status, 0);
    } else if (!strncmp(a, "fexecve:", 8)) {
        /* Runs this very program again through its descriptor, attempting a + 8 there. */
        int bin = named("bin");
        int fd = openat(bin, "cap_probe", O_RDONLY);
        if (fd < 0) { result(a, -1, NULL); return; }
        char *argv[] = {"cap_probe", (char *)(a + 8), NULL};
        fexecve(fd, argv, environ);
        result(a, -1, NULL);
    } else if (!strncmp(a, "race:", 5)) {
        /* a/b/../../secret is the capability's own secret unless b is renamed out meanwhile;
         * then it would be the secret beside the capability: count what each walk gives. */
        int n = atoi(a + 5), inside = 0, outside = 0, failed = 0;
        for (int i = 0; i < n; i++) {
            char buf[32] = {0};
            int fd = openat(d, "a/b/../../secret", O_RDONLY);
            if (fd < 0) { failed++; continue; }
            ssize_t r = read(fd, buf, sizeof buf - 1);
            close(fd);
            if (r > 0 && !strncmp(buf, "outside", 7)) outside++;
            else inside++;
        }
        printf("race inside=%d outside=%d failed=%d\n", inside, outside, failed);
    } else if (!strcmp(a, "rights-file")) {
        /* "ro": a file given read only. The kernel refuses every write route (access mode). */
        int ro = named("ro");
        char c = 'x';
        result("ro-read", (int)read(ro, &c, 1), NULL);
        result("ro-write", (int)write(ro, "x", 1), NULL);
        result("ro-pwrite", (int)pwrite(ro, "x", 1, 0), NULL);
        result("ro-ftruncate", ftruncate(ro, 0), NULL);
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
        result("ro-mmap-shared-write", m == MAP_FAILED ? -1 : 0, NULL);
        int wo = named("wo");
        result("wo-read", (int)read(wo, &c, 1), NULL);
        result("wo-write", (int)write(wo, "y", 1), NULL);
        m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, wo, 0);
        result("wo-mmap", m == MAP_FAILED ? -1 : 0, NULL);
        result("ro-fchmod", fchmod(ro, 0777), NULL);
        result("ro-fchown", fchown(ro, 65534, 65534), NULL);
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", ro);
        result("ro-reopen-rw", open(p, O_RDWR), NULL);
        int dup = fcntl(ro, F_DUPFD, 10);
        result("ro-dup-write", (int)write(dup, "x", 1), NULL);
    } else if (!strcmp(a, "rights-routes")) {
        /* Every call that reads or writes, on descriptors without the right: the kernel's
         * access mode refuses each one (EBADF). "ro" has read, "wo" write. */
        int ro = named("ro"), wo = named("wo");
        char buf[8];
        struct iovec iov = {buf, sizeof buf};
        int pr[2];
        pipe(pr);
        int mem = memfd_create("m", 0);
        write(mem, "data", 4);
        result("wo-readv", (int)readv(wo, &iov, 1), NULL);
        result("wo-preadv", (int)preadv(wo, &iov, 1, 0), NULL);
        off_t off = 0;
        result("wo-sendfile", (int)sendfile(pr[1], wo, &off, 4), NULL);
        result("wo-splice", (int)splice(wo, &off, pr[1], NULL, 4, 0), NULL);
        off = 0;
        result("wo-copy-file-range", (int)copy_file_range(wo, &off, mem, NULL, 4, 0), NULL);
        iov.iov_base = "x";
        iov.iov_len = 1;
        result("ro-writev", (int)writev(ro, &iov, 1), NULL);
        result("ro-pwritev", (int)pwritev(ro, &iov, 1, 0), NULL);
        result("ro-fallocate", fallocate(ro, 0, 0, 4096), NULL);
        off = 0;
        result("ro-sendfile", (int)sendfile(ro, mem, &off, 4), NULL);
        write(pr[1], "data", 4);
        result("ro-splice", (int)splice(pr[0], NULL, ro, NULL, 4, 0), NULL);
        off = 0;
        result("ro-copy-file-range", (int)copy_file_range(mem, &off, ro, NULL, 4, 0), NULL);
        /* And the same routes with the rights work. */
        off = 0;
        result("ro-sendfile-out", (int)sendfile(pr[1], ro, &off, 4), NULL);
        off = 0;
        result("wo-sendfile-in", (int)sendfile(wo, mem, &off, 4), NULL);
    } else if (!strcmp(a, "rights-passed")) {
        /* "ro" inherited by a child, and passed to it over SCM_RIGHTS: the rights travel. */
        int ro = named("ro");
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        pid_t p = fork();
        if (p == 0) {
            result("inherit-write", (int)write(ro, "x", 1), NULL);
            result("inherit-fchmod", fchmod(ro, 0777), NULL);
            char c, control[CMSG_SPACE(sizeof(int))];
            struct iovec iov = {&c, 1};
            struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                               .msg_controllen = sizeof control};
            if (recvmsg(sv[1], &m, 0) != 1) { result("scm-recv", -1, NULL); _exit(0); }
            int got;
            memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
            result("scm-read", (int)pread(got, &c, 1, 0), NULL);
            result("scm-write", (int)write(got, "x", 1), NULL);
            result("scm-fchmod", fchmod(got, 0777), NULL);
            int d = dup(got);
            result("scm-dup-write", (int)write(d, "x", 1), NULL);
            _exit(0);
        }
        char c = 'x', control[CMSG_SPACE(sizeof(int))] = {0};
        struct iovec iov = {&c, 1};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                           .msg_controllen = sizeof control};
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &ro, sizeof ro);
        result("scm-send", (int)sendmsg(sv[0], &m, 0), NULL);
        int status;
        waitpid(p, &status, 0);
    } else printf("%s unknown\n", a);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) attempt(argv[i]);
    return 0;
}
