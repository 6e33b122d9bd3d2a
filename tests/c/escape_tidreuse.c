/* Thread-id reuse (issue 17, item 11): a delegated call whose relative path depends on the
 * caller's cwd, while the caller dies and another thread takes its thread id.
 *
 *     escape_tidreuse DIR ROUNDS                 (then, exec'ed by itself: DIR ROUNDS R T0 WALK)
 *
 * Round R works in DIR/R/. The main thread L (its tid is the process's pid) has its cwd in a/;
 * a second thread T has a cwd of its own (unshare(CLONE_FS)) in b/. L asks the agent to
 *
 *     rename("DIR/R/links/l0/victim", "moved")
 *
 * The old path runs through a chain of 40 symlinks (the most a walk follows), each a long run
 * of "d/../", which the agent walks for a long while (about as long as `cal`, the same rename
 * timed while L lives) before it resolves the relative new name against the caller's cwd. As
 * soon as the agent is seen walking (the first link's atime moves: the agent has read it), T
 * calls execve: the kernel kills L, and T takes over L's thread id (de_thread). /proc/<that id>
 * now names T's new image, whose cwd is b/, while the agent still holds L's request.
 *
 * The agent must see that its caller is gone and do nothing: "moved_R" must not appear in any
 * other thread's cwd (b/, or a/ of the next round, where the new image goes on). The new image
 * reports the round's timing (WINDOW: window=1 when the exec was over before the agent could
 * have finished walking), runs the next round, and the last one waits for the agent and
 * reports every round:
 *
 *     RESULT attempt=tid_reuse_R ok=<moved_R is elsewhere> errno=ENOENT where=R/b/moved_R ...
 */
#include "escape_common.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define HOPS 40
#define RUNS 790 /* "d/../" five bytes each: a link's target stays under PATH_MAX */

static char *self_path, *base;
static int rounds, round_;
static char dir[4096];
static long long walk_ns;
static atomic_int ready, go;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void die(const char *what) {
    printf("FAILED %s: %s\n", what, strerror(errno));
    fflush(stdout);
    _exit(1);
}

static void mkdirs(const char *sub) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    if (mkdir(p, 0755) < 0)
        die(p);
}

/* DIR/R/NAME/l0 .. l39: each link a run of "d/../" then the next link; the last ends in ../a. */
static void chain(const char *name) {
    static char target[4096];
    char sub[64];
    snprintf(sub, sizeof sub, "%s", name);
    mkdirs(sub);
    snprintf(sub, sizeof sub, "%s/d", name);
    mkdirs(sub);
    for (int i = 0; i < HOPS; i++) {
        size_t o = 0;
        for (int j = 0; j < RUNS; j++)
            o += (size_t)snprintf(target + o, sizeof target - o, "d/../");
        if (i + 1 < HOPS)
            snprintf(target + o, sizeof target - o, "l%d", i + 1);
        else
            snprintf(target + o, sizeof target - o, "../a");
        char link[4200];
        snprintf(link, sizeof link, "%s/%s/l%d", dir, name, i);
        if (symlink(target, link) < 0)
            die(link);
    }
}

static void touch(const char *sub) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    int fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644);
    if (fd < 0)
        die(p);
    close(fd);
}

static struct timespec atime_of(const char *p) {
    struct stat st;
    if (lstat(p, &st) < 0)
        die(p);
    return st.st_atim;
}

/* T: a cwd of its own in b/, then execve as soon as the agent is seen walking L's path. */
static void *replacer(void *arg) {
    (void)arg;
    char b[4200], l0[4200];
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(l0, sizeof l0, "%s/links/l0", dir);
    if (unshare(CLONE_FS) < 0)
        die("unshare(CLONE_FS)");
    if (chdir(b) < 0)
        die(b);
    struct timespec before = atime_of(l0);
    atomic_store(&ready, 1);
    while (!atomic_load(&go))
        sched_yield();
    long long deadline = now_ns() + 20LL * 1000000000LL;
    for (;;) {
        struct timespec t = atime_of(l0);
        if (t.tv_sec != before.tv_sec || t.tv_nsec != before.tv_nsec)
            break;
        if (now_ns() > deadline) {
            printf("FAILED the agent never read the first link (is the file system noatime?)\n");
            fflush(stdout);
            _exit(1);
        }
        usleep(200);
    }
    char r[16], t0[32], w[32];
    snprintf(r, sizeof r, "%d", round_ + 1);
    snprintf(t0, sizeof t0, "%lld", now_ns());
    snprintf(w, sizeof w, "%lld", walk_ns);
    char *argv[] = {self_path, base, (char *)"", r, t0, w, NULL};
    char n[16];
    snprintf(n, sizeof n, "%d", rounds);
    argv[2] = n;
    execv(self_path, argv);
    die("execv");
    return NULL;
}

static void run_round(void) {
    snprintf(dir, sizeof dir, "%s/%d", base, round_);
    if (mkdir(dir, 0755) < 0)
        die(dir);
    mkdirs("a");
    mkdirs("b");
    touch("a/victim");
    touch("a/calfile");
    chain("links");
    chain("cal");
    char a[4200], p[4200];
    snprintf(a, sizeof a, "%s/a", dir);
    if (chdir(a) < 0)
        die(a);
    /* relatime moves an atime only past the file's ctime: let the clock tick first. */
    usleep(30 * 1000);
    /* The same walk for a caller that stays alive: how long the agent takes. */
    snprintf(p, sizeof p, "%s/cal/l0/calfile", dir);
    long long t = now_ns();
    if (rename(p, "calmoved") < 0)
        die("calibration rename");
    walk_ns = now_ns() - t;
    pthread_t th;
    if (pthread_create(&th, NULL, replacer, NULL) != 0)
        die("pthread_create");
    while (!atomic_load(&ready))
        sched_yield();
    atomic_store(&go, 1);
    snprintf(p, sizeof p, "%s/links/l0/victim", dir);
    char moved[32];
    snprintf(moved, sizeof moved, "moved_%d", round_);
    rename(p, moved);
    /* Answered before T's exec: the window was missed this round. T's exec ends us anyway. */
    for (;;)
        pause();
}

static int exists(int r, const char *sub) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%d/%s", base, r, sub);
    return lstat(p, &st) == 0;
}

/* Where round R's "moved_R" is, other than the caller's own a/ ("" when nowhere else): the
 * other thread's cwd was b/ of that round, and its new image moves on to a/ of the next. */
static const char *elsewhere(int r) {
    static char where[96];
    char sub[64];
    for (int k = 0; k <= rounds; k++)
        for (int ab = 0; ab < 2; ab++) {
            if (k == r && ab == 0)
                continue;
            snprintf(sub, sizeof sub, "%c/moved_%d", ab ? 'b' : 'a', r);
            if (exists(k, sub)) {
                snprintf(where, sizeof where, "%d/%s", k, sub);
                return where;
            }
        }
    return "";
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3 && argc != 6)
        return 2;
    self_path = argv[0];
    base = argv[1];
    rounds = atoi(argv[2]);
    if (argc == 6) {
        round_ = atoi(argv[3]);
        long long exec_ns = now_ns() - atoll(argv[4]);
        long long w = atoll(argv[5]);
        walk_ns = w;
        /* The exec ended (T is the new image, under L's id) before half the agent's walk. */
        printf("WINDOW round=%d window=%d walk_ms=%.1f exec_ms=%.1f\n", round_ - 1,
               exec_ns < w / 2, w / 1e6, exec_ns / 1e6);
        fflush(stdout);
    }
    if (round_ < rounds)
        run_round();
    /* Every agent walk is over well within this (each took walk_ms while its caller lived). */
    usleep((useconds_t)(walk_ns / 1000 * 3 + 500000));
    for (int r = 0; r < rounds; r++) {
        char name[32], own[32];
        snprintf(name, sizeof name, "tid_reuse_%d", r);
        snprintf(own, sizeof own, "a/moved_%d", r);
        /* ok=1: the new name was resolved against another thread's cwd. In the caller's own
         * a/ it means the agent answered L before the exec (a missed window). */
        const char *where = elsewhere(r);
        resultf(name, *where != 0, ENOENT, "where=%s own=%d victim=%d", *where ? where : "-",
                exists(r, own), exists(r, "a/victim"));
        /* The same walk for a live caller did what it asked: the walk itself works. */
        snprintf(name, sizeof name, "benign_cal_%d", r);
        result(name, exists(r, "a/calmoved"), ENOENT);
    }
    printf("DONE\n");
    return 0;
}
