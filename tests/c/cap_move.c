/* Links and renames between directory capabilities after cap_enter, as an exploited program
 * would try them to give a file more rights than it has (issue 35, findings 2 and 3). Run by
 * warden run --capsicum; every attempt prints one line, "NAME ok N" or "NAME errno=N", and the
 * test checks the outcome from outside.
 *
 *   cap_move BASE ROUNDS   BASE holds ro/ (read-only by the policy) and m/{rw,w,box,box2,race}/
 *                          (writable by it, one mount in a view); the program limits rw/ to lookup, box/ and
 *                          race/ to lookup,create (drop boxes), box2/ to lookup,create,unlink
 *                          (no read, no write), enters capability mode and tries each move,
 *                          then races ROUNDS renames into race/ against links made there
 *
 * Built with crates/warden-capsicum/c/capsicum.c and -lpthread. */
#define _GNU_SOURCE
#include "capsicum.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#define RENAME_WHITEOUT (1 << 2)
#endif

static void say(const char *name, long rc) {
    if (rc < 0)
        printf("%s errno=%d\n", name, errno);
    else
        printf("%s ok %ld\n", name, rc);
    fflush(stdout);
}

static int dir(const char *base, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", base, name);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        perror(p);
        exit(2);
    }
    return fd;
}

static void limit(const char *name, int fd, unsigned long long rights) {
    cap_rights_t r = {0};
    r.cr_rights = rights;
    say(name, cap_rights_limit(fd, &r));
}

static long rename2(int od, const char *o, int nd, const char *n, unsigned flags) {
    return syscall(SYS_renameat2, od, o, nd, n, flags);
}

/* Opens NAME beneath D for writing and writes TEXT over it. */
static long write_at(int d, const char *name, const char *text) {
    int fd = openat(d, name, O_WRONLY | O_TRUNC);
    if (fd < 0)
        return -1;
    long n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

static long make_at(int d, const char *name, const char *text) {
    int fd = openat(d, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    long n = write(fd, text, strlen(text));
    close(fd);
    return n;
}

/* The race: in each round one thread renames w/pay-K to race/t-K while another links
 * w/rvictim there. race/ has no unlink right, so exactly one of them may make t-K. */
static int w_fd, race_fd, rounds;
static pthread_barrier_t barrier;
static int a_ok, b_ok, both, a_other, b_other;
static char *b_won;

static void *linker(void *p) {
    (void)p;
    char t[64];
    for (int k = 0; k < rounds; k++) {
        snprintf(t, sizeof t, "t-%d", k);
        pthread_barrier_wait(&barrier);
        if (linkat(w_fd, "rvictim", race_fd, t, 0) == 0) {
            b_ok++;
            b_won[k] = 1;
        } else if (errno != EEXIST) {
            b_other = errno;
        }
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static void race(void) {
    pthread_t th;
    b_won = calloc(rounds, 1);
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&th, NULL, linker, NULL);
    char pay[64], t[64];
    for (int k = 0; k < rounds; k++) {
        snprintf(pay, sizeof pay, "pay-%d", k);
        snprintf(t, sizeof t, "t-%d", k);
        make_at(w_fd, pay, "payload\n");
        pthread_barrier_wait(&barrier);
        int ok = renameat(w_fd, pay, race_fd, t) == 0;
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
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cap_move BASE ROUNDS\n");
        return 2;
    }
    const char *base = argv[1];
    rounds = atoi(argv[2]);
    int ro = dir(base, "ro"), lk = dir(base, "m/rw"), w = dir(base, "m/w");
    int box = dir(base, "m/box"), box2 = dir(base, "m/box2");
    w_fd = w;
    race_fd = dir(base, "m/race");
    /* The policy refuses this before capability mode (ro/ is read-only there). */
    say("before-link-ro", linkat(ro, "f", w, "ro-before", 0));
    limit("limit-lookup", lk, CAP_LOOKUP | CAP_FSTAT);
    limit("limit-box", box, CAP_LOOKUP | CAP_CREATE | CAP_FSTAT);
    limit("limit-box2", box2, CAP_LOOKUP | CAP_CREATE | CAP_UNLINKAT | CAP_FSTAT);
    limit("limit-race", race_fd, CAP_LOOKUP | CAP_CREATE | CAP_FSTAT);
    say("enter", cap_enter());

    /* Finding 2: a hard link gives the file the rights of the directory it is linked into. */
    say("link-ro", linkat(ro, "f", w, "ro-link", 0));
    say("write-ro-link", write_at(w, "ro-link", "PWNED\n"));
    say("link-lookup", linkat(lk, "secret", w, "secret-link", 0));
    say("write-secret-link", write_at(w, "secret-link", "PWNED\n"));
    /* Finding 3: an exchange is two moves; an overwrite is an unlink. */
    say("exchange-box", rename2(box, "existing", w, "decoy", RENAME_EXCHANGE));
    say("exchange-box2", rename2(box2, "existing2", w, "decoy", RENAME_EXCHANGE));
    say("rename-box2-out", renameat(box2, "existing2", w, "pulled"));
    say("write-pulled", write_at(w, "pulled", "PWNED\n"));
    say("overwrite-box", renameat(w, "pay", box, "existing"));
    say("noreplace-box", rename2(w, "pay", box, "existing", RENAME_NOREPLACE));
    say("whiteout", rename2(w, "pay", w, "wo", RENAME_WHITEOUT));
    say("exchange-noreplace", rename2(w, "pay", w, "decoy", RENAME_EXCHANGE | RENAME_NOREPLACE));

    /* Within the rights, all of it still works. */
    say("drop", renameat(w, "pay", box, "dropped"));
    say("link-in", linkat(w, "decoy", w, "decoy-link", 0));
    say("link-into-box", linkat(w, "victim", box, "victim-link", 0));
    say("rename-in", renameat(w, "decoy-link", w, "moved"));
    say("exchange-in", rename2(w, "decoy", w, "a", RENAME_EXCHANGE));
    say("overwrite-in", renameat(w, "a", w, "b"));
    say("noreplace-in", rename2(w, "b", w, "c", RENAME_NOREPLACE));
    say("into-box2", renameat(w, "c", box2, "c"));
    say("box2-within", renameat(box2, "c", box2, "c2"));

    race();
    return 0;
}
