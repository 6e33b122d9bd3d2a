/* Descriptors passed over unix sockets (tests/network.rs). cwd: scratch.
 *
 * usage: net_fdpass recv FD
 *   FD  an inherited unix socket (--pass-fd) on which the test sent one byte with a directory
 *       descriptor (SCM_RIGHTS) of a directory the policy does not allow; it holds "secret".
 *   Every attempt to reach the directory's contents through that descriptor must fail.
 * usage: net_fdpass pipe
 *   Two processes of the sandbox pass a pipe's write end over a socketpair with SCM_RIGHTS
 *   (under a policy with UDP rules, warden's agent performs the sendmsg) and use it.
 */
#include "escape_common.h"
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* result() for a call made in `cond`: errno is read after it (argument order is unspecified). */
#define CHECK(attempt, cond)                                                                       \
    do {                                                                                           \
        int ok_ = (cond);                                                                          \
        int e_ = errno;                                                                            \
        result(attempt, ok_, e_);                                                                  \
    } while (0)

static int send_fds(int sock, const int *fds, int n, const char *data) {
    char control[CMSG_SPACE(sizeof(int) * 4)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = (void *)data, .iov_len = strlen(data)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                        .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    return (int)sendmsg(sock, &mh, 0);
}

/* Receives one message; returns the first descriptor it carried, or -1. */
static int recv_fd(int sock, char *data, size_t cap) {
    char control[CMSG_SPACE(sizeof(int) * 4)];
    struct iovec iov = {.iov_base = data, .iov_len = cap - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                        .msg_controllen = sizeof control};
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return -1;
    data[n] = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
            return fd;
        }
    errno = ENOMSG;
    return -1;
}

static void recv_mode(int sock) {
    char data[64];
    struct pollfd p = {.fd = sock, .events = POLLIN};
    if (poll(&p, 1, 5000) != 1) {
        result("benign_recv_fd", 0, ETIMEDOUT);
        done();
        return;
    }
    int d = recv_fd(sock, data, sizeof data);
    resultf("benign_recv_fd", d >= 0, errno, "fd=%d data=%s", d, d >= 0 ? data : "-");
    if (d < 0) {
        done();
        return;
    }
    struct stat st;
    CHECK("benign_fstat_received_dir", fstat(d, &st) == 0 && S_ISDIR(st.st_mode));

    try_open_read("openat_secret", d, "secret");
    try_open_write("openat_secret_write", d, "secret", O_WRONLY | O_APPEND);
    try_open_write("openat_create", d, "created-by-sandbox", O_WRONLY | O_CREAT | O_EXCL);
    result_rc("mkdirat_new", mkdirat(d, "dir-by-sandbox", 0755));
    result_rc("unlinkat_secret", unlinkat(d, "secret", 0));
    result_rc("renameat_secret", renameat(d, "secret", d, "renamed"));
    result_rc("symlinkat_new", symlinkat("/etc/passwd", d, "link-by-sandbox"));
    result_rc("fchmodat_secret", fchmodat(d, "secret", 0777, 0));
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d/secret", d);
    try_open_read("proc_fd_secret", AT_FDCWD, path);
    {
        /* Into the directory, then by a relative name. */
        int rc = fchdir(d);
        int e = errno;
        resultf("info_fchdir", rc == 0, e, "");
        if (rc == 0) {
            try_open_read("fchdir_open_secret", AT_FDCWD, "secret");
            try_open_write("fchdir_create", AT_FDCWD, "created-after-fchdir", O_WRONLY | O_CREAT | O_EXCL);
        } else {
            result("fchdir_open_secret", 0, e);
            result("fchdir_create", 0, e);
        }
    }
    {
        /* Listing an open directory: the descriptor itself was handed over (reported only). */
        int l = openat(d, ".", O_RDONLY | O_DIRECTORY);
        int names = 0;
        if (l >= 0) {
            DIR *dir = fdopendir(l);
            for (struct dirent *e; dir && (e = readdir(dir));)
                names++;
            if (dir)
                closedir(dir);
        }
        resultf("info_list_reopened_dir", l >= 0, errno, "names=%d", names);
    }
    done();
}

static void pipe_mode(void) {
    int sv[2], pp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(pp) != 0) {
        result("benign_setup", 0, errno);
        done();
        return;
    }
    pid_t c = fork();
    if (c == 0) {
        close(sv[0]);
        close(pp[0]);
        close(pp[1]);
        char data[64];
        int w = recv_fd(sv[1], data, sizeof data);
        if (w < 0)
            _exit(1);
        _exit(write(w, "through-the-pipe", 16) == 16 ? 0 : 2);
    }
    close(sv[1]);
    /* A descriptor number the sender does not have. */
    int bad = 999;
    int rc = send_fds(sv[0], &bad, 1, "bad");
    result("sendmsg_bad_fd", rc >= 0, errno);
    rc = send_fds(sv[0], &pp[1], 1, "pipe");
    result("benign_sendmsg_pipe_fd", rc >= 0, errno);
    close(pp[1]);
    char buf[32] = {0};
    struct pollfd p = {.fd = pp[0], .events = POLLIN};
    ssize_t n = poll(&p, 1, 5000) == 1 ? read(pp[0], buf, sizeof buf - 1) : -1;
    int st = 0;
    waitpid(c, &st, 0);
    char clean[40];
    sanitize(buf, n < 0 ? 0 : n, clean, sizeof clean);
    resultf("benign_pipe_fd_used", n == 16 && memcmp(buf, "through-the-pipe", 16) == 0, errno, "data=%s child=%d",
            clean, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    done();
}

int main(int argc, char **argv) {
    setup_output();
    if (argc == 3 && strcmp(argv[1], "recv") == 0)
        recv_mode(atoi(argv[2]));
    else if (argc == 2 && strcmp(argv[1], "pipe") == 0)
        pipe_mode();
    else {
        fprintf(stderr, "usage: %s recv FD | pipe\n", argv[0]);
        return 2;
    }
    return 0;
}
