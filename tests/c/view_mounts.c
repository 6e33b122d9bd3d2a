/* From inside a sandbox with a view, tries to change the view: unmount a mask, remount the
 * root writable, pivot_root, make new mounts with both mount APIs, and enter a new user and
 * mount namespace (where the view's mounts would be its own). Prints "<call> ok" (a change went
 * through: an escape) or "<call> refused <errno name>" for each, then tries to read FILE (a
 * path the policy denies) and prints what it got.
 *
 * usage: view_mounts FILE */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *call, long r) {
    if (r >= 0) printf("%s ok\n", call);
    else printf("%s refused %s\n", call, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *file = argv[1];
    report("umount", umount2(file, MNT_DETACH));
    report("remount", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
    report("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
    report("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
    report("open_tree", syscall(SYS_open_tree, AT_FDCWD, file, 1 /* OPEN_TREE_CLONE */));
    report("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
    report("unshare", unshare(CLONE_NEWUSER | CLONE_NEWNS));
    report("umount_after", umount2(file, MNT_DETACH));
    int fd = open(file, O_RDONLY);
    if (fd < 0) {
        printf("read refused %s\n", strerrorname_np(errno));
        return 0;
    }
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("read got [%s]\n", buf);
    return 0;
}
