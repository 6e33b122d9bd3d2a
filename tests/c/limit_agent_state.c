/* Makes the agent hold as much as a walk can for the sandbox, in as many requests at once as
 * it will take: THREADS threads stat() DIR/links/l0/f, whose walk follows 40 symlinks (the most
 * a walk follows), each target the next link and then 4 KiB of "d/../", so that every walk
 * keeps 40 targets pending while it works through them (tens of milliseconds of the agent's
 * time each). Under --mem the agent serves only as many requests at once as the limit pays for
 * (issue 17); the test counts warden's agent threads from outside while this runs.
 *
 *     limit_agent_state DIR THREADS SECONDS [MARKER]
 *
 * Prints calls=N (the stats that came back) and errno=E (what they answered: ENOENT, since f
 * does not exist).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOPS 40
#define RUNS 790

static char path[4200];
static volatile int stop;
static volatile long calls;
static volatile int last_errno;

static void *storm(void *arg) {
    (void)arg;
    struct stat st;
    while (!stop) {
        if (stat(path, &st) < 0)
            last_errno = errno;
        __sync_fetch_and_add(&calls, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4)
        return 2;
    const char *dir = argv[1];
    int threads = atoi(argv[2]), seconds = atoi(argv[3]);
    char p[4200];
    static char target[4096];
    snprintf(p, sizeof p, "%s/links", dir);
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return perror(p), 1;
    snprintf(p, sizeof p, "%s/links/d", dir);
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return perror(p), 1;
    for (int i = 0; i < HOPS; i++) {
        size_t o = 0;
        if (i + 1 < HOPS)
            o += (size_t)snprintf(target, sizeof target, "l%d/", i + 1);
        for (int j = 0; j < RUNS; j++)
            o += (size_t)snprintf(target + o, sizeof target - o, "d/../");
        snprintf(target + o, sizeof target - o, "d");
        snprintf(p, sizeof p, "%s/links/l%d", dir, i);
        if (symlink(target, p) < 0 && errno != EEXIST)
            return perror(p), 1;
    }
    snprintf(path, sizeof path, "%s/links/l0/f", dir);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t t[256];
    if (threads > 256)
        threads = 256;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], &attr, storm, NULL) != 0)
            return perror("pthread_create"), 1;
    sleep(seconds);
    stop = 1;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("calls=%ld errno=%s\n", calls, strerrorname_np(last_errno) ? strerrorname_np(last_errno) : "0");
    return 0;
}
