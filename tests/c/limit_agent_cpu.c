/* Makes the agent do the work: eight threads stat() a 4000-byte path in a loop, so nearly all
 * the CPU is burnt in warden's agent, not in the sandbox's processes. Under --time the run must
 * still end as a timeout (issue 18, item 1). Runs until killed, or ARGV[1] seconds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char path[4001];
static volatile int stop;
static volatile long calls;

static void *storm(void *arg) {
    (void)arg;
    struct stat st;
    while (!stop) {
        stat(path, &st);
        __sync_fetch_and_add(&calls, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 30;
    /* "/a/a/a/...": absent, so every call walks its directories and is refused. */
    for (int i = 0; i < 4000; i += 2) {
        path[i] = '/';
        path[i + 1] = 'a';
    }
    path[4000] = 0;
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, storm, NULL);
    sleep(seconds);
    stop = 1;
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    printf("calls=%ld\n", calls);
    return 0;
}
