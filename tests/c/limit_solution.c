/* limit_solution [IN_FD OUT_FD]: the sandboxed side of an interactive task (issue #4). Answers
 * queries from IN_FD (default 0) on OUT_FD (default 1) as reactive.h describes. Exits 0 at end of
 * input. If IN_FD or OUT_FD is not an open descriptor it prints "bad fd N" on stderr and exits 3. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>

#include "reactive.h"

int main(int argc, char **argv) {
    int in_fd = argc > 1 ? atoi(argv[1]) : 0;
    int out_fd = argc > 2 ? atoi(argv[2]) : 1;
    int fds[2] = {in_fd, out_fd};
    for (int i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_GETFD) < 0) {
            fprintf(stderr, "bad fd %d\n", fds[i]);
            return 3;
        }
    }
    return answer_queries(in_fd, out_fd);
}
