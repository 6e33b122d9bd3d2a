/* `..` traversal, absolute vs relative paths, chdir/fchdir/dirfd bases (issue #2, items 1-2).
 *
 * usage: escape_traversal ALLOWED_DIR SECRET_FILE REL_FROM_ALLOWED
 *   ALLOWED_DIR       a directory the policy lets the program read; holds ok.txt and sub/
 *   SECRET_FILE       absolute path of a file the policy denies
 *   REL_FROM_ALLOWED  the secret's path relative to ALLOWED_DIR (e.g. ../secret/data)
 */
#include "escape_common.h"
#include <linux/openat2.h>

int main(int argc, char **argv) {
    setup_output();
    if (argc != 4) {
        fprintf(stderr, "usage: %s ALLOWED_DIR SECRET_FILE REL_FROM_ALLOWED\n", argv[0]);
        return 2;
    }
    const char *allowed = argv[1], *secret = argv[2], *rel = argv[3];
    char p[4096];

    /* The benign case: the allowed file is readable, so a failure below means a denial. */
    try_open_read("benign_allowed_file", AT_FDCWD, join(p, sizeof p, allowed, "ok.txt"));

    try_open_read("abs_secret", AT_FDCWD, secret);
    try_open_read("abs_dotdot", AT_FDCWD, join(p, sizeof p, allowed, rel));
    snprintf(p, sizeof p, "%s/./.././/%s", allowed, rel);
    try_open_read("abs_dotdot_dots_slashes", AT_FDCWD, p);
    snprintf(p, sizeof p, "%s/ok.txt/../%s", allowed, rel);
    try_open_read("abs_dotdot_through_file", AT_FDCWD, p);
    snprintf(p, sizeof p, "/../../../..%s", secret);
    try_open_read("abs_above_root", AT_FDCWD, p);
    snprintf(p, sizeof p, "%s/../../../../../../../../../../etc/shadow", allowed);
    try_open_read("abs_dotdot_shadow", AT_FDCWD, p);
    try_open_read("abs_shadow", AT_FDCWD, "/etc/shadow");
    try_open_read("abs_etc_dotdot_shadow", AT_FDCWD, "/etc/../etc/./shadow");
    try_open_write("abs_secret_write", AT_FDCWD, secret, O_WRONLY | O_APPEND);
    try_open_write("abs_dotdot_write", AT_FDCWD, join(p, sizeof p, allowed, rel), O_RDWR);
    try_open_write("abs_secret_trunc", AT_FDCWD, secret, O_WRONLY | O_TRUNC);

    /* Relative to a directory fd of the allowed dir. */
    int dfd = open(allowed, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    result_rc("benign_open_allowed_dir", dfd);
    try_open_read("benign_dirfd_ok", dfd, "ok.txt");
    try_open_read("dirfd_dotdot", dfd, rel);
    try_open_read("dirfd_dotdot_shadow", dfd, "../../../../../../../../../../../etc/shadow");
    try_open_read("dirfd_abs_secret", dfd, secret);
    {
        struct open_how how = {.flags = O_RDONLY, .resolve = RESOLVE_BENEATH};
        long fd = syscall(SYS_openat2, dfd, rel, &how, sizeof how);
        if (fd >= 0) {
            report_fd_read("openat2_beneath_dotdot", (int)fd);
            close((int)fd);
        } else {
            result("openat2_beneath_dotdot", 0, errno);
        }
        struct open_how how2 = {.flags = O_RDONLY, .resolve = 0};
        fd = syscall(SYS_openat2, dfd, rel, &how2, sizeof how2);
        if (fd >= 0) {
            report_fd_read("openat2_dotdot", (int)fd);
            close((int)fd);
        } else {
            result("openat2_dotdot", 0, errno);
        }
    }

    /* chdir into the allowed dir, then climb relative to the cwd. */
    result_rc("benign_chdir_allowed", chdir(allowed));
    try_open_read("benign_cwd_ok", AT_FDCWD, "ok.txt");
    try_open_read("cwd_dotdot", AT_FDCWD, rel);
    try_open_read("cwd_dotdot_shadow", AT_FDCWD, "../../../../../../../../../../../../etc/shadow");
    try_open_write("cwd_dotdot_write", AT_FDCWD, rel, O_WRONLY | O_APPEND);
    /* chdir(..) itself is legal (the parent may be invisible); what matters is what follows. */
    if (chdir("..") == 0) {
        char sub[4096];
        /* rel is "../<dir>/<file>": from the parent it is "<dir>/<file>". */
        const char *from_parent = strncmp(rel, "../", 3) == 0 ? rel + 3 : rel;
        snprintf(sub, sizeof sub, "%s", from_parent);
        try_open_read("cwd_parent_then_secret", AT_FDCWD, sub);
    } else {
        result("cwd_parent_then_secret", 0, errno);
    }

    /* Benign: `..` from a subdirectory (as cwd and as dirfd) climbs exactly one level. */
    char sub[4096];
    join(sub, sizeof sub, allowed, "sub");
    int subfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    try_open_read("benign_subfd_dotdot_ok", subfd, "../ok.txt");
    result_rc("benign_chdir_sub", chdir(sub));
    try_open_read("benign_cwd_sub_dotdot_ok", AT_FDCWD, "../ok.txt");
    snprintf(p, sizeof p, "../%s", rel);
    try_open_read("cwd_sub_dotdot_dotdot", AT_FDCWD, p);
    /* Climbing far above the root clamps at the root, whatever the start. */
    snprintf(p, sizeof p, "../../../../../../../../../../../../../../..%s", secret);
    try_open_read("cwd_sub_dotdot_to_root_secret", AT_FDCWD, p);
    try_open_read("subfd_dotdot_to_root_secret", subfd, p);

    /* fchdir to the dirfd, then relative. */
    result_rc("benign_fchdir_allowed", fchdir(dfd));
    try_open_read("fchdir_dotdot", AT_FDCWD, rel);
    done();
    return 0;
}
