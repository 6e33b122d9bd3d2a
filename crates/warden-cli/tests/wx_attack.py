# Every route by which a program can run code it did not get from a file the policy calls
# executable: each writes a few bytes of x86-64 machine code into memory it can reach and jumps
# there, in a child of its own. The code writes "EXECUTED <route>" to standard output itself,
# so the test sees from outside exactly which routes ran code. argv[1]: a file the policy lets
# the program read but not execute (the user-space loader's route).
import ctypes, mmap, os, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.syscall.restype = ctypes.c_long
R, W, X = 1, 2, 4
SHARED, PRIVATE, ANON = 1, 2, 0x20
FAILED = ctypes.c_void_p(-1).value

def code(route):
    msg = ("EXECUTED %s\n" % route).encode()
    body = (b"\xbf\x01\x00\x00\x00"                       # mov edi, 1
            + b"\xba" + len(msg).to_bytes(4, "little")   # mov edx, len
            + b"\xb8\x01\x00\x00\x00"                     # mov eax, 1 (write)
            + b"\x0f\x05"                                 # syscall
            + b"\xb8\xe7\x00\x00\x00"                     # mov eax, 231 (exit_group)
            + b"\x31\xff"                                 # xor edi, edi
            + b"\x0f\x05")                                # syscall
    lea = b"\x48\x8d\x35" + len(body).to_bytes(4, "little")  # lea rsi, [rip + len(body)]
    return lea + body + msg

def check(addr):
    if addr in (None, FAILED):
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return addr

def put(addr, data):
    ctypes.memmove(addr, data, len(data))

def jump(addr):
    ctypes.CFUNCTYPE(None)(addr)()

def anon_rwx(c):
    a = check(libc.mmap(None, 4096, R | W | X, PRIVATE | ANON, -1, 0)); put(a, c); jump(a)

def anon_mprotect(c):
    a = check(libc.mmap(None, 4096, R | W, PRIVATE | ANON, -1, 0)); put(a, c)
    if libc.mprotect(ctypes.c_void_p(a), 4096, R | X) != 0: check(None)
    jump(a)

def pkey_mprotect(c):
    a = check(libc.mmap(None, 4096, R | W, PRIVATE | ANON, -1, 0)); put(a, c)
    if libc.syscall(329, ctypes.c_void_p(a), ctypes.c_size_t(4096), R | X, -1) != 0: check(None)
    jump(a)

def shared_alias(c):
    a = check(libc.mmap(None, 4096, R | W, SHARED | ANON, -1, 0)); put(a, c)
    b = check(libc.mremap(ctypes.c_void_p(a), 0, 4096, 1))
    if libc.mprotect(ctypes.c_void_p(b), 4096, R | X) != 0: check(None)
    jump(b)

def memfd(c):
    fd = os.memfd_create("code"); os.write(fd, c.ljust(4096, b"\0"))
    jump(check(libc.mmap(None, 4096, R | X, SHARED, fd, 0)))

def memfd_two_maps(c):
    fd = os.memfd_create("code"); os.ftruncate(fd, 4096)
    rx = check(libc.mmap(None, 4096, R | X, SHARED, fd, 0))
    rw = check(libc.mmap(None, 4096, R | W, SHARED, fd, 0)); put(rw, c); jump(rx)

def shm_exec(c):
    shm = libc.shmget(0, 4096, 0o1000 | 0o600)
    if shm < 0: check(None)
    rw = check(libc.shmat(shm, None, 0)); put(rw, c)
    jump(check(libc.shmat(shm, None, 0o100000 | 0o10000)))  # SHM_EXEC | SHM_RDONLY

def file_in(path):
    def route(c):
        with open(path, "wb") as f: f.write(c.ljust(4096, b"\0"))
        fd = os.open(path, os.O_RDONLY)
        jump(check(libc.mmap(None, 4096, R | X, PRIVATE, fd, 0)))
    return route

def readable_file(c):
    fd = os.open(sys.argv[1], os.O_RDONLY)  # made by the test, holding the same code
    jump(check(libc.mmap(None, 4096, R | X, PRIVATE, fd, 0)))

if sys.argv[1:2] == ["--make"]:  # the test makes the readable file with the same code
    with open(sys.argv[2], "wb") as f: f.write(code("readable-file").ljust(4096, b"\0"))
    sys.exit(0)

routes = [("anon-rwx", anon_rwx), ("anon-mprotect", anon_mprotect),
          ("pkey-mprotect", pkey_mprotect), ("shared-alias", shared_alias),
          ("memfd", memfd), ("memfd-two-maps", memfd_two_maps), ("shm-exec", shm_exec),
          ("dev-shm-file", file_in("/dev/shm/code")), ("cwd-file", file_in("code")),
          ("readable-file", readable_file)]
for name, route in routes:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            route(code(name))
        except Exception as e:
            print("refused", name, e, flush=True)
        os._exit(3)
    os.waitpid(pid, 0)
print("end", flush=True)
