/* Terminal injection, personality, clone3, devices, new path syscalls (issue #2, item 16 and
 * more). cwd: scratch. stdin may be a terminal (the test hands in a pty), whose input queue
 * TIOCSTI would fill.
 *
 * usage: escape_misc SECRET_FILE
 */
#include "escape_common.h"
#include <linux/fs.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

static void *thread_fn(void *arg) {
    return arg;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2) {
        fprintf(stderr, "usage: %s SECRET_FILE\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1];

    /* Terminal injection into stdin: each character of "PWNED\n". */
    {
        const char *inject = "PWNED\n";
        int ok = 1, e = 0;
        for (const char *c = inject; *c; c++) {
            if (ioctl(0, TIOCSTI, c) < 0) {
                ok = 0;
                e = errno;
                break;
            }
        }
        result("tiocsti_stdin", ok, e);
        char c = 'X';
        /* The request in the upper half of the register too: the kernel reads 32 bits. */
        result_rc("tiocsti_highbits", syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c));
        char sub[2] = {6 /* TIOCL_SETSEL... any subcode */, 0};
        result_rc("tioclinux", ioctl(0, TIOCLINUX, sub));
        /* Benign: other ioctls are not blocked wholesale (FIONREAD on a pipe works). */
        int pfd[2];
        int avail = -1;
        if (pipe(pfd) == 0) {
            result_rc("benign_ioctl_fionread", ioctl(pfd[0], FIONREAD, &avail));
            close(pfd[0]);
            close(pfd[1]);
        }
    }

    /* personality: only the query and PER_LINUX. */
    result_rc("benign_personality_query", personality(0xffffffff));
    result_rc("personality_addr_no_randomize", personality(ADDR_NO_RANDOMIZE));
    result_rc("personality_read_implies_exec", personality(READ_IMPLIES_EXEC));
    result_rc("personality_linux32", personality(PER_LINUX32));

    /* clone3 is ENOSYS, and libc's threads and fork still work through clone. */
    {
        struct {
            unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
        } args = {.exit_signal = 17};
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0)
            _exit(0);
        int e = errno;
        result("clone3_plain", pid > 0, e);
        pthread_t t;
        int rc = pthread_create(&t, NULL, thread_fn, NULL);
        if (rc == 0)
            pthread_join(t, NULL);
        result("benign_pthread_create", rc == 0, rc);
    }

    /* prctl options that reach beyond the caller. */
    result_rc("prctl_set_mm", prctl(PR_SET_MM, PR_SET_MM_START_CODE, 0, 0, 0));
    result_rc("benign_prctl_set_name", prctl(PR_SET_NAME, "escape", 0, 0, 0));

    /* Device nodes: creating one anywhere (only tried under a filter: natively, as root, it
     * would leave a working /dev/mem node behind), opening hardware. */
    if (under_seccomp_filter()) {
        result_rc("mknod_char_mem", mknod("mem", S_IFCHR | 0600, makedev(1, 1)));
        result_rc("mknod_block_vda", mknod("vda", S_IFBLK | 0600, makedev(253, 0)));
        result_rc("mknodat_char_null", mknodat(AT_FDCWD, "null2", S_IFCHR | 0600, makedev(1, 3)));
    }
    result_rc("benign_mknod_fifo", mknod("fifo", S_IFIFO | 0600, 0));
    try_open_read("open_dev_mem", AT_FDCWD, "/dev/mem");
    try_open_read("open_dev_kmsg", AT_FDCWD, "/dev/kmsg");
    try_open_read("open_dev_vda", AT_FDCWD, "/dev/vda");
    try_open_read("open_dev_port", AT_FDCWD, "/dev/port");
    try_open_read("benign_open_dev_null", AT_FDCWD, "/dev/null");
    try_open_read("benign_open_dev_urandom", AT_FDCWD, "/dev/urandom");

    /* /proc and /sys knobs: opened for writing only, never written (the native control runs
     * this as root on the host). */
    try_open_write_only("write_proc_sys_core_pattern", "/proc/sys/kernel/core_pattern");
    try_open_write_only("write_proc_sysrq_trigger", "/proc/sysrq-trigger");
    try_open_read("read_proc_kcore", AT_FDCWD, "/proc/kcore");
    try_open_read("read_sys_kernel", AT_FDCWD, "/sys/kernel/notes");

    /* Path-bearing syscalls newer than warden's table must be refused, not passed:
     * setxattrat 463, getxattrat 464, listxattrat 465, removexattrat 466,
     * open_tree_attr 467, file_getattr 468, file_setattr 469. */
    {
        struct {
            unsigned long long value;
            unsigned size, flags;
        } xa;
        char val[64] = "PWNED";
        xa.value = (unsigned long)val;
        xa.size = 5;
        xa.flags = 0;
        result_rc("setxattrat_secret", syscall(463, AT_FDCWD, secret, 0, "user.pwned", &xa, sizeof xa));
        xa.size = sizeof val;
        result_rc("getxattrat_secret", syscall(464, AT_FDCWD, secret, 0, "user.x", &xa, sizeof xa));
        char list[256];
        result_rc("listxattrat_secret", syscall(465, AT_FDCWD, secret, 0, list, sizeof list));
        result_rc("removexattrat_secret", syscall(466, AT_FDCWD, secret, 0, "user.x"));
        result_rc("open_tree_attr_root", syscall(467, AT_FDCWD, "/", 1, NULL, 0));
        char fa[64];
        memset(fa, 0, sizeof fa);
        result_rc("file_getattr_secret", syscall(468, AT_FDCWD, secret, fa, 32, 0));
        result_rc("file_setattr_secret", syscall(469, AT_FDCWD, secret, fa, 32, 0));
        /* statmount/listmount (457, 458), lsm_get_self_attr (459): not path-bearing but new. */
        result_rc("listmount", syscall(458, NULL, NULL, 0, 0));
    }
    done();
    return 0;
}
