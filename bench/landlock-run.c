/* landlock-run: pure Landlock, the baseline of the fast path's target ("within 10% of pure
 * Landlock"). No seccomp filter, no agent, no namespaces: one ruleset and exec, as landrun does.
 *
 * Usage: landlock-run [-t] [-r PATH]... [-x PATH]... -- PROGRAM [ARGS...]
 *   -t        leave the truncate right unhandled, as warden's kernel-first runs do (their
 *             filter sends truncation to the agent): an open's walk then stops at the first
 *             rule granting what it opens for, instead of going up to the root for truncate
 *   -r PATH   read PATH (a file, or a directory and everything beneath it)
 *   -x PATH   read and execute PATH (likewise)
 *
 * The ruleset handles every filesystem right the running kernel knows (but truncate with -t),
 * so all that is not granted is refused, as under `warden run --fast-path=always`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rights newer than some distributions' kernel headers (values from the kernel's UAPI). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

static void die(const char *what, const char *arg) {
    fprintf(stderr, "landlock-run: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
            strerror(errno));
    exit(125);
}

/* Every filesystem right of Landlock ABI `abi` (1..7). */
static __u64 fs_rights(int abi) {
    __u64 r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1 */
    if (abi >= 2)
        r |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}

static void add(int ruleset, const char *path, __u64 want, __u64 handled) {
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        die("cannot open", path);
    __u64 file_only = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                      LANDLOCK_ACCESS_FS_IOCTL_DEV;
    struct landlock_path_beneath_attr attr = {
        .allowed_access = (S_ISDIR(st.st_mode) ? want : want & file_only) & handled,
        .parent_fd = fd,
    };
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
        die("landlock_add_rule", path);
    close(fd);
}

int main(int argc, char **argv) {
    int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        die("Landlock is not available", NULL);
    struct landlock_ruleset_attr ra = {.handled_access_fs = fs_rights(abi)};
    int i = 1;
    if (i < argc && strcmp(argv[i], "-t") == 0) {
        ra.handled_access_fs &= ~(__u64)LANDLOCK_ACCESS_FS_TRUNCATE;
        i++;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
    if (ruleset < 0)
        die("landlock_create_ruleset", NULL);
    __u64 read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc || (strcmp(argv[i], "-r") != 0 && strcmp(argv[i], "-x") != 0)) {
            fprintf(stderr, "usage: landlock-run [-t] [-r PATH]... [-x PATH]... -- PROGRAM [ARGS...]\n");
            return 2;
        }
        __u64 want = read;
        if (argv[i][1] == 'x')
            want |= LANDLOCK_ACCESS_FS_EXECUTE;
        add(ruleset, argv[i + 1], want, ra.handled_access_fs);
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "landlock-run: no program after --\n");
        return 2;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die("PR_SET_NO_NEW_PRIVS", NULL);
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
        die("landlock_restrict_self", NULL);
    close(ruleset);
    execv(argv[i + 1], argv + i + 1);
    die("cannot execute", argv[i + 1]);
}
