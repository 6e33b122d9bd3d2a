/* Makes the agent create kernel objects for the sandbox: PROCS processes each open /dev/null
 * up to COUNT times (the agent opens every one and hands the descriptor over), holding them
 * all, then report how many they got and the first error. Under --mem, those files must be
 * charged to the sandbox's memory group, not to warden's (issue 18, item 2).
 *
 *     limit_agent_mem PROCS COUNT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    int procs = atoi(argv[1]);
    long count = atol(argv[2]);
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 2;
    for (int p = 0; p < procs; p++) {
        if (fork() == 0) {
            struct rlimit rl;
            getrlimit(RLIMIT_NOFILE, &rl);
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            long n = 0;
            int err = 0;
            for (; n < count; n++) {
                if (open("/dev/null", O_RDONLY) < 0) {
                    err = errno;
                    break;
                }
            }
            char line[128];
            int len = snprintf(line, sizeof line, "%ld %d\n", n, err);
            write(pipefd[1], line, len);
            /* Hold everything until the others are done too. */
            sleep(1);
            _exit(0);
        }
    }
    close(pipefd[1]);
    FILE *in = fdopen(pipefd[0], "r");
    long total = 0, n;
    int err, first = 0;
    while (fscanf(in, "%ld %d", &n, &err) == 2) {
        total += n;
        if (err && !first)
            first = err;
    }
    while (wait(NULL) > 0) {
    }
    printf("opened=%ld first_error=%s\n", total, first ? strerrorname_np(first) : "none");
    return 0;
}
