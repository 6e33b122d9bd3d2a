/* Creates files and directories through the agent while another thread sprays signals at the
 * creating thread: `signal_storm DIR N` makes DIR/fI with open(O_CREAT|O_EXCL) and DIR/dI with
 * mkdir for I in 0..N, in a thread that a second thread interrupts with SIGUSR1 (an SA_RESTART
 * handler that only counts) as fast as it can. Each name is fresh, so each call must succeed
 * exactly once: an EEXIST says the agent performed an interrupted call and the restarted one
 * found its work (what WAIT_KILLABLE_RECV prevents, and what warden must handle without it).
 *
 * Prints "created F dirs D failed X signals S" and, for each failure, "fail NAME errno".
 * The test checks the directory from outside too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_long signals;
static atomic_int done;
static const char *dir;
static int n;
static int created, dirs, failed;

static void counted(int sig) {
    (void)sig;
    atomic_fetch_add(&signals, 1);
}

static void *creator(void *arg) {
    (void)arg;
    char name[4096];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s/f%d", dir, i);
        int fd = open(name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) {
            failed++;
            printf("fail %s %d\n", name, errno);
        } else {
            created++;
            close(fd);
        }
        snprintf(name, sizeof name, "%s/d%d", dir, i);
        if (mkdir(name, 0755) < 0) {
            failed++;
            printf("fail %s %d\n", name, errno);
        } else {
            dirs++;
        }
    }
    atomic_store(&done, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: signal_storm DIR N\n");
        return 2;
    }
    dir = argv[1];
    n = atoi(argv[2]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = counted;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, creator, NULL)) {
        perror("pthread_create");
        return 2;
    }
    while (!atomic_load(&done)) {
        pthread_kill(t, SIGUSR1);
    }
    pthread_join(t, NULL);
    printf("created %d dirs %d failed %d signals %ld\n", created, dirs, failed, atomic_load(&signals));
    return failed ? 1 : 0;
}
