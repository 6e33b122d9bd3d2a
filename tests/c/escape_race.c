/* Races against the agent's check (issue #2, items 5 and 6). cwd: scratch.
 *
 * usage: escape_race MODE SECRET_FILE ALLOWED_FILE SECRET_INO MS
 *   SECRET_FILE and ALLOWED_FILE have the same basename, in two different directories; the
 *   secret's content starts with "TOPSECRET", the allowed file's with "ALLOWED".
 *   SECRET_INO is the secret's inode number (seen from outside), to spot a leaked stat.
 *   MS is how long the race runs at least, in milliseconds. It goes on (up to 10 x MS) until
 *   the benign side has succeeded once: on a loaded machine the flipping thread and the racing
 *   one may share a CPU, and a time slice then sees only one state of the buffer.
 * MODE:
 *   symlink  one thread renames prepared symlinks over "target" (to the allowed file, then to
 *            the secret, and so on) while two threads open and stat "target" in a loop;
 *   dirlink  the same with a directory component: "d" flips between symlinks to the two
 *            directories while the readers open "d/<basename>";
 *   pathbuf  one thread rewrites the path buffer between the two absolute paths while two
 *            threads open and stat the buffer;
 *   chdir    one thread rewrites a buffer between the two directories while the main thread
 *            chdirs to it and opens "<basename>" relative to wherever it landed.
 * Prints one RESULT line with counters: allowed= (benign reads), secret= (reads of the
 * secret), stat_secret= (stats that returned the secret's inode), other=, errors=.
 */
#include "escape_common.h"
#include <libgen.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>

static const char *mode, *secret, *allowed;
static char secret_dir[4096], allowed_dir[4096], base[256];
static unsigned long long secret_ino;
static atomic_int stop;
static atomic_ulong n_allowed, n_secret, n_stat_secret, n_other, n_errors, n_flips, n_landed, n_listed;
static atomic_ulong n_chdir_errors;
static double race_end, race_last;

/* The race is over: it ran its time and saw the benign side, or ran ten times its time. */
static int race_over(void) {
    double t = now_s();
    return t >= race_end && (atomic_load(&n_allowed) > 0 || t >= race_last);
}
static char sample_other[80];
static char pathbuf[4096];

static void classify(const char *buf, ssize_t n) {
    if (n >= 7 && memcmp(buf, "ALLOWED", 7) == 0)
        atomic_fetch_add(&n_allowed, 1);
    else if (n >= 9 && memcmp(buf, "TOPSECRET", 9) == 0)
        atomic_fetch_add(&n_secret, 1);
    else {
        atomic_fetch_add(&n_other, 1);
        sanitize(buf, n, sample_other, sizeof sample_other);
    }
}

static void read_one(const char *path) {
    char buf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        atomic_fetch_add(&n_errors, 1);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n > 0)
        classify(buf, n);
    else
        atomic_fetch_add(&n_errors, 1);
}

static void stat_one(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && (unsigned long long)st.st_ino == secret_ino)
        atomic_fetch_add(&n_stat_secret, 1);
}

static void *flipper(void *arg) {
    (void)arg;
    char target_path[4096];
    const char *name = strcmp(mode, "dirlink") == 0 ? "d" : "target";
    const char *a = strcmp(mode, "dirlink") == 0 ? allowed_dir : allowed;
    const char *s = strcmp(mode, "dirlink") == 0 ? secret_dir : secret;
    while (!atomic_load(&stop)) {
        for (int i = 0; i < 2; i++) {
            snprintf(target_path, sizeof target_path, "%s", i ? s : a);
            unlink("tmp");
            if (symlink(target_path, "tmp") == 0 && rename("tmp", name) == 0)
                atomic_fetch_add(&n_flips, 1);
        }
    }
    return NULL;
}

static void *rewriter(void *arg) {
    const char *a = arg == NULL ? allowed : allowed_dir;
    const char *s = arg == NULL ? secret : secret_dir;
    size_t la = strlen(a) + 1, ls = strlen(s) + 1;
    while (!atomic_load(&stop)) {
        memcpy(pathbuf, a, la);
        for (volatile int i = 0; i < 50; i++) {
        }
        memcpy(pathbuf, s, ls);
        for (volatile int i = 0; i < 50; i++) {
        }
        atomic_fetch_add(&n_flips, 1);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    char p[4096];
    unsigned long i = 0;
    while (!atomic_load(&stop)) {
        if (strcmp(mode, "symlink") == 0) {
            read_one("target");
            if (++i % 4 == 0)
                stat_one("target");
        } else if (strcmp(mode, "dirlink") == 0) {
            snprintf(p, sizeof p, "d/%s", base);
            read_one(p);
            if (++i % 4 == 0)
                stat_one(p);
        } else {
            read_one(pathbuf);
            if (++i % 4 == 0)
                stat_one(pathbuf);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 6) {
        fprintf(stderr, "usage: %s MODE SECRET_FILE ALLOWED_FILE SECRET_INO MS\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    secret = argv[2];
    allowed = argv[3];
    secret_ino = strtoull(argv[4], NULL, 10);
    double seconds = atoi(argv[5]) / 1000.0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", secret);
    snprintf(secret_dir, sizeof secret_dir, "%s", dirname(tmp));
    snprintf(tmp, sizeof tmp, "%s", allowed);
    snprintf(allowed_dir, sizeof allowed_dir, "%s", dirname(tmp));
    snprintf(tmp, sizeof tmp, "%s", secret);
    snprintf(base, sizeof base, "%s", basename(tmp));
    snprintf(pathbuf, sizeof pathbuf, "%s", allowed);

    pthread_t flip, r1, r2;
    double start = now_s();
    race_end = start + seconds;
    race_last = start + 10 * seconds;
    if (strcmp(mode, "chdir") == 0) {
        int home = open(".", O_RDONLY | O_DIRECTORY);
        pthread_create(&flip, NULL, rewriter, (void *)1);
        char cwd[4096];
        unsigned failed_in_a_row = 0;
        while (!race_over()) {
            if (chdir(pathbuf) == 0) {
                failed_in_a_row = 0;
                if (getcwd(cwd, sizeof cwd) && strcmp(cwd, secret_dir) == 0) {
                    atomic_fetch_add(&n_landed, 1);
                    /* Landed in the hidden directory: it must not be listable either. */
                    int d = open(".", O_RDONLY | O_DIRECTORY);
                    if (d >= 0) {
                        atomic_fetch_add(&n_listed, 1);
                        close(d);
                    }
                }
                read_one(base);
                stat_one(base);
                fchdir(home);
            } else {
                atomic_fetch_add(&n_errors, 1);
                atomic_fetch_add(&n_chdir_errors, 1);
                /* Sharing a CPU with the rewriter, this slice may only ever see one state. */
                if (++failed_in_a_row % 256 == 0)
                    sched_yield();
            }
        }
        atomic_store(&stop, 1);
        pthread_join(flip, NULL);
    } else {
        if (strcmp(mode, "pathbuf") == 0)
            pthread_create(&flip, NULL, rewriter, NULL);
        else
            pthread_create(&flip, NULL, flipper, NULL);
        pthread_create(&r1, NULL, reader, NULL);
        pthread_create(&r2, NULL, reader, NULL);
        while (!race_over())
            usleep(20000);
        atomic_store(&stop, 1);
        pthread_join(flip, NULL);
        pthread_join(r1, NULL);
        pthread_join(r2, NULL);
    }
    unsigned long s = atomic_load(&n_secret), st = atomic_load(&n_stat_secret);
    char attempt[64];
    snprintf(attempt, sizeof attempt, "race_%s", mode);
    resultf(attempt, s > 0 || st > 0 || atomic_load(&n_listed) > 0, EACCES, "allowed=%lu secret=%lu stat_secret=%lu other=%lu errors=%lu flips=%lu landed_in_secret_dir=%lu listed_secret_dir=%lu chdir_errors=%lu ran_ms=%.0f sample_other=%s",
            atomic_load(&n_allowed), s, st, atomic_load(&n_other), atomic_load(&n_errors), atomic_load(&n_flips),
            atomic_load(&n_landed), atomic_load(&n_listed), atomic_load(&n_chdir_errors),
            (now_s() - start) * 1000, sample_other[0] ? sample_other : "-");
    done();
    return 0;
}
