/* The private network namespace a policy without IP rules gives (tests/network.rs).
 *
 * usage: net_private TCP_PORT UDP_PORT
 *   TCP_PORT, UDP_PORT  listeners on 127.0.0.1 outside the sandbox, which count what they get
 *
 * Inside, 127.0.0.1 is the sandbox's own loopback: the outside listeners are unreachable, and
 * the program's own server and client talk over it with no rule (benign_*).
 */
#include "escape_common.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
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

static struct sockaddr_in lo(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int bound(int type, int port) {
    int s = socket(AF_INET, type, 0);
    struct sockaddr_in a = lo(port);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    return s;
}

static int port_of(int s) {
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &l);
    return ntohs(a.sin_port);
}

/* A server and a client (a forked child) over the sandbox's loopback. */
static void loopback_tcp(void) {
    int l = bound(SOCK_STREAM, 0);
    if (l < 0 || listen(l, 4) != 0) {
        result("benign_loopback_tcp", 0, errno);
        return;
    }
    int port = port_of(l);
    pid_t c = fork();
    if (c == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = lo(port);
        char buf[4] = {0};
        if (connect(s, (struct sockaddr *)&a, sizeof a) != 0 || write(s, "ping", 4) != 4 ||
            read(s, buf, 4) != 4 || memcmp(buf, "pong", 4) != 0)
            _exit(1);
        _exit(0);
    }
    int ok = 0;
    struct pollfd p = {.fd = l, .events = POLLIN};
    if (poll(&p, 1, 5000) == 1) {
        int s = accept(l, NULL, NULL);
        char buf[4] = {0};
        ok = s >= 0 && read(s, buf, 4) == 4 && memcmp(buf, "ping", 4) == 0 && write(s, "pong", 4) == 4;
        close(s);
    }
    int st = 0;
    waitpid(c, &st, 0);
    resultf("benign_loopback_tcp", ok && WIFEXITED(st) && WEXITSTATUS(st) == 0, errno, "port=%d", port);
    close(l);
}

static void loopback_udp(void) {
    int s = bound(SOCK_DGRAM, 0);
    if (s < 0) {
        result("benign_loopback_udp", 0, errno);
        return;
    }
    int port = port_of(s);
    pid_t c = fork();
    if (c == 0) {
        int u = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in a = lo(port);
        _exit(sendto(u, "dgram", 5, 0, (struct sockaddr *)&a, sizeof a) == 5 ? 0 : 1);
    }
    int ok = 0;
    struct pollfd p = {.fd = s, .events = POLLIN};
    char buf[8] = {0};
    if (poll(&p, 1, 5000) == 1)
        ok = recv(s, buf, sizeof buf, 0) == 5 && memcmp(buf, "dgram", 5) == 0;
    int st = 0;
    waitpid(c, &st, 0);
    result("benign_loopback_udp", ok, errno);
    close(s);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3) {
        fprintf(stderr, "usage: %s TCP_PORT UDP_PORT\n", argv[0]);
        return 2;
    }
    int tcp = atoi(argv[1]), udp = atoi(argv[2]);
    {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = lo(tcp);
        int rc = connect(s, (struct sockaddr *)&a, sizeof a);
        result("connect_outside_tcp", rc == 0, errno);
        close(s);
        s = socket(AF_INET6, SOCK_STREAM, 0);
        struct sockaddr_in6 m = {.sin6_family = AF_INET6, .sin6_port = htons(tcp)};
        inet_pton(AF_INET6, "::ffff:127.0.0.1", &m.sin6_addr);
        rc = connect(s, (struct sockaddr *)&m, sizeof m);
        result("connect_outside_tcp_v6_mapped", rc == 0, errno);
        close(s);
    }
    {
        /* A datagram to the outside listener's port lands on the sandbox's own loopback: the
         * send itself succeeds, and the test checks from outside that nothing arrived. */
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in a = lo(udp);
        ssize_t n = sendto(s, "escape", 6, 0, (struct sockaddr *)&a, sizeof a);
        result("info_sendto_outside_udp", n == 6, errno);
        close(s);
    }
    /* The port the outside listener holds is free in here: another namespace. */
    {
        int s = bound(SOCK_STREAM, tcp);
        CHECK("benign_bind_outside_port", s >= 0 && listen(s, 1) == 0);
        if (s >= 0)
            close(s);
    }
    {
        struct if_nameindex *ifs = if_nameindex();
        char names[256] = "";
        int n = 0, only_lo = ifs != NULL;
        for (struct if_nameindex *i = ifs; i && i->if_index; i++, n++) {
            strncat(names, i->if_name, sizeof names - strlen(names) - 2);
            strcat(names, ",");
            if (strcmp(i->if_name, "lo") != 0)
                only_lo = 0;
        }
        resultf("benign_only_loopback", only_lo && n == 1, errno, "interfaces=%s", names);
        if (ifs)
            if_freenameindex(ifs);
    }
    loopback_tcp();
    loopback_udp();
    done();
    return 0;
}
