/* limit_sigterm MARKER K: a process tree that ignores SIGTERM (issue #4). Runs inside the sandbox.
 *
 * The parent ignores SIGTERM and starts K children; each child moves to a session of its own
 * (out of the parent's process group) and starts one grandchild. Everyone loops forever, waking
 * every millisecond. The parent prints "started N" (N = processes in the tree) once all are
 * running. Only SIGKILL of the whole tree ends it. MARKER lets the test find the tree in /proc. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void loop_forever(void) {
    for (;;)
        usleep(1000);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 3) {
        fprintf(stderr, "usage: limit_sigterm MARKER K\n");
        return 3;
    }
    int k = atoi(argv[2]);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    int ready[2];
    if (pipe(ready) < 0)
        return 3;
    for (int i = 0; i < k; i++) {
        pid_t p = fork();
        if (p < 0)
            return 3;
        if (p == 0) {
            setsid();
            pid_t g = fork();
            if (g == 0) {
                close(ready[0]);
                (void)!write(ready[1], "g", 1);
                loop_forever();
            }
            close(ready[0]);
            (void)!write(ready[1], "c", 1);
            loop_forever();
        }
    }
    close(ready[1]);
    int n = 1;
    char c;
    while (n < 1 + 2 * k && read(ready[0], &c, 1) == 1)
        n++;
    printf("started %d\n", n);
    loop_forever();
}
