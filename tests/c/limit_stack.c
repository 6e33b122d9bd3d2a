/* limit_stack KB: recurses KB levels deep with 1 KiB of stack per level (issue #4). Runs inside
 * the sandbox. Prints "recursed KB" and exits 0; overflowing the stack limit is a SIGSEGV. */
#include <stdio.h>
#include <stdlib.h>

static int recurse(int n) {
    volatile char frame[1024];
    frame[0] = (char)n;
    frame[sizeof frame - 1] = (char)n;
    if (n == 0)
        return frame[0];
    int r = recurse(n - 1);
    return r + frame[sizeof frame - 1];
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: limit_stack KB\n");
        return 3;
    }
    int kb = atoi(argv[1]);
    int r = recurse(kb);
    printf("recursed %d (%d)\n", kb, r & 1);
    return 0;
}
