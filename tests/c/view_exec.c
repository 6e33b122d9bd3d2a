/* Tries to run code from a file the policy does not call executable, by each route a program
 * has: a hand-written loader's mmap(PROT_EXEC), execveat of a descriptor, and a memfd copy run
 * with execveat. Prints one line per route: "<route> ran" (the code ran: an escape) or
 * "<route> refused <errno name>".
 *
 * usage: view_exec FILE
 * FILE should be an ELF program that prints "RAN"; the execveat routes replace this process on
 * success, so each runs in a child. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void refused(const char *route, int e) {
    printf("%s refused %s\n", route, strerrorname_np(e) ? strerrorname_np(e) : "?");
    fflush(stdout);
}

static void in_child(const char *route, int fd) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {"x", NULL};
        char *envp[] = {NULL};
        syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
        refused(route, errno);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *file = argv[1];

    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { refused("open", errno); return 0; }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) refused("mmap", errno);
    else printf("mmap ran\n");
    fflush(stdout);

    in_child("execveat", fd);

    struct stat st;
    fstat(fd, &st);
    int m = memfd_create("copy", MFD_CLOEXEC);
    if (m < 0) { refused("memfd", errno); return 0; }
    off_t off = 0;
    if (sendfile(m, fd, &off, st.st_size) != st.st_size) { refused("memfd", errno); return 0; }
    /* Execute bits asked back, by the descriptor and by its /proc path (a kernel before 6.3
     * has no MFD_NOEXEC_SEAL to refuse them): the exec below must fail all the same. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", m);
    if (fchmod(m, 0755) == 0 || chmod(path, 0755) == 0)
        printf("memfd chmod allowed\n");
    in_child("memfd", m);
    return 0;
}
