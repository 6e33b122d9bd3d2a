/* The agent as a server facing a hostile client (brief invariant 6): bad pointers, huge sizes,
 * results aimed at read-only memory, and requests that block in the agent for callers that
 * then die. After each round, an ordinary delegated call must still be answered.
 *
 * usage: escape_agent WORKERS
 *   WORKERS  how many FIFO opens to leave blocked (more than the agent's worker limit)
 * cwd: scratch. The test bounds the whole run with a deadline: a starved agent shows up as a
 * run that never reaches DONE.
 */
#include "escape_common.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/openat2.h>

static void alive(const char *attempt) {
    try_open_read(attempt, AT_FDCWD, "/etc/passwd");
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKERS\n", argv[0]);
        return 2;
    }
    int workers = atoi(argv[1]);

    /* Bad pointers and unterminated strings. */
    result_rc("open_null", syscall(SYS_openat, AT_FDCWD, NULL, O_RDONLY));
    result_rc("open_bad_pointer", syscall(SYS_openat, AT_FDCWD, (char *)1, O_RDONLY));
    char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    memset(page, 'a', 4096); /* no NUL before the unmapped page */
    result_rc("open_unterminated_at_page_end", syscall(SYS_openat, AT_FDCWD, page, O_RDONLY));
    char *big = malloc(1 << 20);
    memset(big, 'a', (1 << 20) - 1);
    big[(1 << 20) - 1] = 0;
    result_rc("open_1mib_path", syscall(SYS_openat, AT_FDCWD, big, O_RDONLY));
    for (int i = 0; i < (1 << 20) - 2; i += 2)
        big[i] = '/', big[i + 1] = 'a';
    result_rc("open_1mib_of_components", syscall(SYS_openat, AT_FDCWD, big, O_RDONLY));
    for (int i = 0; i < (1 << 20) - 3; i += 3)
        big[i] = '.', big[i + 1] = '.', big[i + 2] = '/';
    result_rc("open_many_dotdots", syscall(SYS_openat, AT_FDCWD, big, O_RDONLY));
    alive("benign_alive_after_bad_paths");

    /* Huge sizes. */
    struct open_how how = {.flags = O_RDONLY};
    result_rc("openat2_huge_size", syscall(SYS_openat2, AT_FDCWD, "/etc/passwd", &how, 1UL << 40));
    result_rc("setxattr_huge_size", syscall(SYS_setxattr, "x", "user.a", big, 1UL << 40, 0));
    {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        result_rc("connect_huge_len", syscall(SYS_connect, s, big, 1UL << 31));
        close(s);
    }
    {
        char buf[4096];
        result_rc("benign_readlink_int_max_bufsize", syscall(SYS_readlink, "/proc/self/exe", buf, 0x7fffffffUL));
        result_rc("getxattr_huge_size_bad_buf", syscall(SYS_getxattr, "/etc/passwd", "user.a", (char *)1, 1UL << 40));
    }
    alive("benign_alive_after_huge_sizes");

    /* Results aimed at memory the client may not write: the agent must not write it either. */
    {
        char *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memset(ro, 0x5a, 4096);
        mprotect(ro, 4096, PROT_READ);
        long rc = syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", ro, 0);
        int e = errno, changed = 0;
        for (int i = 0; i < 4096; i++)
            changed |= ro[i] != 0x5a;
        resultf("stat_into_readonly_memory", rc == 0 || changed, e, "changed=%d", changed);
        rc = syscall(SYS_readlink, "/proc/self/exe", ro, 100);
        e = errno;
        changed = 0;
        for (int i = 0; i < 4096; i++)
            changed |= ro[i] != 0x5a;
        resultf("readlink_into_readonly_memory", rc >= 0 || changed, e, "changed=%d", changed);
        rc = syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", (void *)main, 0);
        result("stat_into_program_text", rc == 0, errno);
        /* The name of a unix socket the agent bound by a short name is the agent's to write
         * (getsockname, issue 39): not into read-only memory or the program's text either. */
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (!getcwd(un.sun_path, sizeof(un.sun_path) - 16))
            un.sun_path[0] = 0;
        strcat(un.sun_path, "/named.sock");
        result_rc("benign_bind_named_unix_socket", bind(s, (struct sockaddr *)&un, sizeof(un)));
        socklen_t len = sizeof(un);
        rc = syscall(SYS_getsockname, s, ro, &len);
        e = errno;
        changed = 0;
        for (int i = 0; i < 4096; i++)
            changed |= ro[i] != 0x5a;
        resultf("sockname_into_readonly_memory", rc == 0 || changed, e, "changed=%d", changed);
        len = sizeof(un);
        rc = syscall(SYS_getsockname, s, (void *)main, &len);
        result("sockname_into_program_text", rc == 0, errno);
        struct sockaddr_un out;
        /* And the length itself read-only (0x5a5a5a5a: room enough). */
        rc = syscall(SYS_getsockname, s, &out, (socklen_t *)ro);
        e = errno;
        changed = 0;
        for (int i = 0; i < 4096; i++)
            changed |= ro[i] != 0x5a;
        resultf("sockname_length_in_readonly_memory", rc == 0 || changed, e, "changed=%d", changed);
        close(s);
    }
    alive("benign_alive_after_readonly_results");

    /* Callers that die in the middle of a call that blocks in the agent: FIFO opens with no
     * writer. More of them than the agent has workers; then all of them are killed. */
    result_rc("benign_mkfifo", mkfifo("fifo", 0600));
    pid_t *kids = calloc(workers, sizeof *kids);
    for (int i = 0; i < workers; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            open("fifo", O_RDONLY);
            _exit(0);
        }
    }
    usleep(300000);
    for (int i = 0; i < workers; i++)
        if (kids[i] > 0)
            kill(kids[i], SIGKILL);
    for (int i = 0; i < workers; i++)
        if (kids[i] > 0)
            waitpid(kids[i], NULL, 0);
    printf("INFO killed %d blocked openers\n", workers);
    fflush(stdout);
    alive("benign_alive_after_dead_fifo_openers");
    /* Release whatever the agent may still be blocked on. */
    int w = open("fifo", O_WRONLY | O_NONBLOCK);
    printf("INFO fifo writer: %s\n", w >= 0 ? "opened" : ename(errno));
    if (w >= 0)
        close(w);
    done();
    return 0;
}
