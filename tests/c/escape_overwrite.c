/* A rename racing a name made at its destination, where the policy gives no unlink: whatever
 * is there when the rename happens may not be replaced (replacing is removing).
 *
 *   escape_overwrite SRC DST ROUNDS   each round one thread renames SRC/pay-K to DST/t-K while
 *                                     another creates DST/t-K ("victim"); prints
 *                                     "race rounds=N a=RENAMED b=CREATED both=BOTH ..." */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *src, *dst;
static int rounds, a_ok, b_ok, both, a_other, b_other;
static char *b_won;
static pthread_barrier_t barrier;

static void *creator(void *p) {
    (void)p;
    char t[4096];
    for (int k = 0; k < rounds; k++) {
        snprintf(t, sizeof t, "%s/t-%d", dst, k);
        pthread_barrier_wait(&barrier);
        int fd = open(t, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            if (write(fd, "victim\n", 7) == 7)
                b_won[k] = 1;
            close(fd);
            b_ok++;
        } else if (errno != EEXIST) {
            b_other = errno;
        }
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: escape_overwrite SRC DST ROUNDS\n");
        return 2;
    }
    src = argv[1];
    dst = argv[2];
    rounds = atoi(argv[3]);
    b_won = calloc(rounds, 1);
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t th;
    pthread_create(&th, NULL, creator, NULL);
    char pay[4096], t[4096];
    for (int k = 0; k < rounds; k++) {
        snprintf(pay, sizeof pay, "%s/pay-%d", src, k);
        snprintf(t, sizeof t, "%s/t-%d", dst, k);
        int fd = open(pay, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            if (write(fd, "payload\n", 8) != 8)
                a_other = EIO;
            close(fd);
        }
        pthread_barrier_wait(&barrier);
        int ok = rename(pay, t) == 0;
        if (!ok && errno != EACCES && errno != EEXIST)
            a_other = errno;
        pthread_barrier_wait(&barrier);
        if (ok) {
            a_ok++;
            if (b_won[k])
                both++;
        }
    }
    pthread_join(th, NULL);
    printf("race rounds=%d a=%d b=%d both=%d a-other=%d b-other=%d\n", rounds, a_ok, b_ok, both,
           a_other, b_other);
    return 0;
}
