/* A compartmentalised decompressor, as the Capsicum paper did with gzip.
 *
 * The privileged part is warden: it opens the input (read, seek) and the output (write) and
 * starts this program in capability mode holding exactly those two descriptors:
 *
 *     warden run --capability-mode --fd in=FILE.gz:read,seek --fd out=FILE:write -- cap_gunzip
 *
 * The decompression (zlib, parsing untrusted input) runs here with nothing else: no path, no
 * socket, no other process. To show what that buys, a stream whose content starts with
 * "EXPLOIT" plays a decompressor taken over by its input: it tries to read /etc/passwd, to
 * connect a socket and to write into its input, and reports each attempt on stderr as
 * "exploit: WHAT: errno N (TEXT)" (or "exploit: WHAT: succeeded").
 *
 * Build: cc -O2 -o cap_gunzip cap_gunzip.c -lz */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

/* libcapsicum's fdlist_lookup: the descriptor warden named NAME (WARDEN_FDLIST=in=3,out=4). */
static int fdlist_lookup(const char *name) {
    const char *list = getenv("WARDEN_FDLIST");
    size_t n = strlen(name);
    while (list && *list) {
        if (strncmp(list, name, n) == 0 && list[n] == '=')
            return atoi(list + n + 1);
        list = strchr(list, ',');
        if (list) list++;
    }
    return -1;
}

static void report(const char *what, int rc) {
    if (rc < 0)
        fprintf(stderr, "exploit: %s: errno %d (%s)\n", what, errno, strerror(errno));
    else
        fprintf(stderr, "exploit: %s: succeeded\n", what);
}

/* What an attacker who controls the decompressor would try. */
static void exploited(int in) {
    report("open /etc/passwd", open("/etc/passwd", O_RDONLY));
    int s = socket(AF_INET, SOCK_STREAM, 0);
    report("socket", s);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    if (s < 0) {
        /* No new socket: try connecting one it can still make, a unix socket pair. */
        int sv[2];
        report("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        s = sv[0];
    }
    report("connect 127.0.0.1:80", connect(s, (struct sockaddr *)&a, sizeof a));
    report("write to the input", (int)pwrite(in, "pwned", 5, 0));
}

int main(void) {
    int in = fdlist_lookup("in"), out = fdlist_lookup("out");
    if (in < 0 || out < 0) {
        fprintf(stderr, "cap_gunzip: run me with --fd in=FILE.gz:read,seek --fd out=FILE:write\n");
        return 2;
    }
    gzFile gz = gzdopen(in, "rb");
    if (!gz) { perror("gzdopen"); return 1; }
    char buf[65536];
    int n, first = 1;
    while ((n = gzread(gz, buf, sizeof buf)) > 0) {
        if (first && n >= 7 && memcmp(buf, "EXPLOIT", 7) == 0)
            exploited(in);
        first = 0;
        for (char *p = buf; n > 0;) {
            ssize_t w = write(out, p, n);
            if (w < 0) { perror("cap_gunzip: write"); return 1; }
            p += w;
            n -= w;
        }
    }
    if (n < 0) { int e; fprintf(stderr, "cap_gunzip: %s\n", gzerror(gz, &e)); return 1; }
    return 0;
}
