/* A host and its sandbox through warden's C library (crates/warden-capsicum/c): lch_start,
 * lch_send with rights, lcs_get in the sandbox. Used by crates/warden-cli/tests/capsicum.rs.
 *
 *   cap_lch WARDEN DIR LATE   the host: starts `cap_lch child` under `WARDEN run
 *                        --capability-mode --exec DIR` holding "tool" (/bin/true: read,
 *                        fexecve), then sends it LATE (another program that exits 0, not the
 *                        same file: Landlock's rules are the file's) with the same rights, and
 *                        prints the sandbox's report
 *   cap_lch child        the sandbox: fexecve's each in a child, and reports "NAME ok" or
 *                        "NAME errno=N" */
#define _GNU_SOURCE
#include "capsicum.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void run(char *out, size_t size, const char *name, int fd) {
    pid_t p = fork();
    if (p == 0) {
        char *argv[] = {"true", NULL};
        fexecve(fd, argv, environ);
        _exit(errno ? errno : 126);
    }
    int st = 0;
    waitpid(p, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    size_t n = strlen(out);
    if (code == 0)
        snprintf(out + n, size - n, "%s ok\n", name);
    else
        snprintf(out + n, size - n, "%s errno=%d\n", name, code);
}

static int child(void) {
    int sock = lcs_get(), tool = fdlist_lookup("tool");
    unsigned int mode = 0;
    if (sock < 0 || tool < 0 || cap_getmode(&mode) < 0 || mode != 1)
        return 3;
    for (;;) {
        char req[64], out[1024] = {0};
        int fds[4], nfds = 4;
        ssize_t n = lcs_recv(sock, req, sizeof req, fds, &nfds);
        if (n <= 0 && nfds == 0)
            return 0;
        run(out, sizeof out, "tool-exec", tool);
        if (nfds == 1) {
            cap_rights_t r;
            size_t k = strlen(out);
            if (cap_rights_get(fds[0], &r) == 0)
                snprintf(out + k, sizeof out - k, "late-rights ok %llu\n",
                         (unsigned long long)r.cr_rights);
            run(out, sizeof out, "late-exec", fds[0]);
        }
        if (lcs_send(sock, out, strlen(out), NULL, 0) < 0)
            return 1;
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "child"))
        return child();
    if (argc != 4) {
        fprintf(stderr, "usage: cap_lch WARDEN DIR LATE | cap_lch child\n");
        return 2;
    }
    char self[4096];
    snprintf(self, sizeof self, "%s/cap_lch", argv[2]);
    int tool = open("/bin/true", O_RDONLY | O_CLOEXEC), late = open(argv[3], O_RDONLY | O_CLOEXEC);
    cap_rights_t r;
    cap_rights_init(&r, CAP_READ, CAP_FEXECVE);
    struct lc_named_fd fds[] = {{"tool", tool, r}};
    const char *wargs[] = {"--exec", argv[2], NULL};
    const char *cargv[] = {self, "child", NULL};
    struct lc_host h;
    if (lch_start(&h, argv[1], wargs, cargv, fds, 1) < 0) {
        perror("lch_start");
        return 1;
    }
    char out[1024] = {0};
    int none = 0;
    if (lch_send(&h, "late", 4, &late, &r, 1) < 0) {
        perror("lch_send");
        return 1;
    }
    ssize_t n = lch_recv(&h, out, sizeof out - 1, NULL, &none);
    if (n <= 0) {
        perror("lch_recv");
        return 1;
    }
    fputs(out, stdout);
    int st;
    lch_stop(&h, &st);
    return 0;
}
