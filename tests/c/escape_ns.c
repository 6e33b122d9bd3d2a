/* Namespaces, mounts, handles, other processes, kernel facilities (issue #2, item 12).
 *
 * usage: escape_ns SECRET_FILE HANDLE_HEX OUTSIDE_PID MOUNT_TARGET
 *   HANDLE_HEX   a file handle of the secret ("type:hexbytes"), obtained natively beforehand
 *                with `escape_ns --handle SECRET_FILE`, or "-"; `escape_ns --open-handle HEX`
 *                only opens a handle (the native control)
 *   OUTSIDE_PID  a process outside the sandbox that must survive (it is sent SIGKILL)
 *   MOUNT_TARGET a directory outside the sandbox to try mounting over
 * Every attempt here must fail; most with EPERM straight from the filter.
 *
 * Some attempts (umount of /, mounts, reboot) would harm the host if they succeeded, so the
 * program refuses to run them unless it is under a seccomp filter (Seccomp: 2 in
 * /proc/self/status): never run it natively as root.
 */
#include "escape_common.h"
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

static int print_handle(const char *path) {
    struct {
        struct file_handle fh;
        unsigned char buf[MAX_HANDLE_SZ];
    } h;
    int mount_id;
    h.fh.handle_bytes = MAX_HANDLE_SZ;
    if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0) {
        perror("name_to_handle_at");
        return 1;
    }
    printf("%d:", h.fh.handle_type);
    for (unsigned i = 0; i < h.fh.handle_bytes; i++)
        printf("%02x", h.fh.f_handle[i]);
    printf("\n");
    return 0;
}

/* open_by_handle_at with a handle printed by --handle ("type:hexbytes"), relative to the
 * file system of the cwd. Reports attempt open_by_handle_at_secret. */
static void open_handle(const char *handle_hex) {
    struct {
        struct file_handle fh;
        unsigned char buf[MAX_HANDLE_SZ];
    } h;
    int type = 0;
    const char *hex = strchr(handle_hex, ':');
    sscanf(handle_hex, "%d", &type);
    h.fh.handle_type = type;
    h.fh.handle_bytes = 0;
    for (hex = hex ? hex + 1 : ""; hex[0] && hex[1] && h.fh.handle_bytes < MAX_HANDLE_SZ; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        h.fh.f_handle[h.fh.handle_bytes++] = (unsigned char)v;
    }
    int mfd = open(".", O_RDONLY | O_DIRECTORY);
    long fd = syscall(SYS_open_by_handle_at, mfd, &h.fh, O_RDONLY);
    if (fd >= 0) {
        report_fd_read("open_by_handle_at_secret", (int)fd);
        close((int)fd);
    } else {
        result("open_by_handle_at_secret", 0, errno);
    }
    close(mfd);
}

/* A child created with namespace flags exits at once; report whether it was created. */
static void try_clone(const char *attempt, unsigned long flags) {
    long pid = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
    if (pid == 0)
        _exit(0);
    int e = errno;
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    result(attempt, pid > 0, e);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc == 3 && strcmp(argv[1], "--handle") == 0)
        return print_handle(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--open-handle") == 0) {
        open_handle(argv[2]); /* read-only: safe natively (the control) */
        done();
        return 0;
    }
    if (argc != 5) {
        fprintf(stderr, "usage: %s SECRET_FILE HANDLE_HEX OUTSIDE_PID MOUNT_TARGET\n", argv[0]);
        return 2;
    }
    if (!under_seccomp_filter()) {
        printf("REFUSED: not under a seccomp filter\n");
        return 3;
    }
    const char *secret = argv[1], *handle_hex = argv[2], *target = argv[4];
    pid_t outside = (pid_t)atoi(argv[3]);

    /* Benign: a plain fork still works (clone without namespace flags). */
    pid_t child = fork();
    if (child == 0)
        _exit(7);
    int status = 0;
    if (child > 0)
        waitpid(child, &status, 0);
    result("benign_fork", child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 7, errno);

    result_rc("unshare_user", unshare(CLONE_NEWUSER));
    result_rc("unshare_mount", unshare(CLONE_NEWNS));
    result_rc("unshare_user_mount", unshare(CLONE_NEWUSER | CLONE_NEWNS));
    result_rc("unshare_net", unshare(CLONE_NEWNET));
    result_rc("unshare_pid", unshare(CLONE_NEWPID));
    result_rc("unshare_cgroup", unshare(CLONE_NEWCGROUP));
    result_rc("unshare_time", unshare(0x80 /* CLONE_NEWTIME */));
    result_rc("unshare_user_highbits", syscall(SYS_unshare, 0x100000000UL | CLONE_NEWUSER));
    try_clone("clone_newuser", CLONE_NEWUSER);
    try_clone("clone_newns", CLONE_NEWNS);
    try_clone("clone_newuser_newns", CLONE_NEWUSER | CLONE_NEWNS);
    try_clone("clone_newpid", CLONE_NEWPID);
    {
        /* clone3 must be ENOSYS so that libc falls back to clone, whose flags BPF can read. */
        struct {
            unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
        } args = {.flags = CLONE_NEWUSER | CLONE_NEWNS, .exit_signal = SIGCHLD};
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0)
            _exit(0);
        int e = errno;
        if (pid > 0)
            waitpid((pid_t)pid, NULL, 0);
        result("clone3_newuser", pid > 0, e);
    }

    result_rc("mount_tmpfs_outside", mount("none", target, "tmpfs", 0, NULL));
    result_rc("mount_bind_root", mount("/", target, NULL, MS_BIND | MS_REC, NULL));
    result_rc("umount_root", umount2("/", MNT_DETACH));
    result_rc("fsopen_tmpfs", syscall(SYS_fsopen, "tmpfs", 0));
    result_rc("open_tree_root", syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */));
    result_rc("chroot_scratch", chroot("."));
    result_rc("pivot_root", syscall(SYS_pivot_root, ".", "."));
    result_rc("setns_proc_self_user", syscall(SYS_setns, 0, 0));

    /* File handles: name_to_handle_at, and open_by_handle_at with the secret's real handle. */
    {
        struct {
            struct file_handle fh;
            unsigned char buf[MAX_HANDLE_SZ];
        } h;
        int mount_id;
        h.fh.handle_bytes = MAX_HANDLE_SZ;
        result_rc("name_to_handle_at_passwd", name_to_handle_at(AT_FDCWD, "/etc/passwd", &h.fh, &mount_id, 0));
        result_rc("name_to_handle_at_secret", name_to_handle_at(AT_FDCWD, secret, &h.fh, &mount_id, 0));
        if (strcmp(handle_hex, "-") != 0)
            open_handle(handle_hex);
    }

    /* Other processes. */
    result_rc("ptrace_attach_parent", ptrace(PTRACE_ATTACH, getppid(), NULL, NULL));
    result_rc("ptrace_attach_init", ptrace(PTRACE_ATTACH, 1, NULL, NULL));
    result_rc("ptrace_traceme", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    {
        char buf[16];
        struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
        result_rc("process_vm_readv_init", process_vm_readv(1, &local, 1, &remote, 1, 0));
        result_rc("process_vm_writev_init", process_vm_writev(1, &local, 1, &remote, 1, 0));
    }
    result_rc("pidfd_getfd_init", syscall(SYS_pidfd_getfd, syscall(SYS_pidfd_open, 1, 0), 0, 0));
    result_rc("kcmp_init", syscall(SYS_kcmp, 1, getpid(), 0, 0, 0));
    /* The outside process is not in the sandbox's PID namespace: the number names nothing
     * (or something inside). Its survival is checked from outside. */
    result_rc("kill_outside_pid", outside == getpid() ? -1 : kill(outside, SIGKILL));
    result_rc("pidfd_open_outside_pid", outside == getpid() ? -1 : syscall(SYS_pidfd_open, outside, 0));
    {
        /* kill(-1) reaches every process the caller may signal: only the sandbox's. We ignore
         * SIGTERM ourselves; a child sends it to everyone. */
        signal(SIGTERM, SIG_IGN);
        pid_t k = fork();
        if (k == 0)
            _exit(kill(-1, SIGTERM) == 0 ? 0 : 1);
        int st = 0;
        waitpid(k, &st, 0);
        result("benign_kill_minus_one_inside", WIFEXITED(st) && WEXITSTATUS(st) == 0, 0);
    }

    /* Kernel facilities. */
    {
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 4;
        attr.max_entries = 1;
        result_rc("bpf_map_create", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
    }
    result_rc("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
    try_open_read("dev_userfaultfd", AT_FDCWD, "/dev/userfaultfd");
    result_rc("keyctl_get_keyring", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
    result_rc("add_key", syscall(SYS_add_key, "user", "warden-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING));
    result_rc("request_key", syscall(SYS_request_key, "user", "warden-escape", NULL, 0));
    {
        struct perf_event_attr pa;
        memset(&pa, 0, sizeof pa);
        pa.type = PERF_TYPE_SOFTWARE;
        pa.size = sizeof pa;
        pa.config = PERF_COUNT_SW_CPU_CLOCK;
        result_rc("perf_event_open", syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
    }
    result_rc("iopl", syscall(SYS_iopl, 3));
    result_rc("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
    result_rc("init_module", syscall(SYS_init_module, NULL, 0, ""));
    result_rc("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
    result_rc("reboot_cad_off", syscall(SYS_reboot, 0xfee1dead, 672274793, 0 /* CAD_OFF */, NULL));
    result_rc("syslog_read_all", syscall(SYS_syslog, 3, NULL, 0));
    result_rc("fanotify_init", syscall(SYS_fanotify_init, 0, 0));
    result_rc("acct_secret", syscall(SYS_acct, secret));
    result_rc("swapon_secret", syscall(SYS_swapon, secret, 0));
    result_rc("quotactl", syscall(SYS_quotactl, 0, "/", 0, NULL));
    result_rc("uselib_secret", syscall(SYS_uselib, secret));
    done();
    return 0;
}
