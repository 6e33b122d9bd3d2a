/* Process descriptors (pdfork, pdkill, pdwait, pdgetpid from warden's C library), checked from
 * the parent's side: closing the descriptor kills the child (even after the child executed
 * another program), no SIGCHLD reaches the parent, poll reports the exit as POLLHUP, pdkill
 * signals; and in capability mode the descriptor still works where kill(pid) does not.
 *
 *   cap_pd       one line per check: "NAME ok VALUE" or "NAME errno=N"
 *
 * Built with crates/warden-capsicum/c/capsicum.c. */
#define _GNU_SOURCE
#include "capsicum.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t sigchld;

static void on_sigchld(int sig) {
    (void)sig;
    sigchld++;
}

static void say(const char *name, long rc) {
    if (rc < 0)
        printf("%s errno=%d\n", name, errno);
    else
        printf("%s ok %ld\n", name, rc);
    fflush(stdout);
}

static void nap(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* How process `pid` ended, waited for up to 20 s: the signal that killed it (negative for an
 * exit status), or 1000 if it still runs. */
static int ended(int pid) {
    for (int i = 0; i < 2000; i++) {
        siginfo_t info = {0};
        if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | __WALL) < 0)
            return -1000 - errno;
        if (info.si_pid == pid)
            return info.si_code == CLD_EXITED ? -info.si_status : info.si_status;
        nap(10);
    }
    return 1000;
}

/* A child that waits for ever; the parent learns it is running through a pipe. */
static int waiting_child(int *pd, const char *exec_path) {
    int p[2];
    if (pipe(p) < 0)
        return -1;
    int pid = pdfork(pd, PD_CLOEXEC);
    if (pid == 0) {
        close(p[0]);
        write(p[1], "x", 1);
        if (exec_path) {
            execl(exec_path, exec_path, "1000", (char *)NULL);
            _exit(99); /* the exec must happen: a child that did not is no proof */
        }
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    read(p[0], &c, 1);
    close(p[0]);
    return pid;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa = {0};
    sa.sa_handler = on_sigchld;
    sigaction(SIGCHLD, &sa, NULL);

    /* Closing kills, even after the child executed another program (the kill rides the
     * child's end of the descriptor, which exec keeps). Before capability mode: exec by path. */
    int pd, pid = waiting_child(&pd, "/bin/sleep");
    nap(200); /* let the exec happen */
    int got = -1;
    pdgetpid(pd, &got);
    say("getpid-matches", got == pid);
    close(pd);
    say("close-kills-exec", ended(pid));

    say("enter", cap_enter());

    pid = waiting_child(&pd, NULL);
    /* A dup keeps the process alive: only the last close kills. */
    int copy = dup(pd);
    close(pd);
    nap(100);
    siginfo_t info = {0};
    waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT | __WALL);
    say("dup-keeps-alive", info.si_pid == 0);
    close(copy);
    say("close-kills", ended(pid));

    /* No SIGCHLD, and pdwait gets the status. */
    sigchld = 0;
    pid = pdfork(&pd, 0);
    if (pid == 0)
        _exit(7);
    int st = 0;
    say("pdwait-pid-matches", pdwait(pd, &st, 0) == pid);
    say("pdwait-exit", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    nap(100);
    say("sigchld-after-pdfork", sigchld);
    close(pd);
    /* The counter works: a plain fork's child does send one. */
    sigchld = 0;
    pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    nap(100);
    say("sigchld-after-fork", sigchld);

    /* poll: not ready while the child runs, POLLHUP once it exits. */
    pid = pdfork(&pd, 0);
    if (pid == 0) {
        nap(300);
        _exit(3);
    }
    struct pollfd p = {.fd = pd, .events = POLLHUP};
    say("poll-running", poll(&p, 1, 0));
    say("poll-exit", poll(&p, 1, 20000) == 1 && (p.revents & POLLHUP));
    say("poll-exit-status", pdwait(pd, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    close(pd);

    /* pdkill signals through the descriptor; kill by pid is capability mode's to refuse. */
    pid = waiting_child(&pd, NULL);
    say("kill-by-pid", kill(pid, SIGTERM));
    say("pdkill", pdkill(pd, SIGTERM));
    say("pdkill-status", pdwait(pd, &st, 0) == pid && WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    close(pd);
    /* pdwait on something that is not a process descriptor. */
    say("pdwait-not-pd", pdwait(1, &st, 0));
    return 0;
}
