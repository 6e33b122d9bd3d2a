/* The unspecified address as a destination (tests/network.rs).
 *
 * usage: net_unspec UDP_PORT TCP_PORT
 *   UDP_PORT, TCP_PORT  listeners on 127.0.0.1 outside, which count what reaches them
 *
 * Run under a policy whose outgoing rules cover 0.0.0.0 but not 127.0.0.0/8 (the first block
 * of the usual "public internet" split, 0.0.0.0/5). Linux sends a datagram or a SYN addressed
 * to 0.0.0.0 (or ::ffff:0.0.0.0) to the local host, 127.0.0.1: so an address that the policy
 * allows reaches one it denies.
 */
#include "escape_common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

/* result() for a call made in `cond`: errno is read after it (argument order is unspecified). */
#define CHECK(attempt, cond)                                                                       \
    do {                                                                                           \
        int ok_ = (cond);                                                                          \
        int e_ = errno;                                                                            \
        result(attempt, ok_, e_);                                                                  \
    } while (0)

static void sendto_v4(const char *attempt, const char *ip, int port) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    CHECK(attempt, sendto(s, attempt, strlen(attempt), 0, (struct sockaddr *)&a, sizeof a) >= 0);
    close(s);
}

/* A connect with a one-second limit: ok once the handshake completed. */
static void connect_v4(const char *attempt, const char *ip, int port) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    int rc = connect(s, (struct sockaddr *)&a, sizeof a);
    int e = errno;
    if (rc != 0 && e == EINPROGRESS) {
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (poll(&p, 1, 1000) == 1) {
            socklen_t l = sizeof e;
            getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l);
            rc = e == 0 ? 0 : -1;
        } else {
            e = ETIMEDOUT;
        }
    }
    result(attempt, rc == 0, e);
    close(s);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3) {
        fprintf(stderr, "usage: %s UDP_PORT TCP_PORT\n", argv[0]);
        return 2;
    }
    int udp = atoi(argv[1]), tcp = atoi(argv[2]);
    /* The policy is in force: loopback itself is refused. */
    sendto_v4("sendto_loopback_udp", "127.0.0.1", udp);
    sendto_v4("sendto_unspecified_udp", "0.0.0.0", udp);
    {
        int s = socket(AF_INET6, SOCK_DGRAM, 0);
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(udp)};
        inet_pton(AF_INET6, "::ffff:0.0.0.0", &a.sin6_addr);
        CHECK("sendto_unspecified_v6_mapped_udp", sendto(s, "v6", 2, 0, (struct sockaddr *)&a, sizeof a) >= 0);
        close(s);
    }
    {
        /* A connected UDP socket: connect() to 0.0.0.0, then plain send(). */
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(udp)};
        int rc = connect(s, (struct sockaddr *)&a, sizeof a);
        CHECK("send_connected_unspecified_udp", rc == 0 && send(s, "connected", 9, 0) == 9);
        close(s);
    }
    connect_v4("connect_loopback_tcp", "127.0.0.1", tcp);
    connect_v4("connect_unspecified_tcp", "0.0.0.0", tcp);
    done();
    return 0;
}
