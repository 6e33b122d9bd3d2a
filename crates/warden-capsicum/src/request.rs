//! The program side's requests (`cap_enter`, `cap_getmode`, `cap_rights_limit`,
//! `cap_rights_get`) and how they reach warden's agent.
//!
//! A program asks through a call every capability-mode profile already sends to the agent:
//! `socket(2)`, with an address family no kernel has ([`FAMILY`] plus the request's number,
//! far above `AF_MAX`), the descriptor in the type argument and the rights in the protocol
//! argument. Outside warden, or under warden without capability mode's profile, the kernel
//! answers it itself with `EAFNOSUPPORT`, which the library reports as `ENOSYS` (Capsicum's
//! answer on a kernel without it). No request can widen anything: the agent answers a mode,
//! reads rights, or narrows them; entering capability mode is the program's own filter
//! ([`crate::program`]), which the agent only observes. The C header `c/capsicum.h` repeats
//! these numbers, and a test compares them.

use crate::rights::Rights;

/// The address family of the first request; request `n` uses `FAMILY + n`.
pub const FAMILY: u16 = 0x5700;

/// One request from the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `cap_getmode`: 1 in capability mode, 0 outside it.
    GetMode,
    /// `cap_enter`, before the program installs its mark: 0 when this sandbox can hold its
    /// processes to capability mode.
    Enter,
    /// `cap_rights_limit(fd, rights)`.
    Limit { fd: i32, rights: Rights },
    /// `cap_rights_get(fd)`: the rights, as [`Rights::bits`].
    Get { fd: i32 },
}

impl Request {
    /// The `socket(2)` arguments (domain, type, protocol) that carry this request.
    pub fn encode(self) -> (u16, u32, u32) {
        match self {
            Request::GetMode => (FAMILY + 1, 0, 0),
            Request::Enter => (FAMILY + 2, 0, 0),
            Request::Limit { fd, rights } => (FAMILY + 3, fd as u32, rights.bits() as u32),
            Request::Get { fd } => (FAMILY + 4, fd as u32, 0),
        }
    }

    /// The request a `socket(2)` call's raw arguments carry: `None` when it is not one (an
    /// ordinary socket), `Some(Err(EINVAL))` when it is one but malformed.
    pub fn decode(args: &[u64; 6]) -> Option<Result<Request, i32>> {
        // The kernel reads an int for each argument: only the low 32 bits count.
        let domain = args[0] as u32;
        let (ty, proto) = (args[1] as u32, args[2] as u32);
        let op = domain
            .checked_sub(u32::from(FAMILY))
            .filter(|op| *op <= 0xff)?;
        Some(match op {
            1 => Ok(Request::GetMode),
            2 => Ok(Request::Enter),
            3 => Rights::from_bits(u64::from(proto))
                .map(|rights| Request::Limit {
                    fd: ty as i32,
                    rights,
                })
                .ok_or(libc::EINVAL),
            4 => Ok(Request::Get { fd: ty as i32 }),
            _ => Err(libc::EINVAL),
        })
    }

    /// The request's name in logs.
    pub fn name(self) -> &'static str {
        match self {
            Request::GetMode => "cap_getmode",
            Request::Enter => "cap_enter",
            Request::Limit { .. } => "cap_rights_limit",
            Request::Get { .. } => "cap_rights_get",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rights::Right;

    fn args((d, t, p): (u16, u32, u32)) -> [u64; 6] {
        [u64::from(d), u64::from(t), u64::from(p), 0, 0, 0]
    }

    #[test]
    fn requests_round_trip() {
        let rights = Rights::of(&[Right::Read, Right::Seek]);
        for r in [
            Request::GetMode,
            Request::Enter,
            Request::Limit { fd: 7, rights },
            Request::Get { fd: 3 },
        ] {
            assert_eq!(Request::decode(&args(r.encode())), Some(Ok(r)));
        }
    }

    #[test]
    fn ordinary_sockets_are_not_requests_and_bad_ones_are_refused() {
        for domain in [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ] {
            assert_eq!(Request::decode(&[domain as u64, 1, 0, 0, 0, 0]), None);
        }
        assert_eq!(
            Request::decode(&[u64::from(FAMILY) + 0x100, 0, 0, 0, 0, 0]),
            None
        );
        assert_eq!(
            Request::decode(&[u64::from(FAMILY), 0, 0, 0, 0, 0]),
            Some(Err(libc::EINVAL))
        );
        assert_eq!(
            Request::decode(&[u64::from(FAMILY) + 9, 0, 0, 0, 0, 0]),
            Some(Err(libc::EINVAL))
        );
        // A right no one has defined is not narrowed into anything.
        assert_eq!(
            Request::decode(&[u64::from(FAMILY) + 3, 3, 1 << 20, 0, 0, 0]),
            Some(Err(libc::EINVAL))
        );
        // The high half of a register is not the kernel's int.
        assert_eq!(
            Request::decode(&[(1 << 32) | (u64::from(FAMILY) + 1), 0, 0, 0, 0, 0]),
            Some(Ok(Request::GetMode))
        );
        // Far above every address family the kernel knows: natively EAFNOSUPPORT.
        assert!(i32::from(FAMILY) > libc::AF_XDP + 1000);
    }
}
