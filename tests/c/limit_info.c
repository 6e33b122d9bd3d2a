/* limit_info: prints what the sandbox set up for the program (issue #4), one "key=value" per line:
 *   cpus=LIST     the CPUs it may run on (sched_getaffinity), e.g. "0,1"
 *   fsize= stack= nofile= as= nproc= core=   soft resource limits in bytes/count ("inf")
 *   cwd=PATH      its starting directory
 *   fds=LIST      its open descriptors among 0..4095
 * Runs inside the sandbox; exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

static void limit(const char *name, int res) {
    struct rlimit rl;
    if (getrlimit(res, &rl) < 0)
        printf("%s=error\n", name);
    else if (rl.rlim_cur == RLIM_INFINITY)
        printf("%s=inf\n", name);
    else
        printf("%s=%llu\n", name, (unsigned long long)rl.rlim_cur);
}

int main(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    printf("cpus=");
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const char *sep = "";
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set)) {
                printf("%s%d", sep, i);
                sep = ",";
            }
    }
    printf("\n");
    limit("fsize", RLIMIT_FSIZE);
    limit("stack", RLIMIT_STACK);
    limit("nofile", RLIMIT_NOFILE);
    limit("as", RLIMIT_AS);
    limit("nproc", RLIMIT_NPROC);
    limit("core", RLIMIT_CORE);
    char cwd[4096];
    printf("cwd=%s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
    printf("fds=");
    const char *sep = "";
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0) {
            printf("%s%d", sep, fd);
            sep = ",";
        }
    printf("\n");
    return 0;
}
