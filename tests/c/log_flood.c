/* Fails N opens the policy denies, as fast as it can: what an untrusted program would do to
 * fill the disk through warden's --log (issue 35, finding 9).
 *
 *   log_flood PATH N   opens PATH for reading N times; prints "denied=D other=O" (D the opens
 *                      refused with EACCES or ENOENT, O those that succeeded or failed otherwise) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: log_flood PATH N\n");
        return 2;
    }
    long n = atol(argv[2]), denied = 0, other = 0;
    for (long i = 0; i < n; i++) {
        int fd = open(argv[1], O_RDONLY);
        if (fd >= 0) {
            close(fd);
            other++;
        } else if (errno == EACCES || errno == ENOENT) {
            denied++;
        } else {
            other++;
        }
    }
    printf("denied=%ld other=%ld\n", denied, other);
    return 0;
}
