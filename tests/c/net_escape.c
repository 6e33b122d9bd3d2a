/* Reaching TCP and UDP ports the policy does not allow (tests/network.rs). cwd: scratch.
 *
 * usage: net_escape ALLOWED DENIED ALLOWED_UDP DENIED_UDP BINDPORT RACE_MS
 *   ALLOWED, ALLOWED_UDP  ports on 127.0.0.1 the policy allows (net-allow outgoing), with
 *                         listeners outside that count what reaches them
 *   DENIED, DENIED_UDP    ports on 127.0.0.1 with listeners outside and no rule
 *   BINDPORT              a free port no incoming rule covers (the bind tricks aim at it)
 *   RACE_MS               how long each address race runs
 *
 * After the bind attempts the program prints "CHECKPOINT bind" and waits (up to 10 s) for a
 * byte on stdin, so that the test can check from outside, while the sockets are still open,
 * that BINDPORT is free. Every attempt prints a RESULT line (escape_common.h); "DONE" ends.
 */
#include "escape_common.h"
#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

/* result() for a call made in `cond`: errno is read after it (argument order is unspecified). */
#define CHECK(attempt, cond)                                                                       \
    do {                                                                                           \
        int ok_ = (cond);                                                                          \
        int e_ = errno;                                                                            \
        result(attempt, ok_, e_);                                                                  \
    } while (0)

#ifndef SO_LOCK_FILTER
#define SO_LOCK_FILTER 44
#endif

static struct sockaddr_in v4(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static struct sockaddr_in6 v6mapped(int port) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
    return a;
}

/* connect(2) on a fresh socket of `family`; on success writes a marker. */
static void try_connect(const char *attempt, int family, int type, const void *addr, socklen_t len) {
    int s = socket(family, type, 0);
    if (s < 0) {
        resultf(attempt, 0, errno, "stage=socket");
        return;
    }
    int rc = connect(s, addr, len);
    int e = errno;
    if (rc == 0) {
        ssize_t n = type == SOCK_STREAM ? write(s, "net_escape\n", 11) : 0;
        resultf(attempt, 1, 0, "wrote=%zd", n);
    } else {
        result(attempt, 0, e);
    }
    close(s);
}

static void try_sendto(const char *attempt, int family, const void *addr, socklen_t len) {
    int s = socket(family, SOCK_DGRAM, 0);
    if (s < 0) {
        resultf(attempt, 0, errno, "stage=socket");
        return;
    }
    ssize_t n = sendto(s, attempt, strlen(attempt), 0, addr, len);
    result(attempt, n >= 0, errno);
    close(s);
}

/* ---- the address races ---- */

static struct sockaddr_in race_addr;
static uint16_t race_a, race_b;
static volatile int race_stop;

/* Flips the port of the shared address between the allowed and the denied one. */
static void *flipper(void *arg) {
    (void)arg;
    volatile uint16_t *port = &race_addr.sin_port;
    while (!race_stop) {
        *port = race_a;
        *port = race_b;
    }
    return NULL;
}

static void race_connect(int allowed, int denied, int ms) {
    race_addr = v4(allowed);
    race_a = htons(allowed);
    race_b = htons(denied);
    race_stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    unsigned long to_allowed = 0, to_denied = 0, refused = 0, other = 0, tries = 0;
    double end = now_s() + ms / 1000.0;
    /* Natively every connect succeeds at once: a bound keeps the ephemeral ports in supply. */
    /* On a loaded machine the flipper may barely run in the window: while nothing was refused
     * and nothing reached the denied port, go on a little longer (natively, until the race is
     * won; under warden, refusals end it on time). */
    while ((now_s() < end || (to_denied == 0 && refused == 0 && now_s() < end + 5)) &&
           tries < 12000) {
        tries++;
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) {
            other++;
            continue;
        }
        if (connect(s, (struct sockaddr *)&race_addr, sizeof race_addr) == 0) {
            struct sockaddr_in peer;
            socklen_t pl = sizeof peer;
            if (getpeername(s, (struct sockaddr *)&peer, &pl) == 0 && ntohs(peer.sin_port) == denied)
                to_denied++;
            else
                to_allowed++;
        } else if (errno == EACCES) {
            refused++;
        } else {
            other++;
        }
        /* An abortive close: no TIME_WAIT, so thousands of tries cannot run the loopback out of
         * ephemeral ports (which made the native control fail under parallel load). */
        struct linger l = {1, 0};
        setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        close(s);
    }
    race_stop = 1;
    pthread_join(t, NULL);
    resultf("race_connect", to_denied > 0, EACCES, "allowed=%lu denied=%lu refused=%lu other=%lu", to_allowed,
            to_denied, refused, other);
}

static void race_sendto(int allowed, int denied, int ms) {
    race_addr = v4(allowed);
    race_a = htons(allowed);
    race_b = htons(denied);
    race_stop = 0;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    unsigned long sent = 0, refused = 0, other = 0, tries = 0;
    double end = now_s() + ms / 1000.0;
    while (now_s() < end && tries < 50000) {
        tries++;
        if (sendto(s, "race", 4, 0, (struct sockaddr *)&race_addr, sizeof race_addr) >= 0)
            sent++;
        else if (errno == EACCES)
            refused++;
        else
            other++;
    }
    race_stop = 1;
    pthread_join(t, NULL);
    close(s);
    /* Where each datagram went only the listeners outside know: they decide. */
    resultf("race_sendto_udp", 0, EACCES, "sent=%lu refused=%lu other=%lu", sent, refused, other);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 7) {
        fprintf(stderr, "usage: %s ALLOWED DENIED ALLOWED_UDP DENIED_UDP BINDPORT RACE_MS\n", argv[0]);
        return 2;
    }
    int allowed = atoi(argv[1]), denied = atoi(argv[2]);
    int allowed_udp = atoi(argv[3]), denied_udp = atoi(argv[4]);
    int bindport = atoi(argv[5]), race_ms = atoi(argv[6]);

    /* ---- binding a port no incoming rule covers ---- */
    int held[4] = {-1, -1, -1, -1};
    {
        /* The kernel reads an AF_UNSPEC address with INADDR_ANY as AF_INET (compatibility). */
        struct sockaddr_in a = {.sin_family = AF_UNSPEC, .sin_port = htons(bindport)};
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        int rc = bind(s, (struct sockaddr *)&a, sizeof a);
        int e = errno;
        if (rc == 0)
            listen(s, 4);
        result("bind_unspec_tcp", rc == 0, e);
        held[0] = s;
        s = socket(AF_INET, SOCK_DGRAM, 0);
        rc = bind(s, (struct sockaddr *)&a, sizeof a);
        result("bind_unspec_udp", rc == 0, errno);
        held[1] = s;
    }
    {
        struct sockaddr_in a = v4(bindport);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        int rc = bind(s, (struct sockaddr *)&a, sizeof a);
        result("bind_inet_tcp", rc == 0, errno);
        held[2] = s;
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(bindport)};
        a6.sin6_addr = in6addr_any;
        s = socket(AF_INET6, SOCK_STREAM, 0);
        rc = bind(s, (struct sockaddr *)&a6, sizeof a6);
        result("bind_v6_any_tcp", rc == 0, errno);
        held[3] = s;
        /* Port 0 (the kernel picks) needs no rule. */
        struct sockaddr_in z = v4(0);
        s = socket(AF_INET, SOCK_STREAM, 0);
        CHECK("benign_bind_port0_tcp", bind(s, (struct sockaddr *)&z, sizeof z) == 0);
        close(s);
    }
    printf("CHECKPOINT bind\n");
    fflush(stdout);
    {
        struct pollfd p = {.fd = 0, .events = POLLIN};
        char c;
        if (poll(&p, 1, 10000) == 1)
            (void)!read(0, &c, 1);
    }
    for (int i = 0; i < 4; i++)
        close(held[i]);

    /* ---- TCP connect ---- */
    {
        struct sockaddr_in a = v4(allowed);
        try_connect("benign_connect_allowed", AF_INET, SOCK_STREAM, &a, sizeof a);
        a = v4(denied);
        try_connect("connect_denied", AF_INET, SOCK_STREAM, &a, sizeof a);
        struct sockaddr_in6 m = v6mapped(allowed);
        try_connect("benign_connect_v6_mapped_allowed", AF_INET6, SOCK_STREAM, &m, sizeof m);
        m = v6mapped(denied);
        try_connect("connect_v6_mapped_denied", AF_INET6, SOCK_STREAM, &m, sizeof m);
        /* The old 24-byte sockaddr_in6 (no scope id), which the kernel accepts. */
        try_connect("connect_v6_mapped_short_denied", AF_INET6, SOCK_STREAM, &m, 24);
        /* Non-blocking: the agent must refuse before the kernel starts the handshake. */
        int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        a = v4(denied);
        int rc = connect(s, (struct sockaddr *)&a, sizeof a);
        int e = errno;
        result("connect_denied_nonblocking", rc == 0 || e == EINPROGRESS, e);
        close(s);
    }

    /* ---- UDP ---- */
    {
        struct sockaddr_in a = v4(allowed_udp);
        try_sendto("benign_sendto_allowed_udp", AF_INET, &a, sizeof a);
        a = v4(denied_udp);
        try_sendto("sendto_denied_udp", AF_INET, &a, sizeof a);
        struct sockaddr_in u = v4(denied_udp);
        u.sin_family = AF_UNSPEC;
        try_sendto("sendto_unspec_denied_udp", AF_INET, &u, sizeof u);
        struct sockaddr_in6 m = v6mapped(denied_udp);
        try_sendto("sendto_v6_mapped_denied_udp", AF_INET6, &m, sizeof m);
        /* An IPv6 UDP socket sends to an AF_INET address as IPv4. */
        try_sendto("sendto_v4_on_v6_denied_udp", AF_INET6, &a, sizeof a);
        try_connect("connect_denied_udp", AF_INET, SOCK_DGRAM, &a, sizeof a);

        int s = socket(AF_INET, SOCK_DGRAM, 0);
        struct iovec iov = {.iov_base = "sendmsg", .iov_len = 7};
        struct msghdr mh = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
        CHECK("sendmsg_denied_udp", sendmsg(s, &mh, 0) >= 0);

        struct mmsghdr mm[2];
        memset(mm, 0, sizeof mm);
        for (int i = 0; i < 2; i++) {
            mm[i].msg_hdr.msg_name = &a;
            mm[i].msg_hdr.msg_namelen = sizeof a;
            mm[i].msg_hdr.msg_iov = &iov;
            mm[i].msg_hdr.msg_iovlen = 1;
        }
        int rc = sendmmsg(s, mm, 2, 0);
        resultf("sendmmsg_denied_udp", rc > 0, rc < 0 ? errno : 0, "sent=%d", rc);

        /* The first message to the allowed port, the second to the denied one. */
        struct sockaddr_in ok = v4(allowed_udp);
        mm[0].msg_hdr.msg_name = &ok;
        rc = sendmmsg(s, mm, 2, 0);
        resultf("sendmmsg_second_denied_udp", rc == 2, rc < 0 ? errno : 0, "sent=%d", rc);
        close(s);

        /* On a socket connected to the allowed port, an explicit address still counts. */
        s = socket(AF_INET, SOCK_DGRAM, 0);
        rc = connect(s, (struct sockaddr *)&ok, sizeof ok);
        result("benign_connect_allowed_udp", rc == 0, errno);
        CHECK("benign_send_connected_udp", send(s, "connected", 9, 0) >= 0);
        CHECK("sendto_denied_on_connected_udp", sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a) >= 0);
        mh.msg_name = &a;
        CHECK("sendmsg_denied_on_connected_udp", sendmsg(s, &mh, 0) >= 0);
        close(s);
    }

    /* ---- MSG_FASTOPEN: a connect inside a send ---- */
    {
        struct sockaddr_in a = v4(denied);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        ssize_t n = sendto(s, "fastopen", 8, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof a);
        int e = errno;
        result("sendto_fastopen_denied", n >= 0 || e == EINPROGRESS, e);
        close(s);
        s = socket(AF_INET, SOCK_STREAM, 0);
        struct iovec iov = {.iov_base = "fastopen", .iov_len = 8};
        struct msghdr mh = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
        n = sendmsg(s, &mh, MSG_FASTOPEN);
        e = errno;
        result("sendmsg_fastopen_denied", n >= 0 || e == EINPROGRESS, e);
        close(s);
        s = socket(AF_INET, SOCK_STREAM, 0);
        struct mmsghdr mm = {.msg_hdr = mh};
        int rc = sendmmsg(s, &mm, 1, MSG_FASTOPEN);
        e = errno;
        result("sendmmsg_fastopen_denied", rc > 0 || e == EINPROGRESS, e);
        close(s);
    }

    /* ---- the incoming filter on the UDP sockets the sandbox gets (TCP sockets have none: the
     * agent performs accept, and a connected TCP socket hears only its peer) ---- */
    {
        struct sock_filter accept_all[] = {BPF_STMT(BPF_RET | BPF_K, 0xffffffff)};
        struct sock_fprog prog = {.len = 1, .filter = accept_all};
        int zero = 0;
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        int locked = -1;
        socklen_t ll = sizeof locked;
        int rc = getsockopt(s, SOL_SOCKET, SO_LOCK_FILTER, &locked, &ll);
        resultf("benign_filter_is_locked", rc == 0 && locked == 1, errno, "locked=%d", locked);
        CHECK("attach_filter_udp", setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0);
        CHECK("detach_filter_udp", setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof zero) == 0);
        CHECK("unlock_filter_udp", setsockopt(s, SOL_SOCKET, SO_LOCK_FILTER, &zero, sizeof zero) == 0);
        close(s);
        s = socket(AF_INET6, SOCK_DGRAM, 0);
        CHECK("attach_filter_udp6", setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0);
        CHECK("detach_filter_udp6", setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof zero) == 0);
        close(s);
    }

    /* ---- sockets that are not TCP or UDP ---- */
    {
        struct {
            const char *name;
            int domain, type, proto;
        } kinds[] = {
            {"socket_raw_icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP},
            {"socket_raw_udp", AF_INET, SOCK_RAW, IPPROTO_UDP},
            {"socket_raw6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6},
            {"socket_icmp_dgram", AF_INET, SOCK_DGRAM, IPPROTO_ICMP},
            {"socket_icmp6_dgram", AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6},
            {"socket_sctp", AF_INET, SOCK_STREAM, 132},
            {"socket_unix_dgram", AF_UNIX, SOCK_DGRAM, 0},
            {"socket_packet", 17 /* AF_PACKET */, SOCK_RAW, 0},
        };
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            int s = socket(kinds[i].domain, kinds[i].type, kinds[i].proto);
            result(kinds[i].name, s >= 0, errno);
            if (s >= 0)
                close(s);
        }
    }

    /* ---- races on the address while the call is checked ---- */
    race_connect(allowed, denied, race_ms);
    race_sendto(allowed_udp, denied_udp, race_ms);

    done();
    return 0;
}
