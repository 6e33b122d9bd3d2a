/* Takes ephemeral ports from the host: TCP sockets bound to 127.0.0.9 port 0 (an address of
 * its own, so that other tests' ports on 127.0.0.1 are not disturbed), held, up to
 * COUNT or the first failure (issue 18, item 3). Prints "bound=N errno=NAME" and, while it
 * holds them, waits for a line on stdin (the test checks the host from outside meanwhile).
 *
 *     net_ports COUNT [churn]
 *
 * With "churn", each socket is closed after its bind: the sandbox never holds more than one,
 * so every one of COUNT must succeed whatever the limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3)
        return 2;
    long count = atol(argv[1]);
    int churn = argc == 3 && strcmp(argv[2], "churn") == 0;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    long n = 0;
    int err = 0;
    for (; n < count; n++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) {
            err = errno;
            break;
        }
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
        a.sin_addr.s_addr = htonl(0x7f000009);
        if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
            err = errno;
            break;
        }
        if (churn)
            close(s);
    }
    printf("bound=%ld errno=%s\n", n, err ? strerrorname_np(err) : "none");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) {
    }
    return 0;
}
