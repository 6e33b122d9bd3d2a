/* Changing a denied file's metadata (issue #2, item 14). cwd: scratch.
 *
 * usage: escape_meta SECRET_FILE READONLY_FILE [READONLY_SYMLINK]
 * Each attempt goes at the secret directly and through a symlink planted in scratch. The
 * read-only file (which the program may open for reading) is attacked through descriptors:
 * f* calls on a read-only descriptor, and reopening it for writing through /proc/self/fd.
 * The read-only symlink is attacked through its O_PATH descriptor (a stand-in under warden).
 * Opens with O_TRUNC that do not open for writing (O_RDONLY, or access mode 3) truncate with
 * no write permission asked: they are tried on the read-only file every way an open can name it.
 */
#include "escape_common.h"
#include <linux/openat2.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <utime.h>

static void attempts(const char *tag, const char *path) {
    char name[128];
#define NAME(s) (snprintf(name, sizeof name, "%s_%s", s, tag), name)
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    struct timeval tv[2] = {{1, 0}, {1, 0}};
    struct utimbuf ub = {1, 1};
    result_rc(NAME("chmod"), chmod(path, 0777));
    result_rc(NAME("fchmodat"), fchmodat(AT_FDCWD, path, 04777, 0));
    result_rc(NAME("fchmodat2_nofollow"), syscall(452, AT_FDCWD, path, 0777, AT_SYMLINK_NOFOLLOW));
    result_rc(NAME("chown"), chown(path, 65534, 65534));
    result_rc(NAME("chown_self"), chown(path, getuid(), getgid()));
    result_rc(NAME("lchown"), lchown(path, getuid(), getgid()));
    result_rc(NAME("fchownat"), fchownat(AT_FDCWD, path, getuid(), getgid(), 0));
    result_rc(NAME("utimensat"), utimensat(AT_FDCWD, path, ts, 0));
    result_rc(NAME("utimensat_now"), utimensat(AT_FDCWD, path, NULL, 0));
    result_rc(NAME("utimensat_nofollow"), utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW));
    result_rc(NAME("utimes"), utimes(path, tv));
    result_rc(NAME("utime"), utime(path, &ub));
    result_rc(NAME("futimesat"), syscall(SYS_futimesat, AT_FDCWD, path, tv));
    result_rc(NAME("truncate"), truncate(path, 0));
    result_rc(NAME("truncate_grow"), truncate(path, 1 << 20));
    /* Access mode 3 opens for neither reading nor writing (Landlock asks nothing of it), and
     * gives a descriptor for fstat and ioctl (FS_IOC_SETFLAGS as the owner). */
    result_rc(NAME("open_accmode3"), open(path, O_ACCMODE | O_CLOEXEC));
    result_rc(NAME("setxattr"), setxattr(path, "user.pwned", "1", 1, 0));
    result_rc(NAME("setxattr_trusted"), setxattr(path, "trusted.pwned", "1", 1, 0));
    result_rc(NAME("setxattr_security"), setxattr(path, "security.pwned", "1", 1, 0));
    result_rc(NAME("lsetxattr"), lsetxattr(path, "user.pwned", "1", 1, 0));
    result_rc(NAME("removexattr"), removexattr(path, "user.keep"));
    /* O_PATH descriptors would allow f* calls; they are served as reads, and reading is denied. */
    int fd = open(path, O_PATH);
    result_rc(NAME("open_o_path"), fd);
    if (fd >= 0) {
        result_rc(NAME("fchmod_o_path"), fchmod(fd, 0777));
        result_rc(NAME("fchown_o_path"), fchown(fd, getuid(), getgid()));
        result_rc(NAME("fchmodat_empty_path"), syscall(452, fd, "", 0777, AT_EMPTY_PATH));
        result_rc(NAME("utimensat_fd"), syscall(SYS_utimensat, fd, NULL, ts, 0));
        result_rc(NAME("fsetxattr_o_path"), fsetxattr(fd, "user.pwned", "1", 1, 0));
        close(fd);
    }
#undef NAME
}

/* An O_PATH descriptor of a symlink the program may only read: nothing about the link changes
 * through it, directly, through *at calls with an empty path, or through /proc/self/fd/N. */
static void readonly_link(const char *link) {
    int fd = open(link, O_PATH | O_NOFOLLOW);
    result_rc("benign_open_o_path_symlink", fd);
    struct stat st;
    result_rc("benign_fstatat_o_path_symlink",
              fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode) ? 0 : -1);
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    result_rc("fchownat_link_readonly_fd", fchownat(fd, "", getuid(), getgid(), AT_EMPTY_PATH));
    result_rc("utimensat_link_readonly_fd", syscall(SYS_utimensat, fd, "", ts, AT_EMPTY_PATH));
    result_rc("utimensat_null_link_readonly_fd", syscall(SYS_utimensat, fd, NULL, ts, 0));
    result_rc("fchmodat2_link_readonly_fd", syscall(452, fd, "", 0777, AT_EMPTY_PATH));
    result_rc("fchmod_link_readonly_fd", fchmod(fd, 0777));
    result_rc("fchown_link_readonly_fd", fchown(fd, getuid(), getgid()));
    result_rc("fsetxattr_link_readonly_fd", fsetxattr(fd, "user.pwned", "1", 1, 0));
    result_rc("linkat_link_readonly_fd", linkat(fd, "", AT_FDCWD, "hardlink", AT_EMPTY_PATH));
    result_rc("write_link_readonly_fd", write(fd, "PWNED\n", 6));
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    result_rc("lchown_proc_fd_link_readonly_fd", lchown(p, getuid(), getgid()));
    result_rc("chown_proc_fd_link_readonly_fd", chown(p, getuid(), getgid()));
    result_rc("utimensat_proc_fd_link_readonly_fd", utimensat(AT_FDCWD, p, ts, 0));
    /* Under the agent the reopen is ELOOP (the link itself); with opens going straight to the
     * kernel (--fast-path) it reopens the stand-in memfd, sealed against writes: either way
     * nothing may be written. */
    int w = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
    result_rc("write_reopened_proc_fd_link_readonly_fd", w < 0 ? -1 : write(w, "PWNED\n", 6) == 6 ? 0 : -1);
    if (w >= 0)
        close(w);
    close(fd);
}

/* An open with O_TRUNC: ok=1 when it succeeded (a regular file is truncated by the open itself),
 * with the size it left. */
static void try_truncating_open(const char *attempt, int fd) {
    if (fd < 0) {
        result(attempt, 0, errno);
        return;
    }
    struct stat st;
    fstat(fd, &st);
    resultf(attempt, 1, 0, "size=%lld", (long long)st.st_size);
    close(fd);
}

static int openat2_flags(int dirfd, const char *path, int flags) {
    struct open_how how = {.flags = (unsigned long long)flags};
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Every way to name the read-only file `ro` (readable, not writable, by the policy) in an
 * O_TRUNC open that asks for no write access. */
static void truncating_reads(const char *ro, int rofd) {
    try_truncating_open("otrunc_open_rdonly", open(ro, O_RDONLY | O_TRUNC | O_CLOEXEC));
    try_truncating_open("otrunc_openat_rdonly", openat(AT_FDCWD, ro, O_RDONLY | O_TRUNC | O_CLOEXEC));
    try_truncating_open("otrunc_openat_rdonly_creat",
                        openat(AT_FDCWD, ro, O_RDONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0644));
    try_truncating_open("otrunc_openat_accmode3", openat(AT_FDCWD, ro, O_ACCMODE | O_TRUNC | O_CLOEXEC));
    try_truncating_open("otrunc_openat2_rdonly", openat2_flags(AT_FDCWD, ro, O_RDONLY | O_TRUNC | O_CLOEXEC));
    try_truncating_open("otrunc_openat2_accmode3", openat2_flags(AT_FDCWD, ro, O_ACCMODE | O_TRUNC | O_CLOEXEC));
    /* Relative to a descriptor of its directory. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", ro);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        int d = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        try_truncating_open("otrunc_openat_dirfd_rdonly", openat(d, slash + 1, O_RDONLY | O_TRUNC | O_CLOEXEC));
        try_truncating_open("otrunc_openat_dirfd_accmode3", openat(d, slash + 1, O_ACCMODE | O_TRUNC | O_CLOEXEC));
        if (d >= 0)
            close(d);
    }
    /* Reopening its read-only descriptor. */
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", rofd);
    try_truncating_open("otrunc_reopen_proc_fd_rdonly", open(p, O_RDONLY | O_TRUNC | O_CLOEXEC));
    snprintf(p, sizeof p, "/dev/fd/%d", rofd);
    try_truncating_open("otrunc_reopen_dev_fd_accmode3", open(p, O_ACCMODE | O_TRUNC | O_CLOEXEC));
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s SECRET_FILE READONLY_FILE [READONLY_SYMLINK]\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1], *ro = argv[2];
    /* Benign: the same calls on a file of scratch work. */
    int fd = open("mine", O_WRONLY | O_CREAT, 0644);
    close(fd);
    result_rc("benign_chmod_mine", chmod("mine", 0600));
    result_rc("benign_utimensat_mine", utimensat(AT_FDCWD, "mine", NULL, 0));
    result_rc("benign_truncate_mine", truncate("mine", 10));
    /* A truncating read where the policy gives write: the agent serves it. */
    fd = open("mine", O_RDONLY | O_TRUNC | O_CLOEXEC);
    struct stat st;
    result_rc("benign_otrunc_rdonly_mine", fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0 ? 0 : -1);
    if (fd >= 0)
        close(fd);

    attempts("direct", secret);
    result_rc("benign_symlink", symlink(secret, "lnk"));
    /* Through the symlink: calls that follow it reach the secret's path and are denied; the
     * nofollow variants act on the link in scratch, which is allowed but harmless, so only
     * the following ones are expected to fail (the test checks the secret from outside). */
    attempts("via_link", "lnk");

    /* A read-only descriptor of a readable file: no metadata change, no write through it. */
    int rofd = open(ro, O_RDONLY);
    result_rc("benign_open_readonly", rofd);
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    result_rc("fchmod_readonly_fd", fchmod(rofd, 0777));
    result_rc("fchown_readonly_fd", fchown(rofd, getuid(), getgid()));
    result_rc("fsetxattr_readonly_fd", fsetxattr(rofd, "user.pwned", "1", 1, 0));
    result_rc("fremovexattr_readonly_fd", fremovexattr(rofd, "user.keep"));
    result_rc("futimens_readonly_fd", futimens(rofd, ts));
    /* The same through the *at calls with an empty path (AT_EMPTY_PATH) or a NULL path. */
    result_rc("fchmodat2_empty_path_readonly_fd", syscall(452, rofd, "", 0777, AT_EMPTY_PATH));
    result_rc("fchownat_empty_path_readonly_fd", fchownat(rofd, "", getuid(), getgid(), AT_EMPTY_PATH));
    result_rc("utimensat_empty_path_readonly_fd", syscall(SYS_utimensat, rofd, "", ts, AT_EMPTY_PATH));
    result_rc("utimensat_null_path_readonly_fd", syscall(SYS_utimensat, rofd, NULL, ts, 0));
    struct timeval tv[2] = {{2, 0}, {2, 0}};
    result_rc("futimesat_null_path_readonly_fd", syscall(SYS_futimesat, rofd, NULL, tv));
    result_rc("ftruncate_readonly_fd", ftruncate(rofd, 0));
    result_rc("fallocate_readonly_fd", fallocate(rofd, 0, 0, 4096));
    result_rc("write_readonly_fd", write(rofd, "PWNED\n", 6));
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", rofd);
    try_open_write("reopen_proc_fd_for_write", AT_FDCWD, p, O_WRONLY | O_APPEND);
    snprintf(p, sizeof p, "/dev/fd/%d", rofd);
    try_open_write("reopen_dev_fd_for_write", AT_FDCWD, p, O_RDWR);
    result_rc("chmod_proc_fd", chmod(p, 0777));
    result_rc("truncate_proc_fd", truncate(p, 0));
    truncating_reads(ro, rofd);
    if (argc == 4)
        readonly_link(argv[3]);
    done();
    return 0;
}
