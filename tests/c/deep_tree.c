/* Leaves, in the current directory, what a hostile program leaves to make its scratch directory
 * hard to remove (issue 35): a tree DEPTH directories deep, `d/d/.../d`, made by nested renames
 * (mkdir t; rename d to t/d; rename t to d), so that no path it names ever grows, and `m`, a
 * directory of mode 0 holding `n`, of mode 0, holding a file. Prints "made DEPTH"; with a
 * second argument `wait`, then waits to be killed.
 * Usage: deep_tree DEPTH [wait] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fail(const char *what, long i) {
    printf("failed %s at %ld: %s\n", what, i, strerror(errno));
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: deep_tree DEPTH [wait]\n");
        return 2;
    }
    long depth = atol(argv[1]);
    if (mkdir("d", 0755) != 0)
        fail("mkdir d", 0);
    for (long i = 1; i < depth; i++) {
        if (mkdir("t", 0755) != 0)
            fail("mkdir t", i);
        if (rename("d", "t/d") != 0)
            fail("rename d t/d", i);
        if (rename("t", "d") != 0)
            fail("rename t d", i);
    }
    if (mkdir("m", 0755) != 0 || mkdir("m/n", 0755) != 0)
        fail("mkdir m/n", 0);
    int fd = open("m/n/f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0 || close(fd) != 0)
        fail("create m/n/f", 0);
    if (chmod("m/n", 0) != 0 || chmod("m", 0) != 0)
        fail("chmod m", 0);
    printf("made %ld\n", depth);
    fflush(stdout);
    if (argc > 2 && strcmp(argv[2], "wait") == 0)
        for (;;)
            pause();
    return 0;
}
