/* Servers and a client for the incoming filter (tests/network.rs). cwd: scratch.
 *
 * usage: net_server tcp ADDR PORT TIMEOUT_MS
 *        net_server udp ADDR PORT TIMEOUT_MS
 *        net_server udpclient PORT TIMEOUT_MS
 *
 * tcp, udp: listens on ADDR:PORT, prints "READY", then one "PEER addr=A port=P data=D" line per
 * connection (tcp: the first bytes it sent; it gets "ACK" back) or datagram (udp), until a peer
 * sends data starting with "STOP" or TIMEOUT_MS pass ("TIMEOUT"). udp also tries to answer
 * each peer (RESULT attempt=reply_udp).
 * udpclient: sends "PING" to 127.0.0.1:PORT, prints "SENT", then "GOT addr=A port=P data=D"
 * for every datagram it receives until one starts with "END" or TIMEOUT_MS pass.
 * usage: net_server attach   (natively) can this user attach a socket filter to TCP, UDP?
 * usage: net_server hold FD COUNT TIMEOUT_MS
 * hold: prints "READY", then accepts on the listening socket FD (passed with --pass-fd) and
 * holds every connection, up to COUNT, until an accept fails or TIMEOUT_MS pass; then prints
 * "ACCEPTED n errno=E" (E the failed accept's errno, or none).
 * Every mode ends with "DONE".
 */
#include "escape_common.h"
#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

static int remaining_ms(double end) {
    double r = (end - now_s()) * 1000;
    return r < 0 ? 0 : (int)r;
}

static void peer_line(const char *what, struct sockaddr_in *p, const char *data, ssize_t n) {
    char ip[INET_ADDRSTRLEN], clean[80];
    inet_ntop(AF_INET, &p->sin_addr, ip, sizeof ip);
    sanitize(data, n < 0 ? 0 : n, clean, sizeof clean);
    printf("%s addr=%s port=%d data=%s\n", what, ip, ntohs(p->sin_port), clean);
    fflush(stdout);
}

static int listen_on(int type, const char *addr, int port) {
    int s = socket(AF_INET, type, 0);
    if (s < 0) {
        result("socket", 0, errno);
        return -1;
    }
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
        result("bind", 0, errno);
        return -1;
    }
    if (type == SOCK_STREAM && listen(s, 16) != 0) {
        result("listen", 0, errno);
        return -1;
    }
    printf("READY\n");
    fflush(stdout);
    return s;
}

static void tcp_server(const char *addr, int port, int timeout_ms) {
    int l = listen_on(SOCK_STREAM, addr, port);
    if (l < 0)
        return;
    double end = now_s() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd p = {.fd = l, .events = POLLIN};
        if (poll(&p, 1, remaining_ms(end)) != 1) {
            printf("TIMEOUT\n");
            return;
        }
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        int c = accept(l, (struct sockaddr *)&peer, &pl);
        if (c < 0)
            continue;
        char buf[64] = {0};
        ssize_t n = 0;
        struct pollfd q = {.fd = c, .events = POLLIN};
        if (poll(&q, 1, 2000) == 1)
            n = read(c, buf, sizeof buf - 1);
        peer_line("PEER", &peer, buf, n);
        (void)!write(c, "ACK", 3);
        close(c);
        if (n >= 4 && memcmp(buf, "STOP", 4) == 0)
            return;
    }
}

static void udp_server(const char *addr, int port, int timeout_ms) {
    int s = listen_on(SOCK_DGRAM, addr, port);
    if (s < 0)
        return;
    double end = now_s() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        if (poll(&p, 1, remaining_ms(end)) != 1) {
            printf("TIMEOUT\n");
            return;
        }
        char buf[64] = {0};
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        ssize_t n = recvfrom(s, buf, sizeof buf - 1, 0, (struct sockaddr *)&peer, &pl);
        if (n < 0)
            continue;
        peer_line("PEER", &peer, buf, n);
        ssize_t r = sendto(s, "ACK", 3, 0, (struct sockaddr *)&peer, pl);
        result("reply_udp", r >= 0, errno);
        if (n >= 4 && memcmp(buf, "STOP", 4) == 0)
            return;
    }
}

static void udp_client(int port, int timeout_ms) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ssize_t n = sendto(s, "PING", 4, 0, (struct sockaddr *)&a, sizeof a);
    result("benign_sendto_ping", n == 4, errno);
    if (n != 4)
        return;
    printf("SENT\n");
    fflush(stdout);
    double end = now_s() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        if (poll(&p, 1, remaining_ms(end)) != 1) {
            printf("TIMEOUT\n");
            return;
        }
        char buf[64] = {0};
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        n = recvfrom(s, buf, sizeof buf - 1, 0, (struct sockaddr *)&peer, &pl);
        if (n < 0)
            continue;
        peer_line("GOT", &peer, buf, n);
        if (n >= 3 && memcmp(buf, "END", 3) == 0)
            return;
    }
}

/* Natively: whether this user may attach a classic-BPF filter to a TCP and to a UDP socket,
 * as warden's agent does for every inet socket it makes for the sandbox. */
static void attach_probe(void) {
    struct sock_filter accept_all[] = {BPF_STMT(BPF_RET | BPF_K, 0xffffffff)};
    struct sock_fprog prog = {.len = 1, .filter = accept_all};
    int types[] = {SOCK_STREAM, SOCK_DGRAM};
    const char *names[] = {"attach_filter_tcp", "attach_filter_udp"};
    for (int i = 0; i < 2; i++) {
        int s = socket(AF_INET, types[i], 0);
        int rc = setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
        int e = errno;
        resultf(names[i], rc == 0, e, "uid=%d", (int)getuid());
        close(s);
    }
}

static void hold(int fd, int count, int timeout_ms) {
    double end = now_s() + timeout_ms / 1000.0;
    int n = 0, err = 0;
    printf("READY\n");
    fflush(stdout);
    while (n < count) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, remaining_ms(end)) <= 0)
            break;
        if (accept(fd, NULL, NULL) < 0) {
            err = errno;
            break;
        }
        n++;
    }
    printf("ACCEPTED %d errno=%s\n", n, err ? ename(err) : "none");
}

int main(int argc, char **argv) {
    setup_output();
    if (argc == 2 && strcmp(argv[1], "attach") == 0)
        attach_probe();
    else if (argc == 5 && strcmp(argv[1], "tcp") == 0)
        tcp_server(argv[2], atoi(argv[3]), atoi(argv[4]));
    else if (argc == 5 && strcmp(argv[1], "udp") == 0)
        udp_server(argv[2], atoi(argv[3]), atoi(argv[4]));
    else if (argc == 4 && strcmp(argv[1], "udpclient") == 0)
        udp_client(atoi(argv[2]), atoi(argv[3]));
    else if (argc == 5 && strcmp(argv[1], "hold") == 0)
        hold(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    else {
        fprintf(stderr, "usage: %s tcp|udp ADDR PORT TIMEOUT_MS | udpclient PORT TIMEOUT_MS | hold FD COUNT TIMEOUT_MS | attach\n", argv[0]);
        return 2;
    }
    done();
    return 0;
}
