/* Inherited directory descriptors and /proc doors (issue #2, items 7 and 8). cwd: scratch.
 *
 * usage: escape_proc STDIN_KIND SECRET_FILE ALLOWED_DIR
 *   STDIN_KIND   "etc" when stdin is the directory /etc, "secretdir" when stdin is the
 *                secret's directory, "alloweddir" when it is ALLOWED_DIR (which holds ok.txt,
 *                readable and not writable by the policy), "linkdir" when it is ALLOWED_DIR,
 *                which the policy lets the program read entry by entry (a `path-deny` lies
 *                inside) and which holds `out`, a symlink to SECRET_FILE, "none" otherwise
 *   SECRET_FILE  a denied file; ALLOWED_DIR a readable directory
 */
#include "escape_common.h"
#include <dirent.h>
#include <libgen.h>

/* Descriptors open in this process other than 0, 1, 2 (a leak from warden or the agent). */
static int count_extra_fds(char *list, size_t cap) {
    int n = 0;
    list[0] = 0;
    for (int fd = 3; fd < 4096; fd++) {
        if (fcntl(fd, F_GETFD) < 0)
            continue;
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        target[len > 0 ? len : 0] = 0;
        char item[320], clean[300];
        sanitize(target, (ssize_t)strlen(target), clean, sizeof clean);
        snprintf(item, sizeof item, "%s%d:%s", n ? "," : "", fd, clean);
        strncat(list, item, cap - strlen(list) - 1);
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 4) {
        fprintf(stderr, "usage: %s STDIN_KIND SECRET_FILE ALLOWED_DIR\n", argv[0]);
        return 2;
    }
    const char *kind = argv[1], *secret = argv[2], *allowed = argv[3];
    char p[4096], tmp[4096], list[4096];

    /* Nothing but stdio may be inherited: not the listener, not an agent descriptor. */
    int extra = count_extra_fds(list, sizeof list);
    resultf("inherited_extra_fds", extra > 0, EBADF, "fds=%s", extra ? list : "-");

    snprintf(tmp, sizeof tmp, "%s", secret);
    const char *sbase = basename(tmp);
    char tmp2[4096];
    snprintf(tmp2, sizeof tmp2, "%s", secret);
    const char *sdir = dirname(tmp2);

    if (strcmp(kind, "etc") == 0) {
        try_open_read("benign_openat_stdin_passwd", 0, "passwd");
        try_open_read("openat_stdin_shadow", 0, "shadow");
        snprintf(p, sizeof p, "..%s", secret);
        try_open_read("openat_stdin_dotdot_secret", 0, p);
        try_open_read("dev_fd0_shadow", AT_FDCWD, "/dev/fd/0/shadow");
        try_open_read("proc_fd0_shadow", AT_FDCWD, "/proc/self/fd/0/shadow");
        struct stat st;
        result_rc("fstatat_stdin_shadow", fstatat(0, "shadow", &st, 0));
        int home = open(".", O_RDONLY | O_DIRECTORY);
        result_rc("benign_fchdir_stdin", fchdir(0));
        try_open_read("fchdir_stdin_shadow", AT_FDCWD, "shadow");
        fchdir(home);
        close(home);
    } else if (strcmp(kind, "secretdir") == 0) {
        /* The descriptor was given, but what is beneath it stays subject to the policy. */
        try_open_read("openat_stdin_secret", 0, sbase);
        /* Access mode 3: no read or write right asked, only a descriptor to fstat and ioctl. */
        result_rc("openat_stdin_secret_accmode3", openat(0, sbase, O_ACCMODE | O_CLOEXEC));
        snprintf(p, sizeof p, "/dev/fd/0/%s", sbase);
        try_open_read("dev_fd0_secret", AT_FDCWD, p);
        snprintf(p, sizeof p, "/proc/self/fd/0/%s", sbase);
        try_open_read("proc_fd0_secret", AT_FDCWD, p);
        int home = open(".", O_RDONLY | O_DIRECTORY);
        if (fchdir(0) == 0) {
            try_open_read("fchdir_stdin_secret", AT_FDCWD, sbase);
        } else {
            result("fchdir_stdin_secret", 0, errno);
        }
        fchdir(home);
        close(home);
    } else if (strcmp(kind, "linkdir") == 0) {
        /* Landlock is given the directory's entries one by one; a link among them leads out
         * of the tree, to the secret, which no rule allows. Neither the link nor `..` from the
         * held directory may reach it. */
        try_open_read("benign_openat_stdin_ok", 0, "ok.txt");
        try_open_read("openat_stdin_link_out", 0, "out");
        snprintf(p, sizeof p, "../%s/%s", basename(strdup(sdir)), sbase);
        try_open_read("openat_stdin_dotdot_secret", 0, p);
        int home = open(".", O_RDONLY | O_DIRECTORY);
        if (fchdir(0) == 0) {
            try_open_read("fchdir_stdin_link_out", AT_FDCWD, "out");
            try_open_read("fchdir_stdin_dotdot_secret", AT_FDCWD, p);
        } else {
            result("fchdir_stdin_link_out", 0, errno);
            result("fchdir_stdin_dotdot_secret", 0, errno);
        }
        fchdir(home);
        close(home);
    } else if (strcmp(kind, "alloweddir") == 0) {
        /* A directory of the host's tree, held: opens beneath it reach the host's own mount,
         * writable or not, where the view's read-only bind does not stand. Reading is allowed;
         * nothing may write or truncate, also through an open that asks only to read. */
        try_open_read("benign_openat_stdin_ok", 0, "ok.txt");
        try_open_write("openat_stdin_ok_write", 0, "ok.txt", O_WRONLY | O_APPEND);
        try_open_write("openat_stdin_ok_trunc_write", 0, "ok.txt", O_WRONLY | O_TRUNC);
        int fd = openat(0, "ok.txt", O_RDONLY | O_TRUNC | O_CLOEXEC);
        result_rc("openat_stdin_ok_trunc_rdonly", fd);
        if (fd >= 0)
            close(fd);
        fd = openat(0, "ok.txt", O_ACCMODE | O_TRUNC | O_CLOEXEC);
        result_rc("openat_stdin_ok_trunc_accmode3", fd);
        if (fd >= 0)
            close(fd);
        int home = open(".", O_RDONLY | O_DIRECTORY);
        if (fchdir(0) == 0) {
            fd = open("ok.txt", O_RDONLY | O_TRUNC | O_CLOEXEC);
            result_rc("fchdir_stdin_ok_trunc_rdonly", fd);
            if (fd >= 0)
                close(fd);
            result_rc("fchdir_stdin_ok_truncate", truncate("ok.txt", 0));
        } else {
            result("fchdir_stdin_ok_trunc_rdonly", 0, errno);
            result("fchdir_stdin_ok_truncate", 0, errno);
        }
        fchdir(home);
        close(home);
    }

    /* /proc/self/root and /proc/self/cwd as directory descriptors. */
    int rootfd = open("/proc/self/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    result_rc("benign_open_proc_self_root", rootfd);
    try_open_read("benign_rootfd_passwd", rootfd, "etc/passwd");
    try_open_read("rootfd_shadow", rootfd, "etc/shadow");
    try_open_read("rootfd_secret", rootfd, secret + 1);
    try_open_read("rootfd_dotdot_shadow", rootfd, "../../etc/shadow");
    int cwdfd = open("/proc/self/cwd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    result_rc("benign_open_proc_self_cwd", cwdfd);
    snprintf(p, sizeof p, "../../../../../../../../..%s", secret);
    try_open_read("cwdfd_dotdot_secret", cwdfd, p);
    int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    try_open_read("procfd_1_root_shadow", procfd, "1/root/etc/shadow");
    try_open_read("procfd_self_root_shadow", procfd, "self/root/etc/shadow");

    /* Path forms of the same. */
    try_open_read("proc_self_root_shadow", AT_FDCWD, "/proc/self/root/etc/shadow");
    snprintf(p, sizeof p, "/proc/self/root%s", secret);
    try_open_read("proc_self_root_secret", AT_FDCWD, p);
    try_open_read("proc_thread_self_root_shadow", AT_FDCWD, "/proc/thread-self/root/etc/shadow");
    try_open_read("proc_1_root_shadow", AT_FDCWD, "/proc/1/root/etc/shadow");
    snprintf(p, sizeof p, "/proc/1/root%s", secret);
    try_open_read("proc_1_root_secret", AT_FDCWD, p);
    try_open_read("proc_1_environ", AT_FDCWD, "/proc/1/environ");
    try_open_read("proc_1_mem", AT_FDCWD, "/proc/1/mem");
    try_open_read("proc_1_cwd_dir", AT_FDCWD, "/proc/1/cwd");
    snprintf(p, sizeof p, "/proc/%d/root/etc/shadow", getpid());
    try_open_read("proc_ownpid_root_shadow", AT_FDCWD, p);
    snprintf(p, sizeof p, "/proc/self/task/%ld/root/etc/shadow", (long)syscall(SYS_gettid));
    try_open_read("proc_task_root_shadow", AT_FDCWD, p);
    try_open_read("proc_self_dotdot_1_root", AT_FDCWD, "/proc/self/../1/root/etc/shadow");
    try_open_read("proc_thread_self_dotdot", AT_FDCWD, "/proc/thread-self/../../1/root/etc/shadow");
    try_open_read("proc_thread_self_dotdot_cwd", AT_FDCWD, "/proc/thread-self/../cwd/../../etc/shadow");
    snprintf(p, sizeof p, "/proc/self/cwd/../../../../../../../..%s", secret);
    try_open_read("proc_self_cwd_dotdot_secret", AT_FDCWD, p);
    for (int pid = 2; pid < 6; pid++) {
        if (pid == getpid())
            continue;
        char name[64];
        snprintf(name, sizeof name, "proc_%d_root_shadow", pid);
        snprintf(p, sizeof p, "/proc/%d/root/etc/shadow", pid);
        try_open_read(name, AT_FDCWD, p);
    }
    /* Writing through /proc/self/root reaches the same paths, with the same rules. */
    snprintf(p, sizeof p, "/proc/self/root%s", secret);
    try_open_write("proc_self_root_secret_write", AT_FDCWD, p, O_WRONLY | O_APPEND);
    snprintf(p, sizeof p, "/proc/self/root%s/planted", sdir);
    try_open_write("proc_self_root_create", AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL);

    /* /proc/self/fd/N and /dev/fd/N of a held directory, then `..` out of it. */
    int afd = open(allowed, O_RDONLY | O_DIRECTORY);
    result_rc("benign_open_allowed_dir", afd);
    snprintf(p, sizeof p, "/proc/self/fd/%d/../%s/%s", afd, basename(strdup(sdir)), sbase);
    try_open_read("proc_fd_allowed_dotdot", AT_FDCWD, p);
    snprintf(p, sizeof p, "/dev/fd/%d/../%s/%s", afd, basename(strdup(sdir)), sbase);
    try_open_read("dev_fd_allowed_dotdot", AT_FDCWD, p);

    /* Through a symlink to /proc planted in scratch. */
    symlink("/proc", "p");
    try_open_read("scratch_link_proc_1_root", AT_FDCWD, "p/1/root/etc/shadow");
    try_open_read("scratch_link_proc_self_root", AT_FDCWD, "p/self/root/etc/shadow");

    /* Changing the secret's directory through the inherited descriptor (last: natively these
     * succeed, and the secret would be gone for the attempts above). */
    if (strcmp(kind, "secretdir") == 0) {
        try_open_write("openat_stdin_create", 0, "planted", O_WRONLY | O_CREAT | O_EXCL);
        result_rc("mkdirat_stdin", mkdirat(0, "planted_dir", 0755));
        int home = open(".", O_RDONLY | O_DIRECTORY);
        if (fchdir(0) == 0)
            try_open_write("fchdir_stdin_create", AT_FDCWD, "planted2", O_WRONLY | O_CREAT | O_EXCL);
        else
            result("fchdir_stdin_create", 0, errno);
        fchdir(home);
        close(home);
        result_rc("unlinkat_stdin_secret", unlinkat(0, sbase, 0));
    }

    /* After many delegated opens and closes, no descriptor is left over (each injected once). */
    for (int i = 0; i < 200; i++) {
        int fd = open("/etc/passwd", O_RDONLY);
        if (fd >= 0)
            close(fd);
        fd = open("/etc/shadow", O_RDONLY);
        if (fd >= 0)
            close(fd);
    }
    close(rootfd);
    close(cwdfd);
    close(procfd);
    close(afd);
    extra = count_extra_fds(list, sizeof list);
    resultf("leftover_fds_after_opens", extra > 0, EBADF, "fds=%s", extra ? list : "-");
    done();
    return 0;
}
