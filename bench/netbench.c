/* Loopback TCP connection costs (jailer T1: connect and accept), for bench/harness.py.
 *
 *   netbench connect PORT N   N times: socket, connect to 127.0.0.1:PORT, close. Prints
 *                             "connect NS 0" (ns per connect call) and "connect_cycle NS 0"
 *                             (ns per socket+connect+close).
 *   netbench accept PORT N    listens on 127.0.0.1:PORT, accepts N connections and closes each.
 *                             Prints "accept NS 0": ns per connection of the whole loop, from
 *                             the first connection's arrival to the last one's close.
 *   netbench serve PORT N     the counterpart of `connect` (not measured): prints "ready" once
 *                             it listens, then accepts until killed (N is ignored).
 *   netbench dial PORT N      the counterpart of `accept`: connects N times, retrying until the
 *                             server listens.
 * A failed call prints "NAME 0 ERRNO" for the measured modes and exits 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct sockaddr_in addr_of(int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listener(int port) {
    struct sockaddr_in a = addr_of(port);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (s < 0) return -1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 4096) < 0) return -1;
    return s;
}

/* An abortive close (RST): neither side keeps TIME_WAIT sockets that would run the loopback's
 * ports out over many runs. */
static void close_now(int fd) {
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: netbench connect|accept|serve|dial PORT N\n");
        return 2;
    }
    const char *mode = argv[1];
    int port = atoi(argv[2]);
    long n = atol(argv[3]);
    struct sockaddr_in a = addr_of(port);
    if (!strcmp(mode, "connect")) {
        long long in_connect = 0, t0 = now();
        for (long i = 0; i < n; i++) {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            if (s < 0) { printf("connect 0 %d\n", errno); return 1; }
            long long c0 = now();
            if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
                printf("connect 0 %d\n", errno);
                return 1;
            }
            in_connect += now() - c0;
            close_now(s);
        }
        long long total = now() - t0;
        printf("connect %.1f 0\n", (double)in_connect / (double)n);
        printf("connect_cycle %.1f 0\n", (double)total / (double)n);
        return 0;
    }
    if (!strcmp(mode, "accept")) {
        int l = listener(port);
        if (l < 0) { printf("accept 0 %d\n", errno); return 1; }
        long long t0 = 0;
        for (long i = 0; i < n; i++) {
            int c = accept(l, NULL, NULL);
            if (c < 0) { printf("accept 0 %d\n", errno); return 1; }
            if (i == 0) t0 = now();
            close_now(c);
        }
        printf("accept %.1f 0\n", n > 1 ? (double)(now() - t0) / (double)(n - 1) : 0.0);
        return 0;
    }
    if (!strcmp(mode, "serve")) {
        int l = listener(port);
        if (l < 0) { perror("netbench serve"); return 1; }
        /* Tell the harness we listen. */
        printf("ready\n");
        fflush(stdout);
        for (;;) {
            int c = accept(l, NULL, NULL);
            if (c < 0) { perror("netbench serve: accept"); return 1; }
            /* Let the client close first (with a reset): a reset from here could reach the
             * client before its connect returned, and fail it. */
            char b;
            (void)!read(c, &b, 1);
            close(c);
        }
    }
    if (!strcmp(mode, "dial")) {
        for (long i = 0; i < n;) {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            if (s < 0) { perror("netbench dial: socket"); return 1; }
            if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
                int e = errno;
                close(s);
                if (i == 0 && e == ECONNREFUSED) { usleep(1000); continue; }
                /* The server accepted and reset the connection before connect returned here. */
                if (e == ECONNRESET) { i++; continue; }
                perror("netbench dial: connect");
                return 1;
            }
            /* Wait for the server's close, so connections do not pile up in its backlog. */
            char b;
            (void)!read(s, &b, 1);
            close(s);
            i++;
        }
        return 0;
    }
    fprintf(stderr, "netbench: unknown mode %s\n", mode);
    return 2;
}
