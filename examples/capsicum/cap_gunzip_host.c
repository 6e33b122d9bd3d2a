/* The host half of a compartmentalised decompressor, as libcapsicum's lch_start did it: this
 * program opens each input and output itself, and hands the pair to one sandbox that holds
 * nothing else (cap_gunzip, started in capability mode by warden with only a socket to this
 * host). The decompression of untrusted input never runs where the host's rights are.
 *
 *     cap_gunzip_host WARDEN DIR FILE.gz...
 *
 * starts DIR/cap_gunzip under `WARDEN run --capability-mode --exec DIR` and decompresses each
 * FILE.gz to FILE (input: read, seek; output: write), printing "FILE.gz: STATUS" (0: done).
 * The sandbox ends when this program stops it, or exits.
 *
 * Build: cc -O2 -I ../../crates/warden-capsicum/c -o cap_gunzip_host cap_gunzip_host.c
 *        ../../crates/warden-capsicum/c/capsicum.c */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capsicum.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: cap_gunzip_host WARDEN DIR FILE.gz...\n");
        return 2;
    }
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/cap_gunzip", argv[2]);
    const char *wargs[] = {"--exec", argv[2], NULL};
    const char *cargv[] = {prog, NULL};
    struct lc_host h;
    if (lch_start(&h, argv[1], wargs, cargv, NULL, 0) < 0) {
        perror("cap_gunzip_host: lch_start");
        return 1;
    }
    int rc = 0;
    for (int i = 3; i < argc; i++) {
        char outpath[PATH_MAX];
        size_t n = strlen(argv[i]);
        if (n < 4 || strcmp(argv[i] + n - 3, ".gz") || n - 3 >= sizeof outpath) {
            fprintf(stderr, "cap_gunzip_host: %s: not a .gz name\n", argv[i]);
            rc = 1;
            continue;
        }
        memcpy(outpath, argv[i], n - 3);
        outpath[n - 3] = 0;
        int fds[2] = {open(argv[i], O_RDONLY | O_CLOEXEC),
                      open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
        if (fds[0] < 0 || fds[1] < 0) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        cap_rights_t rights[2];
        cap_rights_init(&rights[0], CAP_READ, CAP_SEEK, CAP_FSTAT);
        cap_rights_init(&rights[1], CAP_WRITE, CAP_FSTAT);
        char status = -1;
        int none = 0;
        if (lch_send(&h, "gunzip", 6, fds, rights, 2) < 0 ||
            lch_recv(&h, &status, 1, NULL, &none) != 1) {
            perror("cap_gunzip_host: the sandbox");
            rc = 1;
            break;
        }
        close(fds[0]);
        close(fds[1]);
        printf("%s: %d\n", argv[i], status);
        if (status)
            rc = 1;
    }
    fflush(stdout);
    int st;
    lch_stop(&h, &st);
    return rc;
}
