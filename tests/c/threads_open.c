/* threads_open: many threads doing delegated path calls at once.
 *
 * Usage: threads_open DATA_DIR [THREADS] [ITERATIONS]
 *
 * Each thread, ITERATIONS times: opens, reads and closes DATA_DIR/a.txt and DATA_DIR/b.txt
 * (which must hold "alpha\n" and "bravo\n"), creates a file of its own in the current
 * directory, writes to it, closes and unlinks it. Every 100 iterations it also tries to
 * open /etc/shadow and expects EACCES.
 *
 * Prints one line of totals:
 *   threads=T opens=N reads=N creates=N unlinks=N denied=N errors=N
 * and exits 0 when every call behaved, 1 otherwise (the first failures are on stderr). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *data_dir;
static int iterations = 2000;

struct counts {
    long opens, reads, creates, unlinks, denied, errors;
};

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static int reported;

static void fail(struct counts *c, const char *what, const char *path, int err) {
    c->errors++;
    pthread_mutex_lock(&report_lock);
    if (reported++ < 20)
        fprintf(stderr, "threads_open: %s %s: %s\n", what, path, strerror(err));
    pthread_mutex_unlock(&report_lock);
}

static void read_one(struct counts *c, const char *path, const char *want) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fail(c, "open", path, errno);
        return;
    }
    c->opens++;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0)
        c->reads++;
    else
        fail(c, "read", path, n < 0 ? errno : EIO);
    if (close(fd) != 0)
        fail(c, "close", path, errno);
}

static void *worker(void *arg) {
    long id = (long)arg;
    struct counts *c = calloc(1, sizeof *c);
    char a[4096], b[4096], mine[64];
    snprintf(a, sizeof a, "%s/a.txt", data_dir);
    snprintf(b, sizeof b, "%s/b.txt", data_dir);
    for (int i = 0; i < iterations; i++) {
        read_one(c, (i & 1) ? b : a, (i & 1) ? "bravo\n" : "alpha\n");

        snprintf(mine, sizeof mine, "t%ld-%d.tmp", id, i);
        int fd = open(mine, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            fail(c, "create", mine, errno);
        } else {
            c->creates++;
            if (write(fd, "x", 1) != 1)
                fail(c, "write", mine, errno);
            close(fd);
            if (unlink(mine) == 0)
                c->unlinks++;
            else
                fail(c, "unlink", mine, errno);
        }

        if (i % 100 == 0) {
            int s = open("/etc/shadow", O_RDONLY | O_CLOEXEC);
            if (s >= 0) {
                close(s);
                fail(c, "open (should be denied)", "/etc/shadow", 0);
            } else if (errno == EACCES) {
                c->denied++;
            } else {
                fail(c, "open (wrong errno)", "/etc/shadow", errno);
            }
        }
    }
    return c;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: threads_open DATA_DIR [THREADS] [ITERATIONS]\n");
        return 2;
    }
    data_dir = argv[1];
    int nthreads = argc > 2 ? atoi(argv[2]) : 8;
    if (argc > 3)
        iterations = atoi(argv[3]);
    if (nthreads < 1 || nthreads > 256 || iterations < 1) {
        fprintf(stderr, "threads_open: bad thread or iteration count\n");
        return 2;
    }
    pthread_t tids[256];
    for (long t = 0; t < nthreads; t++) {
        int e = pthread_create(&tids[t], NULL, worker, (void *)t);
        if (e != 0) {
            fprintf(stderr, "threads_open: pthread_create: %s\n", strerror(e));
            return 1;
        }
    }
    struct counts total = {0};
    for (int t = 0; t < nthreads; t++) {
        struct counts *c;
        pthread_join(tids[t], (void **)&c);
        total.opens += c->opens;
        total.reads += c->reads;
        total.creates += c->creates;
        total.unlinks += c->unlinks;
        total.denied += c->denied;
        total.errors += c->errors;
        free(c);
    }
    printf("threads=%d opens=%ld reads=%ld creates=%ld unlinks=%ld denied=%ld errors=%ld\n", nthreads,
           total.opens, total.reads, total.creates, total.unlinks, total.denied, total.errors);
    return total.errors == 0 ? 0 : 1;
}
