/* Other syscall ABIs and numbering tricks (issue #2, item 9).
 *
 * usage: escape_abi SECRET_FILE OUTSIDE_NEW_1 OUTSIDE_NEW_2 OUTSIDE_NEW_3
 *   SECRET_FILE     a denied file (opened for reading, and for appending "PWNED")
 *   OUTSIDE_NEW_*   paths outside the sandbox that must not come to exist
 * x32: syscall numbers with bit 30 (__X32_SYSCALL_BIT) set. i386: `int $0x80` with i386
 * numbers (open = 5, creat = 8, getpid = 20) and pointers below 4 GiB (MAP_32BIT).
 */
#include "escape_common.h"
#include <sys/mman.h>

#define X32 0x40000000L

static long int80(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(nr), "b"(a), "c"(b), "d"(c)
                     : "memory", "r8", "r9", "r10", "r11");
    return ret;
}

/* Reports a raw syscall result: ok when it returned a descriptor, then reads from it. */
static void fd_result(const char *attempt, long rc, int err) {
    if (rc >= 0) {
        report_fd_read(attempt, (int)rc);
        close((int)rc);
    } else {
        result(attempt, 0, err);
    }
}

/* The same, for a descriptor opened for writing. */
static void fd_write_result(const char *attempt, long rc, int err) {
    if (rc >= 0) {
        ssize_t n = write((int)rc, "PWNED\n", 6);
        close((int)rc);
        resultf(attempt, 1, 0, "wrote=%zd", n);
    } else {
        result(attempt, 0, err);
    }
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 5) {
        fprintf(stderr, "usage: %s SECRET_FILE OUTSIDE_NEW_1 OUTSIDE_NEW_2 OUTSIDE_NEW_3\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1];
    long rc;

    /* Benign: the native ABI works at all. */
    result_rc("benign_native_getpid", syscall(SYS_getpid));

    /* x32. */
    rc = syscall(X32 | SYS_openat, AT_FDCWD, secret, O_RDONLY, 0);
    fd_result("x32_openat_secret", rc, errno);
    rc = syscall(X32 | SYS_open, secret, O_RDONLY, 0);
    fd_result("x32_open_secret", rc, errno);
    rc = syscall(X32 | SYS_openat, AT_FDCWD, "/etc/shadow", O_RDONLY, 0);
    fd_result("x32_openat_shadow", rc, errno);
    rc = syscall(X32 | SYS_openat, AT_FDCWD, secret, O_WRONLY | O_APPEND, 0);
    fd_write_result("x32_openat_secret_write", rc, errno);
    rc = syscall(X32 | SYS_openat, AT_FDCWD, argv[2], O_WRONLY | O_CREAT, 0644);
    fd_write_result("x32_openat_create_outside", rc, errno);
    rc = syscall(X32 | SYS_creat, argv[2], 0644);
    fd_write_result("x32_creat_outside", rc, errno);
    result_rc("x32_getpid", syscall(X32 | SYS_getpid));
    result_rc("x32_unlink_secret", syscall(X32 | SYS_unlink, secret));
    /* x32-only numbers (512 and up), e.g. x32 execve = 520. */
    result_rc("x32_execve_shadow", syscall(X32 | 520, "/etc/shadow", NULL, NULL));

    /* Upper 32 bits of the number set: the kernel may truncate, the filter must not pass it. */
    rc = syscall(0x100000000L | SYS_openat, AT_FDCWD, secret, O_RDONLY, 0);
    fd_result("highbits_openat_secret", rc, errno);
    rc = syscall(0x100000000L | SYS_openat, AT_FDCWD, argv[3], O_WRONLY | O_CREAT, 0644);
    fd_write_result("highbits_openat_create_outside", rc, errno);
    result_rc("highbits_getpid", syscall(0x100000000L | SYS_getpid));
    /* A number far beyond the table (unknown syscalls are denied). */
    result_rc("unknown_nr_1000", syscall(1000));

    /* i386 through int $0x80: strings must live below 4 GiB. */
    char *low = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (low == MAP_FAILED) {
        result("i386_setup_mmap32", 0, errno);
    } else {
        char *s_secret = low, *s_shadow = low + 4096, *s_out = low + 8192;
        snprintf(s_secret, 4096, "%s", secret);
        snprintf(s_shadow, 4096, "%s", "/etc/shadow");
        snprintf(s_out, 4096, "%s", argv[4]);
        rc = int80(20, 0, 0, 0); /* getpid */
        result("i386_getpid", rc > 0, rc < 0 ? (int)-rc : 0);
        rc = int80(5, (long)s_secret, O_RDONLY, 0); /* open */
        fd_result("i386_open_secret", rc, rc < 0 ? (int)-rc : 0);
        rc = int80(5, (long)s_shadow, O_RDONLY, 0);
        fd_result("i386_open_shadow", rc, rc < 0 ? (int)-rc : 0);
        rc = int80(5, (long)s_secret, O_WRONLY | O_APPEND, 0);
        fd_write_result("i386_open_secret_write", rc, rc < 0 ? (int)-rc : 0);
        /* i386 O_CREAT is 0100 as on x86_64; O_WRONLY 01. */
        rc = int80(5, (long)s_out, O_WRONLY | O_CREAT, 0644);
        fd_write_result("i386_open_create_outside", rc, rc < 0 ? (int)-rc : 0);
        rc = int80(8, (long)s_out, 0644, 0); /* creat */
        fd_write_result("i386_creat_outside", rc, rc < 0 ? (int)-rc : 0);
        rc = int80(10, (long)s_secret, 0, 0); /* unlink */
        result("i386_unlink_secret", rc == 0, rc < 0 ? (int)-rc : 0);
        rc = int80(15, (long)s_secret, 0777, 0); /* chmod */
        result("i386_chmod_secret", rc == 0, rc < 0 ? (int)-rc : 0);
    }
    done();
    return 0;
}
