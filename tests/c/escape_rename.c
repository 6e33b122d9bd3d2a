/* Moving things across the sandbox's boundary, and creating or truncating files outside it
 * (issue #2, item 13). cwd: scratch.
 *
 * usage: escape_rename SECRET_FILE READONLY_FILE OUTSIDE_DIR TMP_MARKER
 *   SECRET_FILE    a denied file
 *   READONLY_FILE  a file the program may read but not write, unlink or move
 *   OUTSIDE_DIR    a directory outside the sandbox (nothing may appear in it)
 *   TMP_MARKER     a path directly in /tmp that must not come to exist
 */
#include "escape_common.h"
#include <libgen.h>
#include <linux/fs.h>
#include <sys/socket.h>
#include <sys/un.h>

static int make_file(const char *name, const char *text) {
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 5) {
        fprintf(stderr, "usage: %s SECRET_FILE READONLY_FILE OUTSIDE_DIR TMP_MARKER\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1], *ro = argv[2], *outside = argv[3], *marker = argv[4];
    char p[4096], q[4096], tmp[4096];

    /* Benign: moves inside scratch work, for files and directories. */
    result_rc("benign_make_file", make_file("f", "mine\n"));
    result_rc("benign_rename_file", rename("f", "g"));
    result_rc("benign_mkdir", mkdir("d1", 0755));
    result_rc("benign_make_file_in_dir", make_file("d1/inner", "inner\n"));
    result_rc("benign_rename_dir", rename("d1", "d2"));
    result_rc("benign_exchange", syscall(SYS_renameat2, AT_FDCWD, "g", AT_FDCWD, "d2", RENAME_EXCHANGE));
    syscall(SYS_renameat2, AT_FDCWD, "g", AT_FDCWD, "d2", RENAME_EXCHANGE);
    /* Benign: copying a readable file into scratch is the way to get a writable copy. */
    {
        int in = open(ro, O_RDONLY), out = open("copy", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[256];
        ssize_t n = in >= 0 ? read(in, buf, sizeof buf) : -1;
        result("benign_copy_readonly", in >= 0 && out >= 0 && n >= 0 && write(out, buf, n) == n, errno);
        close(in);
        close(out);
    }

    /* RENAME_WHITEOUT leaves a 0:0 character device behind: device nodes are never created. */
    result_rc("benign_make_file_w", make_file("w", "w\n"));
    result_rc("rename_whiteout", syscall(SYS_renameat2, AT_FDCWD, "w", AT_FDCWD, "w2", RENAME_WHITEOUT));

    /* Moving the secret in, or the read-only file in (which would make it writable). */
    result_rc("rename_secret_in", rename(secret, "x"));
    try_open_read("read_renamed_secret", AT_FDCWD, "x");
    result_rc("rename_readonly_in", rename(ro, "ro"));
    result_rc("renameat2_noreplace_secret_in", syscall(SYS_renameat2, AT_FDCWD, secret, AT_FDCWD, "y", RENAME_NOREPLACE));
    result_rc("exchange_secret_with_scratch", syscall(SYS_renameat2, AT_FDCWD, "g", AT_FDCWD, secret, RENAME_EXCHANGE));
    try_open_read("benign_g_unchanged_after_exchange", AT_FDCWD, "g");
    result_rc("exchange_readonly_with_scratch", syscall(SYS_renameat2, AT_FDCWD, "copy", AT_FDCWD, ro, RENAME_EXCHANGE));
    /* Moving things out, or over the secret. */
    result_rc("rename_scratch_over_secret", rename("g", secret));
    result_rc("rename_scratch_file_out", rename("g", join(p, sizeof p, outside, "moved_out")));
    result_rc("rename_scratch_dir_out", rename("d2", join(p, sizeof p, outside, "moved_dir")));
    result_rc("rename_to_tmp", rename("g", marker));
    /* The secret's whole directory. */
    snprintf(tmp, sizeof tmp, "%s", secret);
    char *sdir = dirname(tmp);
    result_rc("rename_secret_dir_in", rename(sdir, "sd"));
    result_rc("rename_secret_dir_renamed", rename(sdir, join(q, sizeof q, outside, "renamed")));

    /* Creating files outside. */
    try_open_write("create_outside", AT_FDCWD, join(p, sizeof p, outside, "created"), O_WRONLY | O_CREAT);
    try_open_write("create_tmp_marker", AT_FDCWD, marker, O_WRONLY | O_CREAT | O_EXCL);
    result_rc("creat_outside", creat(join(p, sizeof p, outside, "creat"), 0644));
    result_rc("mkdir_outside", mkdir(join(p, sizeof p, outside, "newdir"), 0755));
    result_rc("mkfifo_outside", mkfifo(join(p, sizeof p, outside, "fifo"), 0644));
    result_rc("symlink_outside", symlink("/etc/shadow", join(p, sizeof p, outside, "link")));
    result_rc("link_scratch_file_outside", link("g", join(p, sizeof p, outside, "hardlink")));
    try_open_write("tmpfile_outside", AT_FDCWD, outside, O_WRONLY | O_TMPFILE);
    {
        /* An O_TMPFILE in scratch, then given a name outside through /proc/self/fd. */
        int fd = open(".", O_WRONLY | O_TMPFILE, 0644);
        result_rc("benign_tmpfile_scratch", fd);
        if (fd >= 0) {
            if (write(fd, "PWNED\n", 6) < 0)
                perror("write");
            char pfd[64];
            snprintf(pfd, sizeof pfd, "/proc/self/fd/%d", fd);
            result_rc("linkat_tmpfile_outside", linkat(AT_FDCWD, pfd, AT_FDCWD, join(p, sizeof p, outside, "tmpfile_linked"), AT_SYMLINK_FOLLOW));
            result_rc("linkat_tmpfile_empty_path_outside", linkat(fd, "", AT_FDCWD, join(p, sizeof p, outside, "tmpfile_linked2"), AT_EMPTY_PATH));
            close(fd);
        }
    }
    {
        /* Binding a unix socket creates a file. */
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s/sock", outside);
        result_rc("bind_socket_outside", bind(s, (struct sockaddr *)&a, sizeof a));
        close(s);
    }

    /* Truncating, overwriting and removing outside files. */
    result_rc("truncate_secret", truncate(secret, 0));
    result_rc("truncate_readonly", truncate(ro, 0));
    try_open_write("open_trunc_secret", AT_FDCWD, secret, O_WRONLY | O_TRUNC);
    try_open_write("open_trunc_readonly", AT_FDCWD, ro, O_WRONLY | O_TRUNC);
    try_open_write("open_creat_secret", AT_FDCWD, secret, O_WRONLY | O_CREAT);
    result_rc("unlink_secret", unlink(secret));
    result_rc("unlink_readonly", unlink(ro));
    result_rc("rmdir_secret_dir", rmdir(sdir));
    result_rc("unlinkat_removedir_outside", unlinkat(AT_FDCWD, outside, AT_REMOVEDIR));
    done();
    return 0;
}
