/* Unix sockets outside the sandbox (tests/network.rs). cwd: scratch.
 *
 * usage: net_unix SOCKET_PATH ABSTRACT_NAME
 *   SOCKET_PATH    a listening unix stream socket outside; it answers each byte with 'Y'
 *   ABSTRACT_NAME  a listening abstract socket outside (the name without the leading NUL)
 * A connect that succeeds sends 'X' and reports the answer (data=Y).
 */
#include "escape_common.h"
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static void exchange(const char *attempt, int s) {
    char c = 0;
    struct pollfd p = {.fd = s, .events = POLLIN};
    int ok = write(s, "X", 1) == 1 && poll(&p, 1, 3000) == 1 && read(s, &c, 1) == 1;
    resultf(attempt, 1, 0, "data=%c exchanged=%d", c ? c : '-', ok);
}

static void try_path(const char *attempt, const char *path) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
        exchange(attempt, s);
    else
        result(attempt, 0, errno);
    close(s);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 3) {
        fprintf(stderr, "usage: %s SOCKET_PATH ABSTRACT_NAME\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *name = argv[2];
    try_path("connect_path", path);
    (void)!symlink(path, "link.sock");
    try_path("connect_symlink", "link.sock");
    {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        size_t n = strlen(name);
        memcpy(a.sun_path + 1, name, n);
        socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
        if (connect(s, (struct sockaddr *)&a, len) == 0)
            exchange("connect_abstract", s);
        else
            result("connect_abstract", 0, errno);
        close(s);
    }
    done();
    return 0;
}
