/* Existence probing (issue #2, item 17): every metadata call on a hidden path must fail with
 * the same errno (EACCES) whether the path exists or not, so nothing can be learned.
 *
 * usage: escape_stat full|readonly LABEL=PATH...
 * For each LABEL=PATH prints one RESULT line per call, named <call>_<LABEL>. "readonly" runs
 * only the calls that cannot change anything even if they succeeded (for host paths such as
 * /root); "full" adds creating, removing and moving (for the test's own fixture paths).
 */
#include "escape_common.h"
#include <sys/inotify.h>
#include <sys/statfs.h>
#include <sys/xattr.h>

static void probe(const char *label, const char *path, int full) {
    char name[160];
#define NAME(s) (snprintf(name, sizeof name, "%s_%s", s, label), name)
    struct stat st;
    struct statx stx;
    struct statfs sfs;
    char buf[256];
    result_rc(NAME("stat"), stat(path, &st));
    result_rc(NAME("lstat"), lstat(path, &st));
    result_rc(NAME("fstatat"), fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW));
    result_rc(NAME("statx"), statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx));
    result_rc(NAME("access_f"), access(path, F_OK));
    result_rc(NAME("access_r"), access(path, R_OK));
    result_rc(NAME("faccessat2_x"), syscall(SYS_faccessat2, AT_FDCWD, path, X_OK, AT_EACCESS));
    result_rc(NAME("readlink"), readlink(path, buf, sizeof buf));
    result_rc(NAME("statfs"), statfs(path, &sfs));
    result_rc(NAME("getxattr"), getxattr(path, "user.x", buf, sizeof buf));
    result_rc(NAME("listxattr"), listxattr(path, buf, sizeof buf));
    result_rc(NAME("chdir"), chdir(path));
    try_open_read(NAME("open"), AT_FDCWD, path);
    result_rc(NAME("open_directory"), open(path, O_RDONLY | O_DIRECTORY));
    result_rc(NAME("execve"), execve(path, (char *[]){(char *)path, NULL}, (char *[]){NULL}));
    int in = inotify_init1(IN_CLOEXEC);
    result_rc(NAME("inotify_add_watch"), inotify_add_watch(in, path, IN_ALL_EVENTS));
    close(in);
    if (!full)
        return;
    try_open_write(NAME("open_creat_excl"), AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL);
    result_rc(NAME("mkdir"), mkdir(path, 0755));
    result_rc(NAME("symlink_at"), symlink("x", path));
    result_rc(NAME("unlink"), unlink(path));
    result_rc(NAME("rmdir"), rmdir(path));
    result_rc(NAME("rename_from"), rename(path, "renamed"));
    result_rc(NAME("link_from"), link(path, "linked"));
#undef NAME
}

int main(int argc, char **argv) {
    setup_output();
    if (argc < 2 || (strcmp(argv[1], "full") != 0 && strcmp(argv[1], "readonly") != 0)) {
        fprintf(stderr, "usage: %s full|readonly LABEL=PATH...\n", argv[0]);
        return 2;
    }
    int full = strcmp(argv[1], "full") == 0;
    int home = open(".", O_RDONLY | O_DIRECTORY);
    for (int i = 2; i < argc; i++) {
        char label[64];
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq - argv[i] >= (long)sizeof label) {
            fprintf(stderr, "bad argument %s\n", argv[i]);
            return 2;
        }
        memcpy(label, argv[i], eq - argv[i]);
        label[eq - argv[i]] = 0;
        probe(label, eq + 1, full);
        if (fchdir(home) < 0)
            perror("fchdir");
    }
    done();
    return 0;
}
