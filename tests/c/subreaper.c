/* subreaper PROGRAM ARGS...: runs PROGRAM as its child subreaper (PR_SET_CHILD_SUBREAPER), so
 * that every process PROGRAM leaves behind when it exits is reparented here instead of to the
 * system's reaper. Prints, one line each, in the order they end: "exit N" (or "signal N") for
 * PROGRAM itself, "orphan COMM" for each process that was reparented here (its name, read
 * before it is reaped). Returns once nothing is left. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void comm_of(pid_t pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        snprintf(out, len, "?");
        return;
    }
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: subreaper PROGRAM ARGS...\n");
        return 2;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("PR_SET_CHILD_SUBREAPER");
        return 2;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        /* Seen, not yet reaped: its name is still there to read. */
        if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
            if (errno == EINTR)
                continue;
            if (errno == ECHILD)
                return 0;
            perror("waitid");
            return 2;
        }
        pid_t pid = info.si_pid;
        char comm[32];
        comm_of(pid, comm, sizeof comm);
        int status;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 2;
        }
        if (pid != child)
            printf("orphan %s\n", comm);
        else if (WIFEXITED(status))
            printf("exit %d\n", WEXITSTATUS(status));
        else
            printf("signal %d\n", WTERMSIG(status));
        fflush(stdout);
    }
}
