/* Symlinks planted in the writable scratch directory (issue #2, item 3). Runs with its cwd in
 * the scratch directory.
 *
 * usage: escape_symlink SECRET_FILE ALLOWED_FILE OUTSIDE_NEW
 *   SECRET_FILE   absolute path of a denied file
 *   ALLOWED_FILE  absolute path of a readable file (the benign target)
 *   OUTSIDE_NEW   absolute path, outside the sandbox, that must not come to exist
 */
#include "escape_common.h"
#include <libgen.h>

/* A relative path from the cwd to `abs`: "../" once per component of the cwd, then abs. */
static void relative_to_cwd(const char *abs, char *out, size_t cap) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        snprintf(out, cap, "%s", abs);
        return;
    }
    out[0] = 0;
    for (const char *c = cwd; *c; c++)
        if (*c == '/')
            strncat(out, "../", cap - strlen(out) - 1);
    strncat(out, abs + 1, cap - strlen(out) - 1);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 4) {
        fprintf(stderr, "usage: %s SECRET_FILE ALLOWED_FILE OUTSIDE_NEW\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1], *allowed = argv[2], *outside_new = argv[3];
    char rel[4096], dir[4096], p[8192];

    /* Creating links in scratch is allowed: the target is free text, checked when followed. */
    result_rc("benign_symlink_create", symlink(allowed, "good"));
    try_open_read("benign_follow_good", AT_FDCWD, "good");

    result_rc("benign_symlink_to_secret_create", symlink(secret, "lnk"));
    try_open_read("follow_abs_secret", AT_FDCWD, "lnk");
    try_open_write("follow_abs_secret_write", AT_FDCWD, "lnk", O_WRONLY | O_APPEND);
    try_open_write("follow_abs_secret_trunc", AT_FDCWD, "lnk", O_WRONLY | O_TRUNC);

    relative_to_cwd(secret, rel, sizeof rel);
    result_rc("benign_symlink_rel_create", symlink(rel, "rel"));
    try_open_read("follow_rel_secret", AT_FDCWD, "rel");

    result_rc("benign_symlink_shadow_create", symlink("/etc/shadow", "shadow"));
    try_open_read("follow_shadow", AT_FDCWD, "shadow");

    /* A chain: a -> b -> lnk -> secret. */
    symlink("b", "a");
    symlink("lnk", "b");
    try_open_read("follow_chain_secret", AT_FDCWD, "a");

    /* A symlink to the secret's directory, then a path through it. */
    snprintf(dir, sizeof dir, "%s", secret);
    char *sdir = dirname(dir);
    symlink(sdir, "sdir");
    snprintf(p, sizeof p, "sdir/%s", strrchr(secret, '/') + 1);
    try_open_read("through_dir_link", AT_FDCWD, p);
    snprintf(p, sizeof p, "sdir/newfile");
    try_open_write("create_through_dir_link", AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL);
    result_rc("mkdir_through_dir_link", mkdir("sdir/newdir", 0755));
    result_rc("symlink_through_dir_link", symlink("x", "sdir/newlink"));

    /* A symlink that goes through /proc/self/root and /proc/self/cwd. */
    snprintf(p, sizeof p, "/proc/self/root%s", secret);
    symlink(p, "viaroot");
    try_open_read("follow_via_proc_root", AT_FDCWD, "viaroot");
    snprintf(p, sizeof p, "/proc/self/cwd/%s", rel);
    symlink(p, "viacwd");
    try_open_read("follow_via_proc_cwd", AT_FDCWD, "viacwd");

    /* A dangling symlink pointing outside: O_CREAT through it must not create the target. */
    symlink(outside_new, "dangling");
    try_open_write("creat_through_dangling", AT_FDCWD, "dangling", O_WRONLY | O_CREAT);
    result_rc("creat_syscall_through_dangling", syscall(SYS_creat, "dangling", 0644));

    /* Directory symlink then `..`: the walk follows the link, then climbs from its target. */
    symlink(sdir, "d2");
    snprintf(p, sizeof p, "d2/../%s/%s", basename(sdir), strrchr(secret, '/') + 1);
    try_open_read("dir_link_dotdot", AT_FDCWD, p);

    /* stat through the link must not reveal the secret either (no size, no mode). */
    struct stat st;
    result_rc("stat_through_link", stat("lnk", &st));
    /* lstat of the link itself is fine: it lives in scratch. */
    result_rc("benign_lstat_link", lstat("lnk", &st));
    done();
    return 0;
}
