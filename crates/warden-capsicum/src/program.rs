//! The program side: a program run by warden compartmentalises itself (Capsicum's
//! `cap_enter`, `cap_getmode`, `cap_rights_limit`, `cap_rights_get`). C programs get the same
//! from `c/capsicum.h` and `c/capsicum.c`.
//!
//! Works under `warden run --capsicum` (the program enters capability mode when it chooses)
//! and `warden run --capability-mode` (it is in capability mode from its first instruction).
//! Anywhere else every call fails with `ENOSYS`, as Capsicum's calls do on a kernel built
//! without it: nothing here pretends to confine.
//!
//! # How entering works, and why it is one-way
//!
//! [`cap_enter`] asks the agent whether this sandbox can hold its processes to capability mode
//! ([`Request::Enter`]), then installs a seccomp filter of its own on every thread of the
//! process (`SECCOMP_FILTER_FLAG_TSYNC`). The filter decides nothing (it allows every call,
//! warden's filter still applies); it is a mark. The kernel counts a task's filters
//! (`Seccomp_filters` in `/proc/PID/status`), copies the count to every thread and child, keeps
//! it across exec, and never lowers it: no call removes a filter. warden's agent reads the count
//! of every caller and serves a caller with more filters than the program started with by the
//! rules of capability mode. So the mode holds for the process, its threads, its children and
//! whatever they execute, and there is no way back. Until some process of the sandbox has
//! asked to enter, a filter a program installs for its own reasons is not the mode; after
//! that it is (the safe side).

use crate::request::Request;
use crate::rights::Rights;
use std::io;
use std::os::fd::{AsFd, AsRawFd, IntoRawFd};

/// Sends `request` to warden's agent; its answer (a non-negative number).
fn ask(request: Request) -> io::Result<u32> {
    let (domain, ty, proto) = request.encode();
    let answer = rustix::net::socket(
        rustix::net::AddressFamily::from_raw(domain),
        rustix::net::SocketType::from_raw(ty),
        std::num::NonZeroU32::new(proto).map(rustix::net::Protocol::from_raw),
    );
    match answer {
        // The agent's answer is socket's return value, which rustix hands over as a descriptor:
        // a number, not a descriptor anyone opened. Taking it as a number closes nothing.
        Ok(number) => Ok(number.into_raw_fd() as u32),
        // The kernel's own answer: no agent serves capability mode here.
        Err(rustix::io::Errno::AFNOSUPPORT) => Err(io::Error::from_raw_os_error(libc::ENOSYS)),
        Err(e) => Err(e.into()),
    }
}

/// Enters capability mode, for good: this process, its threads, and every process it starts
/// (see the module docs). Fails with `ENOSYS` where warden cannot hold it there.
pub fn cap_enter() -> io::Result<()> {
    ask(Request::Enter)?;
    let mut mark = libseccomp::ScmpFilterContext::new(libseccomp::ScmpAction::Allow)
        .map_err(|e| io::Error::other(e.to_string()))?;
    mark.set_ctl_tsync(true)
        .map_err(|e| io::Error::other(e.to_string()))?;
    // Decides nothing, not even for another architecture's calls (warden's filter does).
    mark.set_act_badarch(libseccomp::ScmpAction::Allow)
        .map_err(|e| io::Error::other(e.to_string()))?;
    mark.load().map_err(|e| io::Error::other(e.to_string()))?;
    // The agent now sees the mark: it must say so, or something is wrong that the program
    // has to hear about rather than run unconfined.
    if cap_getmode()? {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }
}

/// Whether this process is in capability mode.
pub fn cap_getmode() -> io::Result<bool> {
    ask(Request::GetMode).map(|m| m == 1)
}

/// Limits what `fd` may do to `rights`: narrowed, never widened (asking for a right the
/// descriptor lacks fails with `EACCES`, [`crate::ENOTCAPABLE`]). A regular file or directory
/// is re-opened (same number, same offset) with no more access than `rights`, so the kernel
/// enforces read and write, and the limit is that open file description's: another
/// descriptor of the same file keeps its rights ([`crate::held`]). Anything else is limited
/// per object, and re-opened only when read or write goes; a socket, which cannot be
/// re-opened, fails then.
pub fn cap_rights_limit(fd: impl AsFd, rights: Rights) -> io::Result<()> {
    ask(Request::Limit {
        fd: fd.as_fd().as_raw_fd(),
        rights,
    })
    .map(drop)
}

/// The rights `fd` holds.
pub fn cap_rights_get(fd: impl AsFd) -> io::Result<Rights> {
    let bits = ask(Request::Get {
        fd: fd.as_fd().as_raw_fd(),
    })?;
    Rights::from_bits(u64::from(bits)).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_header_names_the_same_rights_and_requests() {
        let h = include_str!("../c/capsicum.h");
        let define = |name: &str| -> u64 {
            let line = h
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("no {name} in capsicum.h"));
            let v = line[format!("#define {name} ").len()..].trim();
            if let Some(shift) = v.strip_prefix("(1ULL << ") {
                1 << shift.trim_end_matches(')').parse::<u32>().unwrap()
            } else if let Some(hex) = v.strip_prefix("0x") {
                u64::from_str_radix(hex, 16).unwrap()
            } else {
                v.parse().unwrap()
            }
        };
        let c_names = [
            "CAP_READ",
            "CAP_WRITE",
            "CAP_SEEK",
            "CAP_FSTAT",
            "CAP_LOOKUP",
            "CAP_CREATE",
            "CAP_MKDIRAT",
            "CAP_UNLINKAT",
            "CAP_MMAP",
            "CAP_FCHMOD",
            "CAP_FCHOWN",
            "CAP_IOCTL",
            "CAP_EVENT",
            "CAP_ACCEPT",
            "CAP_CONNECT",
            "CAP_BIND",
            "CAP_FEXECVE",
            "CAP_MKNODAT",
        ];
        assert_eq!(c_names.len(), crate::Right::ALL.len());
        for (name, right) in c_names.iter().zip(crate::Right::ALL) {
            assert_eq!(define(name), Rights::of(&[right]).bits(), "{name}");
        }
        assert_eq!(
            define("WARDEN_CAPSICUM_FAMILY"),
            u64::from(crate::request::FAMILY)
        );
        for (name, r) in [
            ("WARDEN_CAPSICUM_GETMODE", Request::GetMode),
            ("WARDEN_CAPSICUM_ENTER", Request::Enter),
            (
                "WARDEN_CAPSICUM_LIMIT",
                Request::Limit {
                    fd: 0,
                    rights: Rights::NONE,
                },
            ),
            ("WARDEN_CAPSICUM_GET", Request::Get { fd: 0 }),
        ] {
            assert_eq!(
                define(name) + u64::from(crate::request::FAMILY),
                u64::from(r.encode().0),
                "{name}"
            );
        }
    }

    #[test]
    fn the_c_library_names_the_rights_as_the_command_line_does() {
        // lch_start writes --fd-inherited NAME=N:RIGHTS with these names.
        let c = include_str!("../c/capsicum.c");
        let start = c
            .find("right_names[] = {")
            .expect("right_names in capsicum.c");
        let end = start + c[start..].find("};").unwrap();
        let names: Vec<&str> = c[start..end].split('"').skip(1).step_by(2).collect();
        let want: Vec<&str> = crate::Right::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names, want);
    }

    #[test]
    fn outside_warden_every_call_says_capsicum_is_missing() {
        // The test runs outside any sandbox: the kernel answers, and nothing is entered.
        let enosys = Some(libc::ENOSYS);
        assert_eq!(cap_getmode().unwrap_err().raw_os_error(), enosys);
        assert_eq!(cap_enter().unwrap_err().raw_os_error(), enosys);
        let f = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(cap_rights_get(&f).unwrap_err().raw_os_error(), enosys);
        assert_eq!(
            cap_rights_limit(&f, Rights::NONE)
                .unwrap_err()
                .raw_os_error(),
            enosys
        );
    }
}
