/* limit_fork: process and thread counts for the limits suite (issue #4). Runs inside the sandbox.
 *
 *   limit_fork MARKER bomb MAX      fork up to MAX children, each of which sleeps forever; stop
 *                                   at the first failure. Prints "forks=K errno=NAME" (NAME
 *                                   "none" if all MAX succeeded) and exits 0 WITHOUT reaping the
 *                                   children: the sandbox must get rid of them.
 *   limit_fork MARKER threads MAX   the same with threads: "threads=K errno=NAME", exit 0.
 *   limit_fork MARKER children K    K children that each sleep 0.2 s and exit 0; the parent
 *                                   waits for all and prints "children=K ok" (exit 0), or
 *                                   "fork failed ..." (exit 3).
 *
 * MARKER is only there so that the test can find every process of the run in /proc from
 * outside (children share the parent's command line). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 4) {
        fprintf(stderr, "usage: limit_fork MARKER bomb|threads|children N\n");
        return 3;
    }
    const char *mode = argv[2];
    int n = atoi(argv[3]);
    if (strcmp(mode, "bomb") == 0) {
        int got = 0, err = 0;
        for (; got < n; got++) {
            pid_t p = fork();
            if (p < 0) {
                err = errno;
                break;
            }
            if (p == 0) {
                for (;;)
                    pause();
            }
        }
        printf("forks=%d errno=%s\n", got, err ? strerrorname_np(err) : "none");
        return 0;
    }
    if (strcmp(mode, "threads") == 0) {
        int got = 0, err = 0;
        for (; got < n; got++) {
            pthread_t t;
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setstacksize(&a, 64 * 1024);
            int e = pthread_create(&t, &a, sleeper, NULL);
            pthread_attr_destroy(&a);
            if (e != 0) {
                err = e;
                break;
            }
        }
        printf("threads=%d errno=%s\n", got, err ? strerrorname_np(err) : "none");
        fflush(stdout);
        _exit(0);
    }
    if (strcmp(mode, "children") == 0) {
        for (int i = 0; i < n; i++) {
            pid_t p = fork();
            if (p < 0) {
                printf("fork failed after %d: %s\n", i, strerrorname_np(errno));
                return 3;
            }
            if (p == 0) {
                usleep(200000);
                _exit(0);
            }
        }
        for (int i = 0; i < n; i++) {
            int st;
            if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("child failed\n");
                return 3;
            }
        }
        printf("children=%d ok\n", n);
        return 0;
    }
    fprintf(stderr, "limit_fork: unknown mode %s\n", mode);
    return 3;
}
