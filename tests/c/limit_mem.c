/* limit_mem MB [K]: touches (writes) MB mebibytes of fresh anonymous memory in 8 MiB steps, for
 * the memory limit tests (issue #4). Runs inside the sandbox.
 *
 * Prints "touched N" (MiB so far) after each step, unbuffered, so the test can see how far it
 * got before the limit stopped it, and "done N" at the end (exit 0). A failed allocation prints
 * "mmap failed at N: ERRNO" and exits 3.
 *
 * With K, K children each touch MB MiB and hold it until every child has touched its share or
 * one of them has died (so that all of it is in use at once, however slow the machine: a fixed
 * hold was too short under a loaded emulator); the parent prints "all done" and exits 0 if every
 * child did, else "a child failed" and exits 3. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int touch(long mb);

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: limit_mem MB [K]\n");
        return 3;
    }
    long mb = atol(argv[1]);
    if (argc == 2)
        return touch(mb);
    int k = atoi(argv[2]), bad = 0, ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) {
        printf("pipe: %s\n", strerrorname_np(errno));
        return 3;
    }
    for (int i = 0; i < k; i++) {
        pid_t p = fork();
        if (p < 0) {
            printf("fork: %s\n", strerrorname_np(errno));
            return 3;
        }
        if (p == 0) {
            close(ready[0]);
            close(go[1]);
            int r = touch(mb);
            if (r == 0 && write(ready[1], "r", 1) != 1)
                r = 3;
            char c;
            /* Until the parent closes its end: every child is holding its share. */
            while (read(go[0], &c, 1) < 0 && errno == EINTR)
                ;
            _exit(r);
        }
    }
    close(ready[1]);
    close(go[0]);
    /* Released when all K have touched their share, or when a child ends first (killed, or its
     * allocation failed): then the others need not wait for it. */
    int seen = 0, ended = 0;
    while (seen < k) {
        struct pollfd pfd = {.fd = ready[0], .events = POLLIN};
        if (poll(&pfd, 1, 100) > 0) {
            char c;
            if (read(ready[0], &c, 1) == 1)
                seen++;
            continue;
        }
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            ended++;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                bad = 1;
            break;
        }
    }
    close(go[1]);
    for (int i = ended; i < k; i++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    }
    printf(bad ? "a child failed\n" : "all done\n");
    return bad ? 3 : 0;
}

static int touch(long mb) {
    const size_t step = 8UL << 20;
    long done = 0;
    while (done < mb) {
        char *p = mmap(NULL, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            printf("mmap failed at %ld: %s\n", done, strerrorname_np(errno));
            return 3;
        }
        memset(p, 0x5a, step);
        done += 8;
        printf("touched %ld\n", done);
    }
    printf("done %ld\n", done);
    return 0;
}
