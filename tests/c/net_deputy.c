/* The agent as a network deputy (issue 17, items 14 and 15). With only
 * `net-allow outgoing tcp 127.0.0.1 PORT` and `net-allow outgoing udp 127.0.0.1 PORT`:
 *
 *   unspec_tcp_bound   bind 127.0.0.2:0, connect 0.0.0.0:PORT (the kernel sends it to the
 *                      bound address, 127.0.0.2, which no rule allows)
 *   unspec_udp_bound   the same with a UDP sendto
 *   unspec_v6_mapped   an IPv6 socket bound to ::ffff:127.0.0.2, connect [::]:PORT
 *   cmsg_retopts       UDP sendmsg to 127.0.0.1:PORT carrying IP_RETOPTS (a source route)
 *   cmsg_mark          ... carrying SO_MARK
 *   cmsg_priority      ... carrying SO_PRIORITY
 *   benign_unspec_tcp  unbound TCP connect 0.0.0.0:PORT: loopback, which the rule allows
 *   benign_cmsg_tos    UDP sendmsg carrying IP_TOS
 *   benign_plain_send  UDP sendmsg with no control message
 *
 *     net_deputy PORT
 */
#define _GNU_SOURCE
#include "escape_common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>

static struct sockaddr_in v4(const char *ip, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

static int bound(int type, const char *ip) {
    int s = socket(AF_INET, type, 0);
    struct sockaddr_in a = v4(ip, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    return s;
}

static void send_with(const char *attempt, int port, int level, int type, const void *data, size_t len) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = v4("127.0.0.1", port);
    char payload[] = "deputy";
    struct iovec iov = {.iov_base = payload, .iov_len = sizeof payload};
    union {
        char buf[CMSG_SPACE(64)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov, .msg_iovlen = 1};
    if (len) {
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(len);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = level;
        c->cmsg_type = type;
        c->cmsg_len = CMSG_LEN(len);
        memcpy(CMSG_DATA(c), data, len);
    }
    result_rc(attempt, sendmsg(s, &m, 0));
    close(s);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2)
        return 2;
    int port = atoi(argv[1]);
    struct sockaddr_in any = v4("0.0.0.0", port);

    int t = bound(SOCK_STREAM, "127.0.0.2");
    result_rc("unspec_tcp_bound", t < 0 ? -1 : connect(t, (struct sockaddr *)&any, sizeof any));
    close(t);

    int u = bound(SOCK_DGRAM, "127.0.0.2");
    result_rc("unspec_udp_bound", u < 0 ? -1 : sendto(u, "x", 1, 0, (struct sockaddr *)&any, sizeof any));
    close(u);

    int s6 = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 b6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:127.0.0.2", &b6.sin6_addr);
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    int rc6 = bind(s6, (struct sockaddr *)&b6, sizeof b6);
    result_rc("unspec_v6_mapped", rc6 != 0 ? -1 : connect(s6, (struct sockaddr *)&any6, sizeof any6));
    close(s6);

    int b = socket(AF_INET, SOCK_STREAM, 0);
    result_rc("benign_unspec_tcp", connect(b, (struct sockaddr *)&any, sizeof any));
    close(b);

    /* A loose source route through 127.0.0.3 (type 131, length 7, pointer 4). */
    unsigned char lsrr[8] = {131, 7, 4, 127, 0, 0, 3, 0};
    send_with("cmsg_retopts", port, IPPROTO_IP, IP_RETOPTS, lsrr, sizeof lsrr);
    int mark = 42, prio = 7, tos = 0x10;
    send_with("cmsg_mark", port, SOL_SOCKET, SO_MARK, &mark, sizeof mark);
    send_with("cmsg_priority", port, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio);
    send_with("benign_cmsg_tos", port, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
    send_with("benign_plain_send", port, 0, 0, NULL, 0);
    printf("DONE\n");
    return 0;
}
