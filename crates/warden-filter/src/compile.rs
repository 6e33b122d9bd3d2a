//! The seccomp filter: [`crate::syscalls::TABLE`] compiled to BPF with libseccomp.
//!
//! libseccomp writes the architecture check first: a call made through any ABI other than
//! x86_64 (i386 `int $0x80`) and any x32 number (bit 30 set) gets the "bad architecture" action,
//! which we set to `ENOSYS`; so do unknown numbers. Argument guards compare register values
//! only, masked to the width the kernel actually reads (an `int` argument is compared on its low
//! 32 bits, so a garbage upper half cannot slip a value past the check).
//!
//! `warden`'s build script compiles the program for every profile ahead of time; warden installs
//! it raw in the sandbox's first process with `SECCOMP_FILTER_FLAG_NEW_LISTENER`.

use crate::syscalls::{Class, Guard, Profile, TABLE};
use crate::Instruction;
use libseccomp::{
    ScmpAction, ScmpArch, ScmpArgCompare as Cmp, ScmpCompareOp as Op, ScmpFilterContext,
    ScmpSyscall,
};
use std::io::{Read, Seek};

/// A failure to build the filter; always a bug or a libseccomp too old for this table.
#[derive(Debug, thiserror::Error)]
#[error("failed to build the seccomp filter ({what}): {source}")]
pub struct FilterError {
    what: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

fn err<E: std::error::Error + Send + Sync + 'static>(
    what: impl Into<String>,
) -> impl FnOnce(E) -> FilterError {
    let what = what.into();
    move |e| FilterError {
        what,
        source: Box::new(e),
    }
}

const NS_FLAGS: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;
/// CLONE_NEWTIME shares its bit with clone's exit-signal byte, so it is checked for unshare only.
const NEWTIME: u64 = 0x80;
const LOW32: u64 = 0xffff_ffff;

fn eq32(arg: u32, value: u64) -> Cmp {
    Cmp::new(arg, Op::MaskedEqual(LOW32), value)
}

/// `(argument & mask) == value`, for bits of an int argument's low 32 bits.
fn bits(arg: u32, mask: u64, value: u64) -> Cmp {
    Cmp::new(arg, Op::MaskedEqual(mask), value)
}

/// Masked comparisons that together match every 32-bit value of argument `arg` except
/// `refused` (libseccomp has no "not equal under a mask", and an unconditional allow would
/// swallow any conditional deny for the same call).
///
/// A value differs from all refused values if it differs in a bit on which they all agree: one
/// single-bit rule per such bit. The values left agree with the refused ones on every such bit,
/// so they differ only in the few bits where the refused values disagree; those combinations
/// are enumerated, minus the refused ones.
fn all_but32(arg: u32, refused: &[u64]) -> Vec<Cmp> {
    let first = refused[0] & LOW32;
    let agree = refused
        .iter()
        .fold(LOW32, |m, v| m & !((v & LOW32) ^ first));
    let mut rules: Vec<Cmp> = (0..32)
        .map(|b| 1u64 << b)
        .filter(|bit| agree & bit != 0)
        .map(|bit| Cmp::new(arg, Op::MaskedEqual(bit), !first & bit))
        .collect();
    let free: Vec<u64> = (0..32)
        .map(|b| 1u64 << b)
        .filter(|bit| agree & bit == 0)
        .collect();
    assert!(free.len() <= 8, "refused values too different to enumerate");
    for combo in 0..(1u64 << free.len()) {
        let mut value = first & agree;
        for (i, bit) in free.iter().enumerate() {
            if combo & (1 << i) != 0 {
                value |= bit;
            }
        }
        if !refused.iter().any(|r| r & LOW32 == value) {
            rules.push(eq32(arg, value));
        }
    }
    rules
}

/// prctl options that act on the caller only.
const PRCTL_ALLOWED: &[i32] = &[
    libc::PR_SET_PDEATHSIG,
    libc::PR_GET_PDEATHSIG,
    libc::PR_GET_DUMPABLE,
    libc::PR_SET_DUMPABLE,
    libc::PR_GET_KEEPCAPS,
    libc::PR_SET_KEEPCAPS,
    libc::PR_SET_NAME,
    libc::PR_GET_NAME,
    libc::PR_GET_SECCOMP,
    libc::PR_SET_SECCOMP,
    libc::PR_CAPBSET_READ,
    libc::PR_CAPBSET_DROP,
    libc::PR_GET_TSC,
    libc::PR_GET_SECUREBITS,
    libc::PR_SET_TIMERSLACK,
    libc::PR_GET_TIMERSLACK,
    libc::PR_SET_CHILD_SUBREAPER,
    libc::PR_GET_CHILD_SUBREAPER,
    libc::PR_SET_NO_NEW_PRIVS,
    libc::PR_GET_NO_NEW_PRIVS,
    libc::PR_GET_TID_ADDRESS,
    libc::PR_SET_THP_DISABLE,
    libc::PR_GET_THP_DISABLE,
    libc::PR_CAP_AMBIENT,
    52, // PR_GET_SPECULATION_CTRL (the libc crate has no name for it on musl)
    53, // PR_SET_SPECULATION_CTRL
    libc::PR_SET_PTRACER,
    0x5356_4d41, // PR_SET_VMA (anonymous mapping names)
    65,          // PR_SET_MDWE
    66,          // PR_GET_MDWE
];

/// Compiles the table into a BPF program, for a policy of profile `profile`.
pub fn compile(profile: Profile) -> Result<Vec<Instruction>, FilterError> {
    export(&context(profile)?)
}

/// The BPF program libseccomp makes of `ctx`.
fn export(ctx: &ScmpFilterContext) -> Result<Vec<Instruction>, FilterError> {
    let mut file = memfd()?;
    ctx.export_bpf(&file).map_err(err("export"))?;
    let mut bytes = Vec::new();
    file.rewind().map_err(err("rewind"))?;
    file.read_to_end(&mut bytes).map_err(err("read back"))?;
    Ok(decode(&bytes))
}

/// Compiles [`crate::syscalls::ARGUMENT_DENIALS`] into the second filter: every call is
/// allowed but the listed argument values, which fail with their errno. Stacked on the table's
/// program, whose verdict still decides everything else (the kernel takes the stricter of the
/// two), and it adds nothing to the cost of the calls it does not name: the kernel's action
/// cache answers those without running it.
pub fn compile_argument_denials() -> Result<Vec<Instruction>, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).map_err(err("new"))?;
    // Other ABIs are the table's filter's to refuse.
    ctx.set_act_badarch(ScmpAction::Allow)
        .map_err(err("badarch"))?;
    ctx.set_ctl_nnp(false).map_err(err("nnp"))?;
    for d in crate::syscalls::ARGUMENT_DENIALS {
        ctx.add_rule_conditional(
            ScmpAction::Errno(d.errno),
            ScmpSyscall::from(d.nr as i32),
            &[eq32(d.arg, d.value)],
        )
        .map_err(err(d.note))?;
    }
    export(&ctx)
}

/// The third program, stacked only under `warden run --wx`: `shmat` with `SHM_EXEC` fails
/// with `EPERM`. A SysV segment attached executable (read-only) and again writable is memory
/// the program writes and runs, which `PR_SET_MDWE` alone does not see (two mappings, neither
/// both). Everything else is allowed here; the table's program decides it.
pub fn compile_wx_denials() -> Result<Vec<Instruction>, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).map_err(err("new"))?;
    ctx.set_act_badarch(ScmpAction::Allow)
        .map_err(err("badarch"))?;
    ctx.set_ctl_nnp(false).map_err(err("nnp"))?;
    const SHM_EXEC: u64 = 0o100000;
    ctx.add_rule_conditional(
        ScmpAction::Errno(libc::EPERM),
        ScmpSyscall::from(libc::SYS_shmat as i32),
        &[bits(2, SHM_EXEC, SHM_EXEC)],
    )
    .map_err(err("shmat with SHM_EXEC"))?;
    export(&ctx)
}

/// The program a sandbox without namespaces stacks on its profile's (warden's no-namespace
/// mode), for what its PID, IPC and network namespaces held and the profile runs directly:
///
/// - `setpriority` and `ioprio_set` only for `PRIO_PROCESS`/`IOPRIO_WHO_PROCESS` 0 (a user's
///   or a group's would reach the host's processes); `prlimit64` setting another pid's limits,
///   `sched_setaffinity`/`sched_setscheduler`/`sched_setparam`/`sched_setattr` and `setpgid`
///   of another pid: EPERM. (Signals are Landlock's: its signal scope, ABI 6, confines them,
///   `F_SETOWN`'s SIGIO included, to the sandbox's domain; without it the agent decides.)
/// - System V IPC and POSIX message queues: the host's, EPERM.
/// - `private` (no net rule): sockets of any family but unix and netlink, EACCES.
///
/// A value with high bits set is refused too, though the kernel reads only the low 32: the
/// filter errs on the side of refusing.
pub fn compile_hostns_denials(private: bool) -> Result<Vec<Instruction>, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).map_err(err("new"))?;
    ctx.set_act_badarch(ScmpAction::Allow)
        .map_err(err("badarch"))?;
    ctx.set_ctl_nnp(false).map_err(err("nnp"))?;
    let deny = |ctx: &mut ScmpFilterContext,
                errno: i32,
                nr: libc::c_long,
                cmp: &[Cmp],
                what: &'static str|
     -> Result<(), FilterError> {
        ctx.add_rule_conditional(ScmpAction::Errno(errno), ScmpSyscall::from(nr as i32), cmp)
            .map_err(err(what))?;
        Ok(())
    };
    const IOPRIO_WHO_PROCESS: u64 = 1;
    for (nr, own_which) in [
        (libc::SYS_setpriority, libc::PRIO_PROCESS as u64),
        (libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS),
    ] {
        deny(
            &mut ctx,
            libc::EPERM,
            nr,
            &[Cmp::new(0, Op::NotEqual, own_which)],
            "priority",
        )?;
        deny(
            &mut ctx,
            libc::EPERM,
            nr,
            &[Cmp::new(1, Op::NotEqual, 0)],
            "priority",
        )?;
    }
    deny(
        &mut ctx,
        libc::EPERM,
        libc::SYS_prlimit64,
        &[Cmp::new(0, Op::NotEqual, 0), Cmp::new(2, Op::NotEqual, 0)],
        "another process's limits",
    )?;
    for nr in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_setpgid,
    ] {
        deny(
            &mut ctx,
            libc::EPERM,
            nr,
            &[Cmp::new(0, Op::NotEqual, 0)],
            "another process",
        )?;
    }
    for nr in [
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_shmdt,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
        libc::SYS_mq_open,
        libc::SYS_mq_unlink,
    ] {
        ctx.add_rule(ScmpAction::Errno(libc::EPERM), ScmpSyscall::from(nr as i32))
            .map_err(err("System V IPC"))?;
    }
    if private {
        let only = [libc::AF_UNIX as u64, libc::AF_NETLINK as u64];
        for cmp in all_but32(0, &only) {
            ctx.add_rule_conditional(
                ScmpAction::Errno(libc::EACCES),
                ScmpSyscall::from(libc::SYS_socket as i32),
                &[cmp],
            )
            .map_err(err("socket families"))?;
        }
    }
    export(&ctx)
}

/// The pseudo-C listing of the filter (libseccomp's PFC), for review and for the tests.
pub fn listing(profile: Profile) -> Result<String, FilterError> {
    let ctx = context(profile)?;
    let mut file = memfd()?;
    ctx.export_pfc(&file).map_err(err("export"))?;
    let mut text = String::new();
    file.rewind().map_err(err("rewind"))?;
    file.read_to_string(&mut text).map_err(err("read back"))?;
    Ok(text)
}

/// Decodes the byte stream `seccomp_export_bpf(3)` writes into instructions.
fn decode(bytes: &[u8]) -> Vec<Instruction> {
    bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

fn memfd() -> Result<std::fs::File, FilterError> {
    let fd = rustix::fs::memfd_create("warden-filter", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(err("memfd_create"))?;
    Ok(std::fs::File::from(fd))
}

fn context(profile: Profile) -> Result<ScmpFilterContext, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Errno(libc::ENOSYS)).map_err(err("new"))?;
    // The native arch only (x86_64); libseccomp's x86_64 prologue also routes x32 numbers here.
    ctx.set_act_badarch(ScmpAction::Errno(libc::ENOSYS))
        .map_err(err("badarch"))?;
    // no_new_privs is set by the launcher itself, so the raw install does not depend on it.
    ctx.set_ctl_nnp(false).map_err(err("nnp"))?;
    // A binary search over syscall numbers instead of libseccomp's default linear list: every
    // call the sandbox makes runs this program, and a linear list makes a call near the end of
    // the table (futex, openat) walk a few hundred instructions (a test pins the bound).
    ctx.set_ctl_optimize(2).map_err(err("optimize"))?;
    debug_assert_eq!(ScmpArch::native(), ScmpArch::X8664);
    for entry in TABLE {
        let sys = ScmpSyscall::from(entry.nr as i32);
        let name = entry.name();
        match profile.class(entry) {
            Class::Direct => {
                ctx.add_rule(ScmpAction::Allow, sys).map_err(err(name))?;
            }
            Class::Delegated(_) => {
                ctx.add_rule(ScmpAction::Notify, sys).map_err(err(name))?;
            }
            // libseccomp refuses a rule that repeats the default action; ENOSYS is the default.
            Class::Denied(libc::ENOSYS) => {}
            Class::Denied(errno) => {
                ctx.add_rule(ScmpAction::Errno(errno), sys)
                    .map_err(err(name))?;
            }
            Class::Guarded(g) => guard(&mut ctx, sys, g).map_err(err(name))?,
        }
    }
    Ok(ctx)
}

fn guard(
    ctx: &mut ScmpFilterContext,
    sys: ScmpSyscall,
    g: Guard,
) -> Result<(), libseccomp::error::SeccompError> {
    let allow = ScmpAction::Allow;
    let eperm = ScmpAction::Errno(libc::EPERM);
    match g {
        Guard::Clone | Guard::Unshare => {
            let flags = if g == Guard::Unshare {
                NS_FLAGS | NEWTIME
            } else {
                NS_FLAGS
            };
            ctx.add_rule_conditional(allow, sys, &[Cmp::new(0, Op::MaskedEqual(flags), 0)])?;
            for bit in (0..64).map(|b| 1u64 << b).filter(|b| flags & b != 0) {
                ctx.add_rule_conditional(eperm, sys, &[Cmp::new(0, Op::MaskedEqual(bit), bit)])?;
            }
        }
        Guard::CapabilityFcntl => {
            let owners = Profile::OWNER_FCNTLS;
            for cmd in owners {
                ctx.add_rule_conditional(ScmpAction::Notify, sys, &[eq32(1, cmd)])?;
            }
            for cmp in all_but32(1, &owners) {
                ctx.add_rule_conditional(allow, sys, &[cmp])?;
            }
        }
        Guard::CapabilityIoctl => {
            // ioctl's request is an unsigned int: compare the low 32 bits.
            let owners = Profile::OWNER_IOCTLS;
            for req in owners {
                ctx.add_rule_conditional(ScmpAction::Notify, sys, &[eq32(1, req)])?;
            }
            for cmp in all_but32(1, &owners) {
                ctx.add_rule_conditional(allow, sys, &[cmp])?;
            }
        }
        Guard::Seccomp => {
            let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
            ctx.add_rule_conditional(allow, sys, &[Cmp::new(1, Op::MaskedEqual(listener), 0)])?;
            ctx.add_rule_conditional(
                eperm,
                sys,
                &[Cmp::new(1, Op::MaskedEqual(listener), listener)],
            )?;
        }
        Guard::Personality => {
            for p in [0xffff_ffff, 0] {
                ctx.add_rule_conditional(allow, sys, &[eq32(0, p)])?;
            }
        }
        Guard::Prctl => {
            for &option in PRCTL_ALLOWED {
                ctx.add_rule_conditional(allow, sys, &[eq32(0, option as u32 as u64)])?;
            }
        }
        Guard::Socket | Guard::Socketpair | Guard::HostSocket => {
            let unix = libc::AF_UNIX as u64;
            let kind = |t: i32| Cmp::new(1, Op::MaskedEqual(0xf), t as u64);
            for t in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
                ctx.add_rule_conditional(allow, sys, &[eq32(0, unix), kind(t)])?;
            }
            ctx.add_rule_conditional(
                ScmpAction::Errno(libc::EACCES),
                sys,
                &[eq32(0, unix), kind(libc::SOCK_DGRAM)],
            )?;
            if g != Guard::Socketpair {
                ctx.add_rule_conditional(allow, sys, &[eq32(0, libc::AF_NETLINK as u64)])?;
                let inet = if g == Guard::HostSocket {
                    ScmpAction::Notify
                } else {
                    allow
                };
                for family in [libc::AF_INET, libc::AF_INET6] {
                    ctx.add_rule_conditional(inet, sys, &[eq32(0, family as u64)])?;
                }
            }
        }
        Guard::NoFastOpen(flags) => {
            let fastopen = libc::MSG_FASTOPEN as u32 as u64;
            let bit = |v| Cmp::new(flags, Op::MaskedEqual(fastopen), v);
            ctx.add_rule_conditional(allow, sys, &[bit(0)])?;
            ctx.add_rule_conditional(ScmpAction::Errno(libc::EOPNOTSUPP), sys, &[bit(fastopen)])?;
        }
        Guard::KernelOpen(flags) => {
            // Landlock checks every open except O_PATH ones; O_TMPFILE makes a file the agent
            // should name. Both bits are in the low 32 bits of the int argument.
            let o_path = libc::O_PATH as u32 as u64;
            let tmpfile = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32 as u64;
            kernel_opens(ctx, sys, flags, o_path | tmpfile)?;
            ctx.add_rule_conditional(ScmpAction::Notify, sys, &[bits(flags, o_path, o_path)])?;
            ctx.add_rule_conditional(ScmpAction::Notify, sys, &[bits(flags, tmpfile, tmpfile)])?;
        }
        Guard::ViewOpen(flags) => {
            let tmpfile = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32 as u64;
            kernel_opens(ctx, sys, flags, tmpfile)?;
            ctx.add_rule_conditional(ScmpAction::Notify, sys, &[bits(flags, tmpfile, tmpfile)])?;
        }
        Guard::SendTo => {
            let fastopen = libc::MSG_FASTOPEN as u32 as u64;
            let bit = |v| Cmp::new(3, Op::MaskedEqual(fastopen), v);
            let no_addr = Cmp::new(4, Op::Equal, 0);
            ctx.add_rule_conditional(allow, sys, &[no_addr, bit(0)])?;
            ctx.add_rule_conditional(
                ScmpAction::Errno(libc::EOPNOTSUPP),
                sys,
                &[no_addr, bit(fastopen)],
            )?;
            ctx.add_rule_conditional(ScmpAction::Notify, sys, &[Cmp::new(4, Op::NotEqual, 0)])?;
        }
    }
    Ok(())
}

/// The rules of an open the kernel decides, for flags (argument `arg`) with none of the
/// `agents` bits: allowed, except two kinds that go to the agent.
/// - Access mode 3, which opens for neither reading nor writing: Landlock asks no right of such
///   an open, so it would open any file the kernel's modes let through, for `fstat` and
///   `ioctl`. The agent refuses it, as it does in every mode.
/// - `O_TRUNC` with access mode `O_RDONLY`: it truncates with no write access asked, and the
///   kernel-first ruleset leaves Landlock's `truncate` unhandled, so that an open's walk stops at
///   the first rule granting what it opens for (`confine::landlock::create` in warden). An open
///   for writing needs `write_file`, which the policy gives with `truncate`.
///
/// Every combination of the bits falls under exactly one rule.
fn kernel_opens(
    ctx: &mut ScmpFilterContext,
    sys: ScmpSyscall,
    arg: u32,
    agents: u64,
) -> Result<(), libseccomp::error::SeccompError> {
    let trunc = libc::O_TRUNC as u32 as u64;
    let mask = agents | trunc | crate::abi::O_ACCMODE as u32 as u64;
    let [rdonly, wronly, rdwr, neither] = [
        libc::O_RDONLY,
        libc::O_WRONLY,
        libc::O_RDWR,
        crate::abi::O_ACCMODE,
    ]
    .map(|m| m as u32 as u64);
    for v in [rdonly, wronly, rdwr, trunc | wronly, trunc | rdwr] {
        ctx.add_rule_conditional(ScmpAction::Allow, sys, &[bits(arg, mask, v)])?;
    }
    for v in [neither, trunc | rdonly, trunc | neither] {
        ctx.add_rule_conditional(ScmpAction::Notify, sys, &[bits(arg, mask, v)])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::{Network, Opens, TIOCLINUX, TIOCSTI};

    /// Runs `prog` on a seccomp_data of (`nr`, x86_64, `args`); returns the action and how many
    /// instructions ran. Implements the classic-BPF subset libseccomp emits.
    fn run_bpf(prog: &[Instruction], nr: u32, args: [u64; 6]) -> (u32, usize) {
        run_bpf_on(prog, crate::AUDIT_ARCH_X86_64, nr, args)
    }

    fn run_bpf_on(prog: &[Instruction], arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut acc, mut x, mut mem) = (0u32, 0u32, [0u32; 16]);
        let (mut pc, mut steps) = (0usize, 0usize);
        loop {
            let ins = prog[pc];
            steps += 1;
            pc += 1;
            let k = ins.k;
            let class = ins.code & 0x07;
            match (class, ins.code) {
                (0x00, 0x20) => {
                    let o = k as usize;
                    acc = u32::from_ne_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
                }
                (0x00, 0x00) => acc = k,
                (0x00, 0x60) => acc = mem[k as usize],
                (0x01, 0x61) => x = mem[k as usize],
                (0x01, 0x01) => x = k,
                (0x02, _) => mem[k as usize] = acc,
                (0x03, _) => mem[k as usize] = x,
                (0x04, 0x54) => acc &= k,
                (0x05, 0x05) => pc += k as usize,
                (0x05, code) => {
                    let taken = match code & 0xf0 {
                        0x10 => acc == k,
                        0x20 => acc > k,
                        0x30 => acc >= k,
                        0x40 => acc & k != 0,
                        other => panic!("jump op {other:#x}"),
                    };
                    pc += if taken { ins.jt } else { ins.jf } as usize;
                }
                (0x06, _) => return (k, steps),
                (0x07, _) => acc = x,
                other => panic!("unsupported BPF op {other:?}"),
            }
        }
    }

    const ALLOW: u32 = 0x7fff_0000;
    const NOTIFY: u32 = 0x7fc0_0000;
    const ERRNO: u32 = 0x0005_0000;
    const NETWORKS: [Network; 3] = [
        Network::Private,
        Network::Host { udp: false },
        Network::Host { udp: true },
    ];

    fn net(network: Network) -> Profile {
        Profile {
            network,
            ..Profile::default()
        }
    }

    #[test]
    fn capability_mode_sends_descriptor_owners_to_the_agent_and_nothing_else() {
        let prog = compile(Profile {
            capability_mode: true,
            ..Profile::default()
        })
        .unwrap();
        let call = |nr: i64, arg1: u64| run_bpf(&prog, nr as u32, [3, arg1, 0, 0, 0, 0]).0;
        for cmd in Profile::OWNER_FCNTLS {
            assert_eq!(call(libc::SYS_fcntl, cmd), NOTIFY, "fcntl {cmd}");
            // The kernel reads an int: garbage above it changes nothing.
            assert_eq!(call(libc::SYS_fcntl, cmd | 0xdead_0000_0000), NOTIFY);
        }
        for cmd in [
            libc::F_GETFL,
            libc::F_SETFL,
            libc::F_GETOWN,
            10, // F_SETSIG
            0,
            9,
            16,
        ] {
            assert_eq!(call(libc::SYS_fcntl, cmd as u64), ALLOW, "fcntl {cmd}");
        }
        for req in Profile::OWNER_IOCTLS {
            assert_eq!(call(libc::SYS_ioctl, req), NOTIFY, "ioctl {req:#x}");
        }
        // The terminal's requests are the argument denials' to refuse, here as everywhere.
        for req in [TIOCSTI, TIOCLINUX] {
            assert_eq!(call(libc::SYS_ioctl, req), ALLOW, "ioctl {req:#x}");
        }
        for req in [libc::FIONREAD, libc::TCGETS, 0x8903, 0x8900, libc::FIONBIO] {
            let req = req as u32 as u64;
            assert_eq!(call(libc::SYS_ioctl, req), ALLOW, "ioctl {req:#x}");
        }
        // Without capability mode they are the table's as ever.
        let plain = compile(Profile::default()).unwrap();
        for req in Profile::OWNER_IOCTLS {
            assert_eq!(
                run_bpf(&plain, libc::SYS_ioctl as u32, [3, req, 0, 0, 0, 0]).0,
                ALLOW
            );
        }
        let setown = [3, libc::F_SETOWN as u64, 0, 0, 0, 0];
        assert_eq!(run_bpf(&plain, libc::SYS_fcntl as u32, setown).0, ALLOW);
    }

    #[test]
    fn every_call_gets_its_class_quickly() {
        // The compiled program, run instruction by instruction, gives every table entry the
        // action of its class, within a bound that keeps the filter's cost per call flat (a
        // linear list made late entries such as futex and openat walk 200+ instructions).
        let profiles = NETWORKS.map(net).into_iter().chain([
            Profile {
                ptrace_inside: true,
                ..Profile::default()
            },
            Profile {
                opens: Opens::Kernel,
                ..Profile::default()
            },
        ]);
        for profile in profiles {
            let prog = compile(profile).unwrap();
            let mut worst = 0;
            for e in TABLE {
                let class = profile.class(e);
                let args = match class {
                    Class::Guarded(Guard::Prctl) => [libc::PR_GET_NAME as u64, 0, 0, 0, 0, 0],
                    Class::Guarded(Guard::Socket | Guard::Socketpair | Guard::HostSocket) => {
                        [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0]
                    }
                    _ => [0; 6],
                };
                let (action, steps) = run_bpf(&prog, e.nr as u32, args);
                let want = match class {
                    Class::Direct => ALLOW,
                    Class::Delegated(_) => NOTIFY,
                    Class::Denied(errno) => ERRNO | errno as u32,
                    // Argument-dependent: the arguments above are allowed by every guard; the
                    // refusals have tests of their own (and a few below).
                    Class::Guarded(_) => ALLOW,
                };
                assert_eq!(action, want, "{} ({}) in {profile:?}", e.name(), e.nr);
                if !matches!(class, Class::Guarded(_)) {
                    worst = worst.max(steps);
                }
            }
            assert!(
                worst <= 24,
                "a call took {worst} BPF instructions to decide in {profile:?}"
            );
        }
        let prog = compile(Profile::default()).unwrap();
        // A number the table does not know is refused, and so is a namespace clone.
        assert_eq!(run_bpf(&prog, 999, [0; 6]).0, ERRNO | libc::ENOSYS as u32);
        let clone_newuser = [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0];
        let eperm = ERRNO | libc::EPERM as u32;
        assert_eq!(
            run_bpf(&prog, libc::SYS_clone as u32, clone_newuser).0,
            eperm
        );
    }

    /// The verdict of the two programs stacked as the sandbox has them: the kernel takes the
    /// action of lower value (as a signed number), so a refusal beats an allow or a notify.
    fn stacked(table: &[Instruction], nr: i64, args: [u64; 6]) -> u32 {
        let denials = compile_argument_denials().unwrap();
        let a = run_bpf(table, nr as u32, args).0;
        let b = run_bpf(&denials, nr as u32, args).0;
        let action = |v: u32| (v & 0xffff_0000) as i32;
        if action(b) < action(a) {
            b
        } else {
            a
        }
    }

    /// `Profile::sends_in_kernel` says what the program says: a `sendmsg` with no flags (the
    /// one the program's process sends its listener with) is allowed in BPF exactly in the
    /// profiles it names, and in the others the agent would have to perform it.
    #[test]
    fn sends_in_kernel_is_the_programs_verdict_on_sendmsg() {
        let mut both = [false, false];
        for profile in Profile::all() {
            let prog = compile(profile).unwrap();
            let args = [3, 0x7fff_0000, 0, 0, 0, 0];
            let allowed = stacked(&prog, libc::SYS_sendmsg, args) == ALLOW;
            assert_eq!(profile.sends_in_kernel(), allowed, "{profile:?}");
            both[usize::from(allowed)] = true;
        }
        // Both kinds exist: UDP policies delegate sendmsg, the default sends in the kernel.
        assert_eq!(both, [true, true]);
        assert!(Profile::default().sends_in_kernel());
    }

    #[test]
    fn terminal_injection_is_refused_in_every_profile() {
        let eperm = ERRNO | libc::EPERM as u32;
        for profile in Profile::all() {
            let prog = compile(profile).unwrap();
            for req in [TIOCSTI, TIOCLINUX] {
                for fd in [0, 1, 2, 7] {
                    // The kernel reads an unsigned int: garbage above it hides nothing.
                    for high in [0, 0x1_0000_0000, 0xdead_0000_0000_0000] {
                        let args = [fd, req | high, 0, 0, 0, 0];
                        let got = stacked(&prog, libc::SYS_ioctl, args);
                        assert_eq!(got, eperm, "ioctl {req:#x} {high:#x} in {profile:?}");
                    }
                }
            }
            // The terminal's other requests pass.
            for req in [
                libc::TCGETS,
                libc::TIOCGWINSZ,
                libc::TIOCSWINSZ,
                libc::FIONREAD,
            ] {
                let args = [0, req as u32 as u64, 0, 0, 0, 0];
                assert_ne!(stacked(&prog, libc::SYS_ioctl, args), eperm, "{req:#x}");
            }
        }
    }

    #[test]
    fn argument_denials_refuse_exactly_their_values() {
        let prog = compile_argument_denials().unwrap();
        let allow = ALLOW;
        for d in crate::syscalls::ARGUMENT_DENIALS {
            let mut args = [0u64; 6];
            args[d.arg as usize] = d.value;
            assert_eq!(
                run_bpf(&prog, d.nr as u32, args).0,
                ERRNO | d.errno as u32,
                "{}",
                d.note
            );
            // Garbage in the upper half does not hide the value: the kernel reads 32 bits.
            args[d.arg as usize] = d.value | 0xdead_0000_0000_0000;
            assert_eq!(run_bpf(&prog, d.nr as u32, args).0, ERRNO | d.errno as u32);
            // A neighbouring value of the same call passes.
            args[d.arg as usize] = d.value ^ 1;
            assert_eq!(run_bpf(&prog, d.nr as u32, args).0, allow, "{}", d.note);
        }
        // Everything else passes, and is answered from the kernel's cache.
        for e in TABLE {
            let named = crate::syscalls::ARGUMENT_DENIALS
                .iter()
                .any(|d| d.nr == e.nr);
            assert_eq!(run_bpf(&prog, e.nr as u32, [0; 6]).0, allow, "{}", e.name());
            assert_eq!(
                kernel_caches_allow(&prog, e.nr as u32),
                !named,
                "{}",
                e.name()
            );
        }
    }

    /// Whether the kernel's seccomp action cache answers `nr` "allow" without running the
    /// program: its check (`seccomp_is_const_allow`, Linux 5.11) walks the program with only the
    /// number and the arch known, and gives up on any other load or instruction.
    fn kernel_caches_allow(prog: &[Instruction], nr: u32) -> bool {
        let mut acc = 0u32;
        let mut pc = 0usize;
        while let Some(ins) = prog.get(pc) {
            pc += 1;
            match ins.code {
                0x20 => match ins.k {
                    0 => acc = nr,
                    4 => acc = crate::AUDIT_ARCH_X86_64,
                    _ => return false,
                },
                0x06 => return ins.k == ALLOW,
                0x05 => pc += ins.k as usize,
                0x15 | 0x35 | 0x25 | 0x45 => {
                    let taken = match ins.code & 0xf0 {
                        0x10 => acc == ins.k,
                        0x30 => acc >= ins.k,
                        0x20 => acc > ins.k,
                        _ => acc & ins.k != 0,
                    };
                    pc += if taken { ins.jt } else { ins.jf } as usize;
                }
                0x54 => acc &= ins.k,
                _ => return false,
            }
        }
        false
    }

    #[test]
    fn direct_calls_are_answered_from_the_kernels_cache() {
        // A direct call must cost only the slow syscall entry every filtered task pays (the
        // bench's "kernel floor"), never a run of the program: every profile's program must
        // let the kernel's action cache allow it. Nothing else may be cached as allowed.
        for profile in Profile::all() {
            let prog = compile(profile).unwrap();
            for e in TABLE {
                let direct = profile.class(e) == Class::Direct;
                assert_eq!(
                    kernel_caches_allow(&prog, e.nr as u32),
                    direct,
                    "{} ({}) in {profile:?}",
                    e.name(),
                    e.nr
                );
            }
        }
    }

    /// What the program of a profile with `opens` does with call `nr` given `flags` as argument
    /// `arg`.
    fn open_action(opens: Opens) -> impl Fn(i64, usize, i32) -> u32 {
        let prog = compile(Profile {
            opens,
            ..Profile::default()
        })
        .unwrap();
        move |nr, arg, flags| {
            let mut args = [0u64; 6];
            // An int argument: the high half of the register is whatever the caller left there.
            args[arg] = 0xdead_beef_0000_0000 | flags as u32 as u64;
            run_bpf(&prog, nr as u32, args).0
        }
    }

    #[test]
    fn kernel_opens_are_direct_but_not_o_path_o_tmpfile_truncating_reads_or_mode_3() {
        let open = open_action(Opens::Kernel);
        for (nr, arg) in [(libc::SYS_open, 1), (libc::SYS_openat, 2)] {
            for flags in [
                libc::O_RDONLY,
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                libc::O_RDWR | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            ] {
                assert_eq!(open(nr, arg, flags), ALLOW, "{nr} {flags:#x}");
            }
            for flags in [
                libc::O_PATH,
                libc::O_PATH | libc::O_NOFOLLOW,
                libc::O_TMPFILE | libc::O_RDWR,
            ] {
                assert_eq!(open(nr, arg, flags), NOTIFY, "{nr} {flags:#x}");
            }
        }
        assert_eq!(open(libc::SYS_creat, 1, 0o644), ALLOW);
        assert_truncating_and_neither_opens_are_the_agents(&open);
        // openat2's flags are behind a pointer: always the agent's.
        assert_eq!(open(libc::SYS_openat2, 2, 0), NOTIFY);
        // The agent's profile delegates them all.
        let agent = compile(Profile::default()).unwrap();
        assert_eq!(run_bpf(&agent, libc::SYS_openat as u32, [0; 6]).0, NOTIFY);
    }

    /// An `O_TRUNC` open that is not for writing goes to the agent (Landlock's `truncate` right
    /// is not handled when the kernel decides opens), and so does any open for neither reading
    /// nor writing (Landlock asks no right of it); one for writing stays direct, as does every
    /// other open.
    fn assert_truncating_and_neither_opens_are_the_agents(open: &dyn Fn(i64, usize, i32) -> u32) {
        for (nr, arg) in [(libc::SYS_open, 1), (libc::SYS_openat, 2)] {
            for flags in [
                libc::O_RDONLY | libc::O_TRUNC,
                libc::O_RDONLY | libc::O_TRUNC | libc::O_CREAT | libc::O_CLOEXEC,
                crate::abi::O_ACCMODE | libc::O_TRUNC,
                crate::abi::O_ACCMODE | libc::O_TRUNC | libc::O_NONBLOCK,
                crate::abi::O_ACCMODE,
                crate::abi::O_ACCMODE | libc::O_NONBLOCK | libc::O_CLOEXEC,
            ] {
                assert_eq!(open(nr, arg, flags), NOTIFY, "{nr} {flags:#x}");
            }
            for flags in [
                libc::O_WRONLY | libc::O_TRUNC,
                libc::O_RDWR | libc::O_TRUNC | libc::O_APPEND,
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL,
                libc::O_RDWR | libc::O_NONBLOCK,
            ] {
                assert_eq!(open(nr, arg, flags), ALLOW, "{nr} {flags:#x}");
            }
        }
    }

    #[test]
    fn view_opens_are_direct_but_not_o_tmpfile_truncating_reads_or_mode_3() {
        for opens in [Opens::View, Opens::ViewExec] {
            let open = open_action(opens);
            for (nr, arg) in [(libc::SYS_open, 1), (libc::SYS_openat, 2)] {
                for flags in [libc::O_RDONLY, libc::O_PATH, libc::O_PATH | libc::O_TRUNC] {
                    let want = if flags & libc::O_TRUNC != 0 {
                        NOTIFY
                    } else {
                        ALLOW
                    };
                    assert_eq!(open(nr, arg, flags), want, "{nr} {flags:#x}");
                }
                let tmpfile = libc::O_TMPFILE | libc::O_RDWR;
                assert_eq!(open(nr, arg, tmpfile), NOTIFY);
                assert_eq!(open(nr, arg, tmpfile | libc::O_TRUNC), NOTIFY);
            }
            assert_truncating_and_neither_opens_are_the_agents(&open);
        }
    }

    /// Every combination of the bits the open guards look at, with other flags around them:
    /// the compiled program answers as the rule says, for open and openat, in every profile
    /// whose kernel decides opens.
    #[test]
    fn open_guards_match_their_rule_on_every_combination_of_flags() {
        let tmpfile = libc::O_TMPFILE & !libc::O_DIRECTORY;
        let others = [
            0,
            libc::O_CREAT | libc::O_EXCL,
            libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_DIRECTORY,
            libc::O_APPEND | libc::O_NONBLOCK | libc::O_NOCTTY,
        ];
        for opens in [Opens::Kernel, Opens::View, Opens::ViewExec] {
            let open = open_action(opens);
            for bits in 0..32 {
                let accmode = bits & 3;
                let trunc = bits & 4 != 0;
                let opath = bits & 8 != 0;
                let tmp = bits & 16 != 0;
                let agents = tmp
                    || (opath && opens == Opens::Kernel)
                    || accmode == crate::abi::O_ACCMODE
                    || (trunc && accmode == libc::O_RDONLY);
                let want = if agents { NOTIFY } else { ALLOW };
                let flags = accmode
                    | if trunc { libc::O_TRUNC } else { 0 }
                    | if opath { libc::O_PATH } else { 0 }
                    | if tmp { tmpfile } else { 0 };
                for other in others {
                    for (nr, arg) in [(libc::SYS_open, 1), (libc::SYS_openat, 2)] {
                        assert_eq!(
                            open(nr, arg, flags | other),
                            want,
                            "{opens:?} {nr} {:#x}",
                            flags | other
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn compiles_and_checks_arch_first() {
        let prog = compile(Profile::default()).expect("filter compiles");
        assert!(prog.len() > 50);
        // First instruction loads seccomp_data.arch (offset 4).
        assert_eq!(
            prog[0].k, 4,
            "the filter must check the architecture before anything else"
        );
        assert_eq!(prog[1].k, crate::AUDIT_ARCH_X86_64);
    }

    #[test]
    fn all_but32_matches_everything_except_the_refused() {
        let refused = [TIOCSTI, TIOCLINUX];
        let rules = all_but32(1, &refused);
        // Reconstruct each rule's (mask, value) from its Debug-free form by re-deriving it.
        let matches = |v: u64| {
            let first = refused[0];
            let agree = refused.iter().fold(LOW32, |m, r| m & !(r ^ first));
            (0..32)
                .map(|b| 1u64 << b)
                .any(|bit| agree & bit != 0 && (v & bit) != (first & bit))
                || (v & agree == first & agree && !refused.contains(&(v & LOW32)))
        };
        for v in [
            0u64,
            0x5401,
            0x5412,
            0x541c,
            0x5410,
            0x541e,
            0xffff_ffff,
            0x1_0000_5412,
        ] {
            assert_eq!(matches(v), !refused.contains(&(v & LOW32)), "{v:#x}");
        }
        assert!(rules.len() < 40);
    }

    #[test]
    fn other_abis_are_refused() {
        let prog = compile(net(Network::Host { udp: true })).unwrap();
        let enosys = 0x0005_0000 | libc::ENOSYS as u32;
        // x32: the x86_64 arch value with bit 30 set in the number.
        for nr in [libc::SYS_read, libc::SYS_openat, libc::SYS_execve] {
            assert_eq!(run_bpf(&prog, 0x4000_0000 | nr as u32, [0; 6]).0, enosys);
        }
        // i386 (int $0x80): 5 is open there.
        const AUDIT_ARCH_I386: u32 = 3 | 0x4000_0000;
        assert_eq!(run_bpf_on(&prog, AUDIT_ARCH_I386, 5, [0; 6]).0, enosys);
    }

    #[test]
    fn network_guards_route_inet_sockets_and_addresses_to_the_agent() {
        let eacces = ERRNO | libc::EACCES as u32;
        let eopnotsupp = ERRNO | libc::EOPNOTSUPP as u32;
        let socket = |network, family: i32, kind: i32| {
            let prog = compile(net(network)).unwrap();
            run_bpf(
                &prog,
                libc::SYS_socket as u32,
                [family as u64, kind as u64, 0, 0, 0, 0],
            )
            .0
        };
        let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
        for net in NETWORKS {
            let inet = if net == Network::Private {
                ALLOW
            } else {
                NOTIFY
            };
            assert_eq!(socket(net, libc::AF_INET, stream), inet, "{net:?}");
            assert_eq!(
                socket(net, libc::AF_INET6, libc::SOCK_DGRAM),
                inet,
                "{net:?}"
            );
            assert_eq!(socket(net, libc::AF_UNIX, stream), ALLOW, "{net:?}");
            assert_eq!(
                socket(net, libc::AF_UNIX, libc::SOCK_DGRAM),
                eacces,
                "{net:?}"
            );
            assert_eq!(
                socket(net, libc::AF_NETLINK, libc::SOCK_RAW),
                ALLOW,
                "{net:?}"
            );
            assert_eq!(
                socket(net, libc::AF_PACKET, libc::SOCK_RAW),
                ERRNO | libc::ENOSYS as u32
            );
        }
        let fastopen = libc::MSG_FASTOPEN as u32 as u64;
        let addr = 0x7fff_0000_1000u64;
        let tcp = compile(net(Network::Host { udp: false })).unwrap();
        let udp = compile(net(Network::Host { udp: true })).unwrap();
        let private = compile(Profile::default()).unwrap();
        let sendto = libc::SYS_sendto as u32;
        let sendmsg = libc::SYS_sendmsg as u32;
        let sendmmsg = libc::SYS_sendmmsg as u32;
        // TCP only: the kernel ignores a sendmsg address, so only fast open must be refused.
        assert_eq!(run_bpf(&tcp, sendto, [3, 0, 0, 0, addr, 16]).0, ALLOW);
        assert_eq!(
            run_bpf(&tcp, sendto, [3, 0, 0, fastopen, addr, 16]).0,
            eopnotsupp
        );
        assert_eq!(
            run_bpf(&tcp, sendmsg, [3, 0, fastopen, 0, 0, 0]).0,
            eopnotsupp
        );
        assert_eq!(
            run_bpf(&tcp, sendmmsg, [3, 0, 1, fastopen | 0x40, 0, 0]).0,
            eopnotsupp
        );
        assert_eq!(
            run_bpf(&tcp, sendmsg, [3, 0, libc::MSG_NOSIGNAL as u64, 0, 0, 0]).0,
            ALLOW
        );
        // UDP: an address goes to the agent, and so does every sendmsg.
        assert_eq!(run_bpf(&udp, sendto, [3, 0, 0, 0, 0, 0]).0, ALLOW);
        assert_eq!(run_bpf(&udp, sendto, [3, 0, 0, 0, addr, 16]).0, NOTIFY);
        // A pointer whose low half is zero is still a pointer.
        assert_eq!(run_bpf(&udp, sendto, [3, 0, 0, 0, 1 << 32, 16]).0, NOTIFY);
        assert_eq!(
            run_bpf(&udp, sendto, [3, 0, 0, fastopen, 0, 0]).0,
            eopnotsupp
        );
        assert_eq!(run_bpf(&udp, sendmsg, [3, 0, 0, 0, 0, 0]).0, NOTIFY);
        assert_eq!(run_bpf(&udp, sendmmsg, [3, 0, 1, 0, 0, 0]).0, NOTIFY);
        // Private: the namespace confines everything.
        assert_eq!(
            run_bpf(&private, sendto, [3, 0, 0, fastopen, addr, 16]).0,
            ALLOW
        );
    }

    #[test]
    fn ptrace_inside_opens_only_the_tracing_calls() {
        let eperm = ERRNO | libc::EPERM as u32;
        let plain = compile(Profile::default()).unwrap();
        let debug = compile(Profile {
            ptrace_inside: true,
            ..Profile::default()
        })
        .unwrap();
        for nr in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
        ] {
            assert_eq!(run_bpf(&plain, nr as u32, [0; 6]).0, eperm);
            assert_eq!(run_bpf(&debug, nr as u32, [0; 6]).0, ALLOW);
        }
        // Taking another process's descriptors stays refused.
        assert_eq!(
            run_bpf(&debug, libc::SYS_pidfd_getfd as u32, [0; 6]).0,
            eperm
        );
    }
}
