//! A server in a sandbox whose network is its own (no IP rule: a private loopback) starts, and
//! nothing outside can reach it (issue 39, point 12). While the program runs, warden looks at
//! the TCP sockets listening in the sandbox's network namespace every half second and says
//! once per port that it cannot be reached, and the policy line that would serve it.
//!
//! [`listening_ports`] is a pure function of `/proc/PID/net/tcp`'s text; [`Listeners`] reads it
//! for a process of the sandbox (all of them share its network namespace; its init does not).

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The local ports of the sockets in state LISTEN (`0A`) in `/proc/net/tcp` or `tcp6` text.
pub fn listening_ports(text: &str) -> BTreeSet<u16> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            let state = fields.nth(1)?;
            if state != "0A" {
                return None;
            }
            let port = local.rsplit_once(':')?.1;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

/// The line said for a port `port` that `program` listens on.
pub fn unreachable_line(program: &str, port: u16) -> String {
    format!(
        "warden: {program} listens on TCP port {port} in the sandbox's own network, which \
         nothing outside the sandbox can reach; to serve it to the host, add the line \
         `net-allow incoming tcp 0/0 {port}` to a policy file and give it with --policy FILE"
    )
}

/// The sandbox's listening ports said so far. [`Listeners::look`] is called on the registry's
/// thread each time it writes the run's entry (20 ms after the start, then every half
/// second): a thread of its own would cost every run's start its spawn.
pub struct Listeners {
    init_pid: i32,
    program: String,
    said: Mutex<BTreeSet<u16>>,
}

impl Listeners {
    /// For the sandbox whose init is `init_pid` (a host pid), the program named `program`
    /// (escaped already).
    pub fn new(init_pid: i32, program: String) -> Listeners {
        Listeners {
            init_pid,
            program,
            said: Mutex::new(BTreeSet::new()),
        }
    }

    /// Says each port listening now that was not said before, once, on stderr.
    pub fn look(&self) {
        // init stays in warden's network namespace; the program, its child, has the sandbox's
        // (as every process it starts, and every orphan init adopts). Only a namespace that is
        // not warden's own is read: the host's servers are not the sandbox's.
        let init = self.init_pid;
        let Some(child) = std::fs::read_to_string(format!("/proc/{init}/task/{init}/children"))
            .ok()
            .and_then(|t| t.split_whitespace().next().map(str::to_owned))
        else {
            return;
        };
        // Everything else through one descriptor of the child's /proc directory: a pid
        // reused after the child's exit is never read (the descriptor's lookups then fail).
        use rustix::fs::{openat, readlinkat, Mode, OFlags, CWD};
        let Ok(dir) = openat(
            CWD,
            format!("/proc/{child}"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return;
        };
        let theirs = readlinkat(&dir, "ns/net", Vec::new()).ok();
        let ours = std::fs::read_link("/proc/self/ns/net").ok();
        match (theirs, ours) {
            (Some(theirs), Some(ours))
                if theirs.as_bytes() != ours.as_os_str().as_encoded_bytes() => {}
            _ => return,
        }
        let mut ports = BTreeSet::new();
        for table in ["net/tcp", "net/tcp6"] {
            let Ok(fd) = openat(&dir, table, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            else {
                continue;
            };
            let mut text = String::new();
            if std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut text).is_ok() {
                ports.extend(listening_ports(&text));
            }
        }
        let Ok(mut said) = self.said.lock() else {
            return;
        };
        for port in ports {
            if said.insert(port) {
                eprintln!("{}", unreachable_line(&self.program, port));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_ports_are_read_from_the_tables_in_state_listen_only() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:1F40 0100007F:D3A2 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_ports(v4), BTreeSet::from([8000, 22]));
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_ports(v6), BTreeSet::from([8080]));
        assert!(listening_ports("").is_empty());
        assert!(listening_ports("header\n  0: garbage\n").is_empty());
    }

    #[test]
    fn the_line_names_the_port_and_the_rule_to_add() {
        let l = unreachable_line("python3", 8000);
        assert!(
            l.starts_with("warden: python3 listens on TCP port 8000"),
            "{l}"
        );
        assert!(l.contains("`net-allow incoming tcp 0/0 8000`"), "{l}");
        assert_eq!(l.lines().count(), 1);
    }
}
