//! What processes used, as `getrusage(2)` and `wait4(2)` count it: CPU time, the largest
//! resident size, context switches. The sandbox's init reads its own and its reaped children's
//! and sends them with the program's status, so warden need not wait for init's exit to know.

use std::io;
use std::time::Duration;

/// Resource usage of a process (and of the children it reaped, where said so).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// User and system CPU time.
    pub cpu: Duration,
    /// The largest resident size of any one process counted, in KiB.
    pub max_rss_kib: u64,
    /// Voluntary context switches.
    pub csw_voluntary: u64,
    /// Involuntary context switches.
    pub csw_forced: u64,
}

/// The length of [`Usage`] as bytes, for a message: [`Usage::to_bytes`], [`Usage::from_bytes`].
pub const USAGE_BYTES: usize = 8 * 4;

impl Usage {
    /// The calling process's own usage and that of every child it has reaped: what its parent's
    /// `wait4` would report once it exits (the kernel's `RUSAGE_BOTH`, which `getrusage` does
    /// not offer), less what its exit itself costs.
    pub fn of_self_and_reaped() -> io::Result<Usage> {
        Ok(get(libc::RUSAGE_SELF)?.with_reaped(get(libc::RUSAGE_CHILDREN)?))
    }

    /// `self` together with `reaped`, the usage of children that `self`'s process reaped: times
    /// and switches add up, the largest resident size is the larger one (as the kernel counts
    /// a reaper's).
    pub fn with_reaped(self, reaped: Usage) -> Usage {
        Usage {
            cpu: self.cpu + reaped.cpu,
            max_rss_kib: self.max_rss_kib.max(reaped.max_rss_kib),
            csw_voluntary: self.csw_voluntary + reaped.csw_voluntary,
            csw_forced: self.csw_forced + reaped.csw_forced,
        }
    }

    /// The bytes of a message that carries this usage (the CPU time in nanoseconds, then the
    /// counts, each a native-endian u64).
    pub fn to_bytes(self) -> [u8; USAGE_BYTES] {
        let nanos = u64::try_from(self.cpu.as_nanos()).unwrap_or(u64::MAX);
        let words = [nanos, self.max_rss_kib, self.csw_voluntary, self.csw_forced];
        let mut bytes = [0u8; USAGE_BYTES];
        for (slot, w) in bytes.chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&w.to_ne_bytes());
        }
        bytes
    }

    /// The usage [`Usage::to_bytes`] made `bytes` of; `None` unless they are that long.
    pub fn from_bytes(bytes: &[u8]) -> Option<Usage> {
        if bytes.len() != USAGE_BYTES {
            return None;
        }
        let mut words = bytes
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("eight bytes")));
        let mut next = || words.next().expect("four words");
        Some(Usage {
            cpu: Duration::from_nanos(next()),
            max_rss_kib: next(),
            csw_voluntary: next(),
            csw_forced: next(),
        })
    }

    pub(crate) fn from_rusage(u: &libc::rusage) -> Usage {
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Usage {
            cpu: tv(u.ru_utime) + tv(u.ru_stime),
            max_rss_kib: u.ru_maxrss.max(0) as u64,
            csw_voluntary: u.ru_nvcsw.max(0) as u64,
            csw_forced: u.ru_nivcsw.max(0) as u64,
        }
    }
}

fn get(who: libc::c_int) -> io::Result<Usage> {
    // SAFETY: rusage is plain data for which all-zero is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one struct rusage through a pointer to a live local.
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Usage::from_rusage(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_carry_every_field() {
        let u = Usage {
            cpu: Duration::from_nanos(1_234_567_891),
            max_rss_kib: 65_536,
            csw_voluntary: 7,
            csw_forced: u64::MAX,
        };
        assert_eq!(Usage::from_bytes(&u.to_bytes()), Some(u));
    }

    #[test]
    fn reaped_children_add_up_and_the_largest_resident_size_wins() {
        let own = Usage {
            cpu: Duration::from_millis(3),
            max_rss_kib: 900,
            csw_voluntary: 2,
            csw_forced: 1,
        };
        let reaped = Usage {
            cpu: Duration::from_millis(40),
            max_rss_kib: 5_000,
            csw_voluntary: 10,
            csw_forced: 4,
        };
        let both = own.with_reaped(reaped);
        assert_eq!(both.cpu, Duration::from_millis(43));
        assert_eq!(both.max_rss_kib, 5_000);
        assert_eq!((both.csw_voluntary, both.csw_forced), (12, 5));
        assert_eq!(reaped.with_reaped(own).max_rss_kib, 5_000);
    }

    /// A child that burns CPU and touches memory, reaped by a process that then reads its
    /// usage this way, reports what the parent's `wait4` of that process reports.
    #[test]
    fn a_reapers_own_reading_matches_its_parents_wait() {
        let (rd, wr) = std::io::pipe().expect("pipe");
        // Allocated here: the children of a process with threads allocate nothing.
        let mut block = vec![0u8; 8 << 20];
        // SAFETY: the children only make system calls (fork, waitpid, getrusage, clock_gettime,
        // write, _exit) and touch memory allocated before the fork.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: as above.
            let grandchild = unsafe { libc::fork() };
            if grandchild == 0 {
                let cpu = || {
                    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
                    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
                };
                while cpu() < Duration::from_millis(30) {
                    for b in block.iter_mut().step_by(4096) {
                        *b = b.wrapping_add(1);
                    }
                    std::hint::black_box(&mut block);
                }
                // SAFETY: _exit ends the process at once.
                unsafe { libc::_exit(0) };
            }
            let mut status = 0;
            // SAFETY: waitpid writes one int through a pointer to a live local.
            unsafe { libc::waitpid(grandchild, &mut status, 0) };
            let bytes = Usage::of_self_and_reaped().unwrap_or_default().to_bytes();
            let _ = rustix::io::write(&wr, &bytes);
            // SAFETY: _exit ends the process at once.
            unsafe { libc::_exit(0) };
        }
        drop((wr, block));
        let (_, waited) = crate::process::wait_with_usage(pid).expect("wait4");
        let mut bytes = [0u8; USAGE_BYTES];
        std::io::Read::read_exact(&mut &rd, &mut bytes).expect("the child's reading");
        let own = Usage::from_bytes(&bytes).expect("a whole reading");
        assert!(own.cpu >= Duration::from_millis(25), "{own:?}");
        assert!(own.max_rss_kib >= 8 * 1024, "{own:?}");
        // The child's exit after its reading costs a little more CPU, nothing else.
        assert!(waited.cpu >= own.cpu, "{waited:?} {own:?}");
        assert!(
            waited.cpu - own.cpu < Duration::from_millis(5),
            "{waited:?} {own:?}"
        );
        assert_eq!(waited.max_rss_kib, own.max_rss_kib);
        assert!(waited.csw_voluntary >= own.csw_voluntary);
    }
}
