/* The agent as a confused deputy (issue 17): each mode asks the agent, which acts with warden's
 * privileges, to do something the policy does not grant, directly or through a race.
 *
 *     escape_deputy meta ROFILE WDIR        xattrs outside user.*, inode flags, leases
 *     escape_deputy proc                    /proc/thread-self/.. checked as something else
 *     escape_deputy probe HIDDEN MISSING REL  hidden/../REL vs missing/../REL must look alike
 *     escape_deputy devices                 devices under a directory rule
 *     escape_deputy tmpfile DIR NOWRITE     O_TMPFILE while DIR is swapped with a symlink
 *     escape_deputy creat DROPBOX           O_CREAT|O_RDWR while an unreadable file is linked in
 *     escape_deputy unixrace DIR HOSTSOCK   connect while the socket is swapped with a symlink
 *     escape_deputy deep DIR                a deep tree: bounded walks, ENAMETOOLONG past them
 *
 * Every attempt prints a RESULT line (escape_common.h); ok=1 means it reached what it tried.
 */
#include "escape_common.h"
#include <linux/fs.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>

static volatile int stop;

/* A v2 security.capability blob granting CAP_DAC_OVERRIDE (permitted, effective). */
static const unsigned char fcap[20] = {0x01, 0x00, 0x00, 0x02, 0x02, 0, 0, 0, 0, 0, 0, 0,
                                       0,    0,    0,    0,    0,    0, 0, 0};

static void meta(const char *rofile, const char *wdir) {
    char f[4096];
    snprintf(f, sizeof f, "%s/x", wdir);
    int w = open(f, O_CREAT | O_WRONLY, 0644);
    result_rc("create_x", w);
    result_rc("xattr_user", setxattr(f, "user.warden", "1", 1, 0));
    result_rc("xattr_cap", setxattr(f, "security.capability", fcap, sizeof fcap, 0));
    result_rc("xattr_trusted", setxattr(f, "trusted.warden", "1", 1, 0));
    result_rc("fxattr_cap", w < 0 ? -1 : fsetxattr(w, "security.capability", fcap, sizeof fcap, 0));
    result_rc("lxattr_trusted", lsetxattr(f, "trusted.warden2", "1", 1, 0));
    int r = open(rofile, O_RDONLY);
    result_rc("open_ro", r);
    long flags = 0;
    int got = ioctl(r, FS_IOC_GETFLAGS, &flags);
    flags |= FS_NODUMP_FL;
    result_rc("setflags", got < 0 ? -1 : ioctl(r, FS_IOC_SETFLAGS, &flags));
    int f32 = (int)flags;
    result_rc("setflags32", ioctl(r, _IOW('f', 2, int), &f32));
    result_rc("lease", fcntl(r, F_SETLEASE, F_RDLCK));
    printf("DONE\n");
}

static void proc_(void) {
    const char *paths[] = {"/proc/thread-self/../../environ", "/proc/thread-self/../../../self/environ"};
    const char *names[] = {"thread_self_dotdot", "thread_self_dotdot3"};
    for (int i = 0; i < 2; i++) {
        int fd = open(paths[i], O_RDONLY);
        if (fd < 0) {
            result(names[i], 0, errno);
            continue;
        }
        report_fd_read(names[i], fd);
        close(fd);
    }
    int fd = open("/proc/thread-self/comm", O_RDONLY);
    if (fd < 0)
        result("benign_thread_self_comm", 0, errno);
    else
        report_fd_read("benign_thread_self_comm", fd);
    printf("DONE\n");
}

static void probe(const char *hidden, const char *missing, const char *rel) {
    char a[4096], b[4096];
    struct stat st;
    snprintf(a, sizeof a, "%s/../%s", hidden, rel);
    snprintf(b, sizeof b, "%s/../%s", missing, rel);
    int fa = open(a, O_RDONLY), ea = errno;
    resultf("open_via_hidden", fa >= 0, ea, "");
    int fb = open(b, O_RDONLY), eb = errno;
    resultf("open_via_missing", fb >= 0, eb, "");
    int sa = stat(a, &st), esa = errno;
    resultf("stat_via_hidden", sa == 0, esa, "");
    int sb = stat(b, &st), esb = errno;
    resultf("stat_via_missing", sb == 0, esb, "");
    printf("SAME open=%d stat=%d\n", (fa >= 0) == (fb >= 0) && ea == eb, (sa == 0) == (sb == 0) && esa == esb);
    printf("DONE\n");
}

static void devices(void) {
    int fd = open("/dev/null", O_RDONLY);
    result_rc("benign_dev_null", fd);
    const char *devs[] = {"/dev/kmsg", "/dev/loop0", "/dev/vda"};
    const char *names[] = {"dev_kmsg", "dev_loop0", "dev_vda"};
    for (int i = 0; i < 3; i++) {
        fd = open(devs[i], O_RDONLY);
        if (fd < 0 && errno == ENOENT)
            continue;
        result_rc(names[i], fd);
    }
    printf("DONE\n");
}

struct swap {
    const char *a, *b;
};

static void *swapper(void *arg) {
    struct swap *s = arg;
    while (!stop)
        syscall(SYS_renameat2, AT_FDCWD, s->a, AT_FDCWD, s->b, 2 /* RENAME_EXCHANGE */);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void tmpfile_(const char *dir, const char *nowrite) {
    /* DIR/d is a directory the policy lets us write; DIR/l a symlink to NOWRITE. */
    char d[4096], l[4096];
    snprintf(d, sizeof d, "%s/d", dir);
    snprintf(l, sizeof l, "%s/l", dir);
    mkdir(d, 0755);
    int sl = symlink(nowrite, l);
    result_rc("benign_setup", sl);
    int fd = open(d, O_TMPFILE | O_RDWR, 0600);
    result_rc("benign_tmpfile", fd);
    if (fd >= 0)
        close(fd);
    struct swap s = {d, l};
    pthread_t t;
    pthread_create(&t, NULL, swapper, &s);
    int won = 0, tries = 0, opened = 0;
    double end = now() + 1.5;
    while (now() < end && tries < 200000 && !won) {
        tries++;
        fd = open(d, O_TMPFILE | O_RDWR, 0600);
        if (fd < 0)
            continue;
        opened++;
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            if (strncmp(target, nowrite, strlen(nowrite)) == 0)
                won = 1;
        }
        close(fd);
    }
    stop = 1;
    pthread_join(t, NULL);
    resultf("tmpfile_race", won, EACCES, "tries=%d opened=%d", tries, opened);
    printf("DONE\n");
}

static void *linker(void *arg) {
    const char **p = arg;
    while (!stop) {
        link(p[0], p[1]);
        unlink(p[1]);
    }
    return NULL;
}

static void creat_(const char *dropbox) {
    /* DROPBOX/secret holds what we may not read; DROPBOX/new is linked to it and unlinked. */
    char secret[4096], fresh[4096];
    snprintf(secret, sizeof secret, "%s/secret", dropbox);
    snprintf(fresh, sizeof fresh, "%s/new", dropbox);
    int fd = open(secret, O_RDONLY);
    resultf("read_secret", fd >= 0, errno, "");
    const char *p[2] = {secret, fresh};
    pthread_t t;
    pthread_create(&t, NULL, linker, p);
    int won = 0, tries = 0;
    char buf[65];
    double end = now() + 1.5;
    while (now() < end && tries < 200000 && !won) {
        tries++;
        fd = open(fresh, O_CREAT | O_RDWR, 0644);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, 64);
        if (n > 0) {
            won = 1;
            report_fd_read("creat_race_data", fd);
            char clean[80];
            buf[n] = 0;
            sanitize(buf, n, clean, sizeof clean);
            printf("LEAK data=%s\n", clean);
        }
        close(fd);
        unlink(fresh);
    }
    stop = 1;
    pthread_join(t, NULL);
    resultf("creat_race", won, EACCES, "tries=%d", tries);
    printf("DONE\n");
}

static void unixrace(const char *dir, const char *hostsock) {
    /* DIR/s: our own listening socket (allowed); DIR/l: a symlink to HOSTSOCK. */
    char s[4096], l[4096];
    snprintf(s, sizeof s, "%s/s", dir);
    snprintf(l, sizeof l, "%s/l", dir);
    int srv = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(s) >= sizeof a.sun_path) {
        result("benign_bind", 0, ENAMETOOLONG);
        return;
    }
    memcpy(a.sun_path, s, strlen(s) + 1);
    int b = bind(srv, (struct sockaddr *)&a, sizeof a);
    result_rc("benign_bind", b);
    listen(srv, 4096);
    fcntl(srv, F_SETFL, O_NONBLOCK);
    symlink(hostsock, l);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    result_rc("benign_connect", connect(c, (struct sockaddr *)&a, sizeof a));
    close(c);
    struct swap sw = {s, l};
    pthread_t t;
    pthread_create(&t, NULL, swapper, &sw);
    int tries = 0, connected = 0;
    double end = now() + 1.5;
    while (now() < end && tries < 100000) {
        tries++;
        c = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&a, sizeof a) == 0)
            connected++;
        close(c);
        /* Drain our own backlog so it never fills. */
        int acc;
        while ((acc = accept4(srv, NULL, NULL, SOCK_NONBLOCK)) >= 0)
            close(acc);
    }
    stop = 1;
    pthread_join(t, NULL);
    resultf("unix_race", 0, EACCES, "tries=%d connected=%d", tries, connected);
    printf("DONE\n");
}

struct walker {
    const char *path;
    int errs, ok;
};

static void *walk_storm(void *arg) {
    struct walker *w = arg;
    struct stat st;
    while (!stop) {
        if (stat(w->path, &st) == 0)
            w->ok++;
        else
            w->errs++;
    }
    return NULL;
}

static void deep(const char *dir) {
    /* 300 levels of 12-character names: past the agent's 256 held directories. */
    if (chdir(dir) != 0) {
        result("chdir", 0, errno);
        return;
    }
    int top = open(".", O_PATH | O_DIRECTORY);
    char name[] = "dddddddddddd";
    int made = 0;
    for (int i = 0; i < 300; i++) {
        if (mkdir(name, 0755) != 0 && errno != EEXIST)
            break;
        if (chdir(name) != 0)
            break;
        made++;
    }
    resultf("benign_made", made >= 200, errno, "levels=%d", made);
    fchdir(top);
    /* A relative path through 280 levels: ENAMETOOLONG from the agent, not memory. */
    static char path[8192];
    size_t o = 0;
    for (int i = 0; i < 280 && o + 14 < sizeof path; i++)
        o += snprintf(path + o, sizeof path - o, "%s/", name);
    path[o ? o - 1 : 0] = 0;
    struct stat st;
    int rc = stat(path, &st);
    resultf("deep_stat", rc == 0, errno, "len=%zu", strlen(path));
    /* A shallow one works. */
    static char shallow[2048];
    o = 0;
    for (int i = 0; i < 100; i++)
        o += snprintf(shallow + o, sizeof shallow - o, "%s/", name);
    shallow[o - 1] = 0;
    result_rc("benign_shallow_stat", stat(shallow, &st));
    /* A storm of threads walking the longest path the agent will walk, with symlinks. */
    symlink(shallow, "s1");
    static char storm[8192];
    o = snprintf(storm, sizeof storm, "s1/");
    for (int i = 0; i < 150 && o + 14 < sizeof storm; i++)
        o += snprintf(storm + o, sizeof storm - o, "%s/", name);
    storm[o - 1] = 0;
    pthread_t t[32];
    struct walker w[32];
    for (int i = 0; i < 32; i++) {
        w[i] = (struct walker){storm, 0, 0};
        pthread_create(&t[i], NULL, walk_storm, &w[i]);
    }
    sleep(2);
    stop = 1;
    long ok = 0, errs = 0;
    for (int i = 0; i < 32; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
        errs += w[i].errs;
    }
    printf("STORM ok=%ld errs=%ld\n", ok, errs);
    printf("DONE\n");
}

int main(int argc, char **argv) {
    setup_output();
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    if (!strcmp(m, "meta") && argc == 4)
        meta(argv[2], argv[3]);
    else if (!strcmp(m, "proc"))
        proc_();
    else if (!strcmp(m, "probe") && argc == 5)
        probe(argv[2], argv[3], argv[4]);
    else if (!strcmp(m, "devices"))
        devices();
    else if (!strcmp(m, "tmpfile") && argc == 4)
        tmpfile_(argv[2], argv[3]);
    else if (!strcmp(m, "creat") && argc == 3)
        creat_(argv[2]);
    else if (!strcmp(m, "unixrace") && argc == 4)
        unixrace(argv[2], argv[3]);
    else if (!strcmp(m, "deep") && argc == 3)
        deep(argv[2]);
    else
        return 2;
    return 0;
}
