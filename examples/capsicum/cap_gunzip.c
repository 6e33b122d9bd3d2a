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
 * Started by a host instead (cap_gunzip_host.c, through lch_start: WARDEN_FDLIST names "host"),
 * it holds nothing but its socket to the host, and decompresses each pair of descriptors the
 * host passes it (input: read, seek; output: write), answering one status byte per pair.
 *
 * Build: cc -O2 -I ../../crates/warden-capsicum/c -o cap_gunzip cap_gunzip.c
 *        ../../crates/warden-capsicum/c/capsicum.c -lz */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "capsicum.h" /* fdlist_lookup (WARDEN_FDLIST=in=3,out=4), lcs_get, lcs_recv, lcs_send */

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

static int decompress(int in, int out);

/* Started by a host: one request per file, the input and the output descriptors in it. */
static int serve(int host) {
    for (;;) {
        char req[16];
        int fds[2], nfds = 2;
        ssize_t n = lcs_recv(host, req, sizeof req, fds, &nfds);
        if (n <= 0 && nfds == 0)
            return n < 0; /* the host closed its end */
        char status = 2;
        if (nfds == 2) {
            status = (char)decompress(fds[0], fds[1]);
        }
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (lcs_send(host, &status, 1, NULL, 0) < 0)
            return 1;
    }
}

int main(void) {
    int host = lcs_get();
    if (host >= 0)
        return serve(host);
    int in = fdlist_lookup("in"), out = fdlist_lookup("out");
    if (in < 0 || out < 0) {
        fprintf(stderr, "cap_gunzip: run me with --fd in=FILE.gz:read,seek --fd out=FILE:write\n");
        return 2;
    }
    return decompress(in, out);
}

static int decompress(int in, int out) {
    /* gzclose below closes this copy, not the caller's descriptor. */
    in = dup(in);
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
            if (w < 0) { perror("cap_gunzip: write"); gzclose(gz); return 1; }
            p += w;
            n -= w;
        }
    }
    if (n < 0) { int e; fprintf(stderr, "cap_gunzip: %s\n", gzerror(gz, &e)); gzclose(gz); return 1; }
    gzclose(gz);
    return 0;
}
