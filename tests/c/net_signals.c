/* Signals and process access across the sandbox's boundary (tests/network.rs).
 *
 * usage: net_signals PID
 *   PID  a process outside the sandbox (a `sleep` of the same user), seen from outside
 *
 * Every attempt on PID must fail; the benign ones act on the program's own children. Last, the
 * program sends SIGKILL to -1 ("every process it may signal"): that must kill its own child
 * and nothing outside, and the program itself, which kill(-1) spares, carries on.
 */
#include "escape_common.h"
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static pid_t sleeper(void) {
    pid_t c = fork();
    if (c == 0) {
        for (;;)
            pause();
    }
    return c;
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2) {
        fprintf(stderr, "usage: %s PID\n", argv[0]);
        return 2;
    }
    pid_t p = (pid_t)atoi(argv[1]);
    char buf[64];

    resultf("benign_own_pid", 1, 0, "pid=%d", (int)getpid());
    result_rc("kill0_outside", kill(p, 0));
    result_rc("kill_outside", kill(p, SIGKILL));
    result_rc("kill_group_outside", kill(-p, SIGKILL));
    result_rc("tgkill_outside", syscall(SYS_tgkill, p, p, SIGKILL));
    result_rc("tkill_outside", syscall(SYS_tkill, p, SIGKILL));
    {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        result_rc("rt_sigqueueinfo_outside", syscall(SYS_rt_sigqueueinfo, p, SIGKILL, &si));
    }
    long fd = syscall(SYS_pidfd_open, p, 0);
    result_rc("pidfd_open_outside", fd);
    if (fd >= 0) {
        result_rc("pidfd_send_signal_outside", syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0));
        close((int)fd);
    }
    result_rc("ptrace_attach_outside", ptrace(PTRACE_ATTACH, p, NULL, NULL));
    result_rc("ptrace_seize_outside", ptrace(PTRACE_SEIZE, p, NULL, NULL));
    {
        struct iovec local = {.iov_base = buf, .iov_len = 8};
        struct iovec remote = {.iov_base = (void *)0x400000, .iov_len = 8};
        result_rc("process_vm_readv_outside", syscall(SYS_process_vm_readv, p, &local, 1, &remote, 1, 0));
        result_rc("process_vm_writev_outside", syscall(SYS_process_vm_writev, p, &local, 1, &remote, 1, 0));
    }
    result_rc("setpriority_outside", setpriority(PRIO_PROCESS, p, 19));
    snprintf(buf, sizeof buf, "/proc/%d/status", (int)p);
    try_open_read("proc_status_outside", AT_FDCWD, buf);
    {
        /* pidfd_getfd even on the program's own pidfd: it takes descriptors from a process. */
        long self = syscall(SYS_pidfd_open, getpid(), 0);
        result_rc("benign_pidfd_open_self", self);
        result_rc("pidfd_getfd_self", syscall(SYS_pidfd_getfd, self, 1, 0));
        if (self >= 0)
            close((int)self);
    }
    /* In a child that exits at once: a traced process whose tracer (init) never resumes it
     * would stop at its next signal. */
    {
        pid_t c = fork();
        if (c == 0)
            _exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : errno);
        int st = 0;
        waitpid(c, &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
        errno = code;
        result("ptrace_traceme", code == 0, code);
    }

    /* Benign: the program may signal its own children. */
    {
        pid_t c = sleeper();
        int rc = kill(c, SIGTERM);
        int st = 0;
        waitpid(c, &st, 0);
        result("benign_kill_own_child", rc == 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, errno);
    }
    /* kill(-1): every process of the PID namespace but init and the caller. */
    {
        pid_t c = sleeper();
        usleep(20000);
        int rc = kill(-1, SIGKILL);
        result("benign_kill_minus_one", rc == 0, errno);
        int st = 0;
        waitpid(c, &st, 0);
        result("benign_kill_minus_one_killed_own_child", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, errno);
        /* The sandbox still works: this open is performed by warden's agent. */
        try_open_read("benign_open_after_kill_minus_one", AT_FDCWD, "/etc/hostname");
    }
    done();
    return 0;
}
