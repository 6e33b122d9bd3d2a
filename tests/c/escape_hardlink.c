/* Hard links into the writable scratch directory (issue #2, item 4). cwd: scratch.
 *
 * usage: escape_hardlink SECRET_FILE READONLY_FILE
 *   SECRET_FILE    a denied file
 *   READONLY_FILE  a file the policy lets the program read but not write
 * A link that succeeded would give the object the scratch directory's rights (write, unlink).
 */
#include "escape_common.h"

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3) {
        fprintf(stderr, "usage: %s SECRET_FILE READONLY_FILE\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1], *ro = argv[2];

    /* Benign: linking a file of scratch inside scratch works. */
    int fd = open("mine", O_WRONLY | O_CREAT | O_EXCL, 0644);
    result_rc("benign_create_mine", fd);
    close(fd);
    result_rc("benign_link_mine", link("mine", "mine2"));

    result_rc("link_secret", link(secret, "x"));
    try_open_read("read_link_secret", AT_FDCWD, "x");
    result_rc("linkat_secret_follow", linkat(AT_FDCWD, secret, AT_FDCWD, "y", AT_SYMLINK_FOLLOW));
    symlink(secret, "s");
    result_rc("linkat_symlink_follow", linkat(AT_FDCWD, "s", AT_FDCWD, "z", AT_SYMLINK_FOLLOW));
    try_open_read("read_linkat_symlink_follow", AT_FDCWD, "z");
    /* Without AT_SYMLINK_FOLLOW this links the symlink itself (harmless): following it fails. */
    linkat(AT_FDCWD, "s", AT_FDCWD, "s2", 0);
    try_open_read("read_hardlinked_symlink", AT_FDCWD, "s2");
    result_rc("link_shadow", link("/etc/shadow", "shadow"));
    try_open_read("read_link_shadow", AT_FDCWD, "shadow");

    /* A read-only file linked into scratch would become writable there. */
    result_rc("link_readonly", link(ro, "ro"));
    try_open_write("write_link_readonly", AT_FDCWD, "ro", O_WRONLY | O_APPEND);
    result_rc("link_passwd", link("/etc/passwd", "pw"));
    /* Opened for writing, never written: the native control runs as root on the host, where a
     * write would land in the real /etc/passwd (an earlier version appended a line per run). */
    try_open_write_only("write_link_passwd", "pw");

    /* Through /proc/self/fd of a descriptor the program may hold (read-only): linkat with
     * AT_SYMLINK_FOLLOW on the magic link, and AT_EMPTY_PATH on the descriptor. */
    int rofd = open(ro, O_RDONLY);
    result_rc("benign_open_readonly", rofd);
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", rofd);
    result_rc("linkat_proc_fd_readonly", linkat(AT_FDCWD, p, AT_FDCWD, "ro2", AT_SYMLINK_FOLLOW));
    try_open_write("write_linkat_proc_fd", AT_FDCWD, "ro2", O_WRONLY | O_APPEND);
    result_rc("linkat_empty_path_readonly", linkat(rofd, "", AT_FDCWD, "ro3", AT_EMPTY_PATH));
    try_open_write("write_linkat_empty_path", AT_FDCWD, "ro3", O_WRONLY | O_APPEND);
    done();
    return 0;
}
