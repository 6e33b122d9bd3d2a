/* Executing what the policy does not let the program execute (issue #2, item 18). cwd: scratch.
 *
 * usage: escape_exec MODE SELF MS [READONLY_TOOL]
 *   MODE  "files" (copies in scratch, scripts, /etc/shadow, the race), "memfd" (a copy in a
 *         memfd, executed by descriptor), "ldso" (a copy in scratch run by the dynamic
 *         loader, which maps it itself) or "swap" (names in scratch swapped by
 *         renameat2(RENAME_EXCHANGE) while children exec one of them: two symlinks, one to
 *         SELF and one to the copy; and a directory symlink between SELF's and scratch)
 *   SELF  this program's own absolute path (readable and executable in the sandbox)
 *   MS    how long the path-rewriting race runs, in milliseconds
 *   READONLY_TOOL  a copy of this program (mode 0755) that the policy lets the program read
 *         but not execute ("files" mode)
 * Invoked as `escape_exec --payload SELF`, the program checks which file it was executed from:
 * SELF itself exits 43 quietly (the allowed program); any copy (in scratch, in a memfd) prints
 * "PAYLOAD_RAN" and exits 42. The test also checks that string never appears in the output.
 */
#include "escape_common.h"
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

static int copy_file(const char *from, const char *to, int mode) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (in < 0 || out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            return -1;
    close(in);
    close(out);
    return n < 0 ? -1 : 0;
}

/* Runs argv in a child; ok when the child's exec succeeded (its exit status is not 127). */
static void try_exec(const char *attempt, const char *path, char *const argv[]) {
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        result(attempt, 0, errno);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execv(path, argv);
        int e = errno;
        if (write(pfd[1], &e, sizeof e) < 0)
            _exit(126);
        _exit(127);
    }
    close(pfd[1]);
    int e = 0;
    ssize_t n = read(pfd[0], &e, sizeof e);
    close(pfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    /* The exec failed iff the child reported an errno through the pipe. */
    if (n == sizeof e)
        result(attempt, 0, e);
    else
        resultf(attempt, 1, 0, "status=%d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static char race_path[4096];
static const char *race_a, *race_b;
static volatile int race_stop;
static volatile unsigned long race_flips;

/* "swap": the two names exchanged back and forth by a thread of the parent. */
static const char *swap_x, *swap_y;

static void *swapper(void *arg) {
    (void)arg;
    while (!race_stop) {
        syscall(SYS_renameat2, AT_FDCWD, swap_x, AT_FDCWD, swap_y, 2 /* RENAME_EXCHANGE */);
        race_flips++;
    }
    return NULL;
}

/* Children exec `path` (in scratch) while the swapper exchanges swap_x and swap_y; counts
 * which program ran: SELF exits 43, a copy 42. */
static void swap_race(const char *name, const char *path, const char *self, double seconds) {
    char *av[] = {"race", "--payload", (char *)self, NULL};
    unsigned long benign = 0, payload = 0, failed = 0, tries = 0;
    race_stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, swapper, NULL);
    double end = now_s() + seconds;
    while (now_s() < end || tries < 32) {
        pid_t pid = fork();
        if (pid == 0) {
            execv(path, av);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        tries++;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 43)
            benign++;
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 42)
            payload++;
        else
            failed++;
    }
    race_stop = 1;
    pthread_join(t, NULL);
    char benign_name[128];
    snprintf(benign_name, sizeof benign_name, "benign_%s_allowed_ran", name);
    resultf(benign_name, benign > 0, EACCES, "allowed=%lu tries=%lu", benign, tries);
    resultf(name, payload > 0, EACCES, "payload=%lu allowed=%lu failed=%lu tries=%lu flips=%lu",
            payload, benign, failed, tries, race_flips);
}

static void *rewriter(void *arg) {
    (void)arg;
    size_t la = strlen(race_a) + 1, lb = strlen(race_b) + 1;
    /* Each value stays about as long as the other: with two back-to-back copies the path was
     * the second one nearly all the time, and under load (few tries) the allowed program could
     * miss every try, failing the benign control. */
    while (!race_stop) {
        memcpy(race_path, race_a, la);
        for (volatile int i = 0; i < 64; i++)
            ;
        memcpy(race_path, race_b, lb);
        for (volatile int i = 0; i < 64; i++)
            ;
        race_flips++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--payload") == 0) {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        if (strcmp(exe, argv[2]) == 0)
            return 43;
        printf("PAYLOAD_RAN from %s\n", exe);
        fflush(stdout);
        return 42;
    }
    setup_output();
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s MODE SELF MS [READONLY_TOOL]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *self = argv[2];
    double seconds = atoi(argv[3]) / 1000.0;
    char cwd[4000], copy[4096];
    if (!getcwd(cwd, sizeof cwd))
        return 2;
    snprintf(copy, sizeof copy, "%s/prog", cwd);
    char *payload_argv[] = {"prog", "--payload", (char *)self, NULL};

    try_exec("benign_exec_self", self, payload_argv);
    try_exec("benign_exec_bin_true", "/bin/true", (char *[]){"true", NULL});
    result_rc("benign_copy_to_scratch", copy_file(self, "prog", 0755));
    result_rc("benign_chmod_copy", chmod("prog", 0755));
    if (strcmp(mode, "memfd") == 0)
        goto memfd;
    if (strcmp(mode, "ldso") == 0)
        goto ldso;
    if (strcmp(mode, "swap") == 0) {
        /* Two symlinks exchanged: "a" leads to SELF or to the copy. */
        symlink(self, "to_self");
        symlink(copy, "to_copy");
        swap_x = "to_self";
        swap_y = "to_copy";
        swap_race("exec_swap_symlinks", "to_self", self, seconds);
        /* A directory symlink exchanged: "d/NAME" is SELF's directory's entry or scratch's. */
        char dir[4096], base[1024];
        snprintf(dir, sizeof dir, "%s", self);
        char *slash = strrchr(dir, '/');
        snprintf(base, sizeof base, "%s", slash + 1);
        *slash = 0;
        mkdir("own", 0755);
        char own_copy[4200];
        snprintf(own_copy, sizeof own_copy, "own/%s", base);
        copy_file(self, own_copy, 0755);
        symlink(dir, "dir_self");
        char own_abs[8300];
        snprintf(own_abs, sizeof own_abs, "%s/own", cwd);
        symlink(own_abs, "dir_copy");
        swap_x = "dir_self";
        swap_y = "dir_copy";
        char through[2048];
        snprintf(through, sizeof through, "dir_self/%s", base);
        swap_race("exec_swap_directory_symlinks", through, self, seconds);
        done();
        return 0;
    }

    try_exec("exec_scratch_copy", "prog", payload_argv);
    try_exec("exec_scratch_copy_abs", copy, payload_argv);
    {
        int fd = open("prog", O_RDONLY | O_CLOEXEC);
        pid_t pid = fork();
        if (pid == 0) {
            fexecve(fd, payload_argv, environ);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        result("fexecve_scratch_copy", WIFEXITED(status) && WEXITSTATUS(status) == 42, EACCES);
        close(fd);
    }
    {
        /* execveat(dirfd of scratch, "prog"). */
        int dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        pid_t pid = fork();
        if (pid == 0) {
            syscall(SYS_execveat, dfd, "prog", payload_argv, environ, 0);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        result("execveat_scratch_copy", WIFEXITED(status) && WEXITSTATUS(status) == 42, EACCES);
        close(dfd);
    }
    /* A symlink in scratch to the copy; a script in scratch; a script in scratch whose
     * interpreter is allowed (the kernel opens the script itself: it needs the exec right). */
    symlink(copy, "link_to_copy");
    try_exec("exec_symlink_to_copy", "link_to_copy", payload_argv);
    {
        int fd = open("script.sh", O_WRONLY | O_CREAT | O_TRUNC, 0755);
        dprintf(fd, "#!/bin/sh\necho PAYLOAD_RAN\nexit 42\n");
        close(fd);
        chmod("script.sh", 0755);
        try_exec("exec_scratch_script", "script.sh", (char *[]){"script.sh", NULL});
        fd = open("interp", O_WRONLY | O_CREAT | O_TRUNC, 0755);
        char line[4200];
        snprintf(line, sizeof line, "#!%s --payload\n", copy);
        /* (the interpreter gets the script's path as SELF: it is still a copy, so 42) */
        dprintf(fd, "%s", line);
        close(fd);
        chmod("interp", 0755);
        /* The script is not executable either; and its interpreter is the scratch copy. */
        try_exec("exec_script_with_scratch_interp", "interp", (char *[]){"interp", NULL});
    }
    try_exec("exec_shadow", "/etc/shadow", (char *[]){"shadow", NULL});
    if (argc == 5) {
        /* Readable, executable by its mode, but not by the policy: by path and by descriptor
         * (the latter is continued by the agent and refused by Landlock). */
        const char *tool = argv[4];
        try_exec("exec_readonly_tool", tool, payload_argv);
        int fd = open(tool, O_RDONLY | O_CLOEXEC);
        result_rc("benign_open_readonly_tool", fd);
        pid_t pid = fork();
        if (pid == 0) {
            fexecve(fd, payload_argv, environ);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        result("fexecve_readonly_tool", WIFEXITED(status) && WEXITSTATUS(status) == 42, EACCES);
        close(fd);
    }
    /* Benign: a symlink in scratch to an allowed program runs it. */
    symlink("/bin/true", "truelink");
    try_exec("benign_exec_symlink_to_bin_true", "truelink", (char *[]){"true", NULL});

    /* The race: one thread flips the path between the allowed program and the scratch copy
     * while children exec it. The agent checks one string; the kernel re-reads the other. */
    {
        race_a = self;
        race_b = copy;
        snprintf(race_path, sizeof race_path, "%s", self);
        unsigned long benign = 0, payload = 0, failed = 0, tries = 0;
        char *av[] = {"race", "--payload", (char *)self, NULL};
        double end = now_s() + seconds;
        /* At least 32 tries, however slow a loaded machine makes each. */
        while (now_s() < end || tries < 32) {
            pid_t pid = fork();
            if (pid == 0) {
                race_stop = 0;
                pthread_t t;
                pthread_create(&t, NULL, rewriter, NULL);
                /* Start once the rewriter runs, at a varying point of its cycle. */
                while (race_flips < 100 + (unsigned long)(tries % 97))
                    ;
                execv(race_path, av);
                _exit(127);
            }
            int status = 0;
            waitpid(pid, &status, 0);
            tries++;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 43)
                benign++;
            else if (WIFEXITED(status) && WEXITSTATUS(status) == 42)
                payload++;
            else
                failed++;
        }
        resultf("benign_exec_race_allowed_ran", benign > 0, EACCES, "allowed=%lu tries=%lu", benign, tries);
        resultf("exec_race_payload", payload > 0, EACCES, "payload=%lu allowed=%lu failed=%lu tries=%lu", payload, benign, failed, tries);
    }
    done();
    return 0;

memfd:
    {
        /* A memfd holding the scratch copy (which may not be executed at its path), executed
         * by descriptor. */
        int mfd = memfd_create("payload", MFD_CLOEXEC);
        int in = open("prog", O_RDONLY);
        char buf[65536];
        ssize_t n;
        while (mfd >= 0 && in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (write(mfd, buf, n) != n)
                break;
        close(in);
        pid_t pid = fork();
        if (pid == 0) {
            fexecve(mfd, payload_argv, environ);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        result("fexecve_memfd_copy", WIFEXITED(status) && WEXITSTATUS(status) == 42, EACCES);
        close(mfd);
    }
    done();
    return 0;

ldso:
    /* The dynamic loader is an allowed program; given a file it maps and runs it itself. */
    {
        char *av[] = {"ld.so", copy, "--payload", (char *)self, NULL};
        try_exec("ldso_runs_scratch_copy", "/lib64/ld-linux-x86-64.so.2", av);
    }
    done();
    return 0;
}
