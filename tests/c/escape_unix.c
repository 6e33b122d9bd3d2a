/* Reaching sockets outside the sandbox (issue #2, item 15). cwd: scratch.
 *
 * usage: escape_unix SOCKET_PATH ABSTRACT_NAME TCP_PORT
 *   SOCKET_PATH    a listening unix stream socket outside the sandbox
 *   ABSTRACT_NAME  a listening abstract unix socket (name without the leading NUL) outside
 *   TCP_PORT       a TCP listener on 127.0.0.1 outside
 * The test checks from outside that none of the listeners accepted anything.
 */
#include "escape_common.h"
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static void try_connect_path(const char *attempt, int type, const char *path) {
    int s = socket(AF_UNIX, type, 0);
    if (s < 0) {
        result(attempt, 0, errno);
        return;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int rc = connect(s, (struct sockaddr *)&a, sizeof a);
    int e = errno;
    if (rc == 0) {
        ssize_t n = write(s, "PWNED\n", 6);
        resultf(attempt, 1, 0, "wrote=%zd", n);
    } else {
        result(attempt, 0, e);
    }
    close(s);
}

static struct sockaddr_un abstract_addr(const char *name, socklen_t *len) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    memcpy(a.sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    return a;
}

static const char *rewrite_a, *rewrite_b;
static struct sockaddr_un race_addr = {.sun_family = AF_UNIX};
static volatile int rewrite_stop;

/* Rewrites the address that connect() is given, in place, while it is being checked. */
static void *rewriter(void *arg) {
    (void)arg;
    size_t la = strlen(rewrite_a) + 1, lb = strlen(rewrite_b) + 1;
    while (!rewrite_stop) {
        memcpy(race_addr.sun_path, rewrite_a, la);
        memcpy(race_addr.sun_path, rewrite_b, lb);
    }
    return NULL;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 4) {
        fprintf(stderr, "usage: %s SOCKET_PATH ABSTRACT_NAME TCP_PORT\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *abstract = argv[2];
    int port = atoi(argv[3]);
    char p[4096];

    /* Benign: a socket of the sandbox's own, bound in scratch, accepts a connection. */
    {
        int l = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "mine.sock");
        int ok = l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0;
        result("benign_bind_listen_scratch", ok, errno);
        try_connect_path("benign_connect_scratch", SOCK_STREAM, "mine.sock");
        close(l);
    }

    try_connect_path("connect_outside", SOCK_STREAM, path);
    try_connect_path("connect_outside_seqpacket", SOCK_SEQPACKET, path);
    symlink(path, "link.sock");
    try_connect_path("connect_via_symlink", SOCK_STREAM, "link.sock");
    snprintf(p, sizeof p, "/proc/self/root%s", path);
    try_connect_path("connect_via_proc_root", SOCK_STREAM, p);
    {
        /* A relative name from the cwd, climbing with `..`. */
        char cwd[4096];
        p[0] = 0;
        if (getcwd(cwd, sizeof cwd))
            for (const char *c = cwd; *c; c++)
                if (*c == '/')
                    strncat(p, "../", sizeof p - strlen(p) - 1);
        strncat(p, path + 1, sizeof p - strlen(p) - 1);
        if (strlen(p) < 108)
            try_connect_path("connect_relative_dotdot", SOCK_STREAM, p);
    }
    {
        /* A race on the address buffer: flips between our own socket and the outside one. */
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "race.sock");
        bind(l, (struct sockaddr *)&a, sizeof a);
        listen(l, 64);
        rewrite_a = "race.sock";
        rewrite_b = path;
        pthread_t t;
        pthread_create(&t, NULL, rewriter, NULL);
        unsigned long outside_hits = 0, own_hits = 0;
        /* Half a second, and on a loaded machine on until our side has connected once (at most
         * 10 s): a race that never ran its benign side tested nothing. */
        double start = now_s();
        while (now_s() < start + 0.5 || (own_hits == 0 && now_s() < start + 10)) {
            /* Non-blocking: natively a full backlog outside would otherwise block connect. */
            int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (connect(s, (struct sockaddr *)&race_addr, sizeof race_addr) == 0) {
                int c = accept4(l, NULL, NULL, SOCK_NONBLOCK); /* l is non-blocking too */
                if (c >= 0) {
                    own_hits++;
                    close(c);
                } else {
                    outside_hits++;
                }
            }
            close(s);
        }
        rewrite_stop = 1;
        pthread_join(t, NULL);
        close(l);
        resultf("connect_race", outside_hits > 0, EACCES, "own=%lu outside=%lu", own_hits, outside_hits);
    }

    {
        socklen_t len;
        struct sockaddr_un a = abstract_addr(abstract, &len);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        int rc = connect(s, (struct sockaddr *)&a, len);
        result("connect_abstract_outside", rc == 0, errno);
        close(s);
    }
    {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int rc = connect(s, (struct sockaddr *)&a, sizeof a);
        result("connect_tcp_outside", rc == 0, errno);
        close(s);
    }

    {
        /* bind through a dangling symlink planted in scratch, pointing outside. */
        char out[4096];
        snprintf(out, sizeof out, "%s.planted", path);
        symlink(out, "dangling.sock");
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "dangling.sock");
        result_rc("bind_through_dangling_symlink", bind(s, (struct sockaddr *)&a, sizeof a));
        close(s);
    }

    /* Unix datagram sockets could name any path in sendto; they are refused at creation. */
    result_rc("socket_unix_dgram", socket(AF_UNIX, SOCK_DGRAM, 0));
    result_rc("socket_unix_dgram_cloexec", socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int sv[2];
    result_rc("socketpair_unix_dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    result_rc("benign_socketpair_stream", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    {
        /* sendto with an address on an unconnected stream socket connects nothing. */
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
        result_rc("sendto_stream_outside", sendto(s, "PWNED\n", 6, 0, (struct sockaddr *)&a, sizeof a));
        close(s);
        s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        result_rc("sendto_seqpacket_outside", sendto(s, "PWNED\n", 6, 0, (struct sockaddr *)&a, sizeof a));
        close(s);
    }
    done();
    return 0;
}
