//! The incoming filter: a classic-BPF socket filter, compiled from the policy's `net-allow`
//! rules of one protocol, that the agent attaches (and locks, `SO_LOCK_FILTER`) to every
//! TCP or UDP socket it makes for the sandbox.
//!
//! The kernel runs it on every packet that arrives for the socket, before the socket sees it,
//! so traffic the policy does not allow in never reaches the program, with no call delegated:
//! - a packet whose source is an `outgoing` rule's endpoint (address and port) is a reply from
//!   a peer the program may talk to, and passes;
//! - a packet whose source address is in an `incoming` rule's range and whose destination port
//!   is in its port range passes (a client of the program's server);
//! - everything else is dropped. For TCP that includes the SYN of a peer outside the incoming
//!   rules, so a listening socket never even completes the handshake with it (the peer times
//!   out, as behind a firewall that drops), and `accept` stays a direct call; for UDP it is
//!   the datagram itself, whatever call reads it (`recvfrom`, `recvmsg`, `recvmmsg`, `read`).
//!
//! When the filter runs, the packet data starts at the transport header (ports at offsets 0
//! and 2) and the network header is reached through `SKF_NET_OFF`: the IPv4 source address is
//! at 12, the IPv6 one at 8. An IPv6 socket can receive IPv4 packets, so the filter looks at
//! the IP version first. IPv4 packets match IPv4 rules, and IPv6 rules through the IPv4-mapped
//! range (`::ffff:0:0/96`), as [`warden_policy::NetAddr::matches`] does.
//!
//! Pure: rules in, instructions out; the tests run the program on made-up packets.

use crate::sys::seccomp::Instruction;
use std::net::{IpAddr, Ipv6Addr};
use warden_policy::{Direction, NetAddr, NetTarget, Policy, PortMatch, Protocol};

/// Linux refuses longer classic-BPF programs (`BPF_MAXINSNS`).
pub const MAX_INSTRUCTIONS: usize = 4096;

const SKF_NET_OFF: u32 = (-0x100000i32) as u32;
const LD_W_ABS: u16 = 0x20;
const LD_H_ABS: u16 = 0x28;
const LD_B_ABS: u16 = 0x30;
const ALU_AND_K: u16 = 0x54;
const ALU_RSH_K: u16 = 0x74;
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;
/// Keep the whole packet.
const ACCEPT: u32 = u32::MAX;
const DROP: u32 = 0;

/// Which port of the packet a matcher compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Port {
    /// The source port (the peer's, for a reply to an outgoing connection).
    Source,
    /// The destination port (the program's local port, for an incoming one).
    Destination,
}

/// One range of source addresses and ports, as words to compare under masks.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Matcher<const N: usize> {
    addr: [u32; N],
    mask: [u32; N],
    which: Port,
    port: PortMatch,
}

/// A program too long for the kernel (a policy with thousands of IP rules).
#[derive(Debug, thiserror::Error)]
#[error(
    "the policy's {0} rules compile to a {1}-instruction socket filter, more than the kernel's \
     {MAX_INSTRUCTIONS}; merge rules into wider address ranges"
)]
pub struct TooLarge(Protocol, usize);

/// Compiles the rules of `proto` in `policy`; `myhost` lists the host's own addresses (for
/// `MYHOST_ADDR`).
pub fn compile(
    policy: &Policy,
    proto: Protocol,
    myhost: &[IpAddr],
) -> Result<Vec<Instruction>, TooLarge> {
    let mut v4: Vec<Matcher<1>> = Vec::new();
    let mut v6: Vec<Matcher<4>> = Vec::new();
    for rule in policy.net_rules() {
        let NetTarget::Ip {
            protocol,
            addr,
            port,
        } = &rule.target
        else {
            continue;
        };
        if *protocol != proto {
            continue;
        }
        let which = match rule.direction {
            Direction::Outgoing => Port::Source,
            Direction::Incoming => Port::Destination,
        };
        let nets: Vec<(IpAddr, u8)> = match *addr {
            NetAddr::Net { addr, prefix_len } => vec![(addr, prefix_len)],
            NetAddr::MyHost => myhost
                .iter()
                .map(|&a| (a, if a.is_ipv4() { 32 } else { 128 }))
                .collect(),
        };
        for (net, prefix) in nets {
            match net {
                IpAddr::V4(a) => v4.push(Matcher {
                    addr: [u32::from(a)],
                    mask: [prefix_mask(prefix, 0)],
                    which,
                    port: *port,
                }),
                IpAddr::V6(a) => {
                    let words = words(a);
                    v6.push(Matcher {
                        addr: words,
                        mask: std::array::from_fn(|i| prefix_mask(prefix, 32 * i as u8)),
                        which,
                        port: *port,
                    });
                    if let Some((a4, p4)) = mapped_part(a, prefix) {
                        v4.push(Matcher {
                            addr: [a4 & prefix_mask(p4, 0)],
                            mask: [prefix_mask(p4, 0)],
                            which,
                            port: *port,
                        });
                    }
                }
            }
        }
    }
    v4.dedup();
    v6.dedup();
    let mut prog = vec![
        stmt(LD_B_ABS, SKF_NET_OFF),
        stmt(ALU_RSH_K, 4),
        jump(JMP_JEQ_K, 4, 0, 1),
        stmt(JMP_JA, 3),
        jump(JMP_JEQ_K, 6, 0, 1),
        stmt(JMP_JA, 0), // patched to the IPv6 section below
        stmt(RET_K, DROP),
    ];
    for m in &v4 {
        emit(&mut prog, m, 12);
    }
    prog.push(stmt(RET_K, DROP));
    let v6_start = prog.len();
    prog[5].k = (v6_start - 6) as u32;
    for m in &v6 {
        emit(&mut prog, m, 8);
    }
    prog.push(stmt(RET_K, DROP));
    if prog.len() > MAX_INSTRUCTIONS {
        return Err(TooLarge(proto, prog.len()));
    }
    Ok(prog)
}

/// Appends one matcher: "if every masked word of the source address and the masked port are
/// equal, accept", falling through to the next matcher otherwise. `offset`: where the source
/// address starts in the network header.
fn emit<const N: usize>(prog: &mut Vec<Instruction>, m: &Matcher<N>, offset: u32) {
    let mut body: Vec<Instruction> = Vec::new();
    // Conditional jumps are patched to "past the end of this matcher" afterwards.
    let mut fails: Vec<usize> = Vec::new();
    let mut compare = |body: &mut Vec<Instruction>, load: Instruction, mask: u32, value: u32| {
        body.push(load);
        if mask != u32::MAX {
            body.push(stmt(ALU_AND_K, mask));
        }
        fails.push(body.len());
        body.push(jump(JMP_JEQ_K, value, 0, 0));
    };
    for i in 0..N {
        if m.mask[i] != 0 {
            let load = stmt(LD_W_ABS, SKF_NET_OFF.wrapping_add(offset + 4 * i as u32));
            compare(&mut body, load, m.mask[i], m.addr[i] & m.mask[i]);
        }
    }
    if m.port.mask != 0 {
        let at = match m.which {
            Port::Source => 0,
            Port::Destination => 2,
        };
        compare(
            &mut body,
            stmt(LD_H_ABS, at),
            u32::from(m.port.mask),
            u32::from(m.port.port & m.port.mask),
        );
    }
    body.push(stmt(RET_K, ACCEPT));
    let end = body.len();
    for at in fails {
        // At most 4 words and a port, 3 instructions each: always within jf's 8 bits.
        body[at].jf = (end - at - 1) as u8;
    }
    prog.extend(body);
}

/// The IPv4 range an IPv6 network contains through the mapped range `::ffff:0:0/96`, if any.
fn mapped_part(net: Ipv6Addr, prefix: u8) -> Option<(u32, u8)> {
    let mapped = words(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0));
    let w = words(net);
    let common = prefix.min(96);
    let same = (0..3).all(|i| {
        let mask = prefix_mask(common, 32 * i as u8);
        w[i] & mask == mapped[i] & mask
    });
    match same {
        false => None,
        true if prefix <= 96 => Some((0, 0)),
        true => Some((w[3], prefix - 96)),
    }
}

/// The mask of the bits of a `prefix`-bit network that fall in the 32-bit word starting at bit
/// `start`.
fn prefix_mask(prefix: u8, start: u8) -> u32 {
    let bits = prefix.saturating_sub(start).min(32);
    if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    }
}

fn words(a: Ipv6Addr) -> [u32; 4] {
    let o = a.octets();
    std::array::from_fn(|i| {
        u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
    })
}

fn stmt(code: u16, k: u32) -> Instruction {
    Instruction {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet as the filter sees it: the network header (reached at `SKF_NET_OFF`) and the
    /// data, which starts at the transport header.
    struct Packet {
        net: Vec<u8>,
        data: Vec<u8>,
    }

    fn packet(src: IpAddr, sport: u16, dport: u16) -> Packet {
        let net = match src {
            IpAddr::V4(a) => {
                let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0];
                h.extend(a.octets());
                h.extend([127, 0, 0, 1]);
                h
            }
            IpAddr::V6(a) => {
                let mut h = vec![0x60, 0, 0, 0, 0, 0, 6, 64];
                h.extend(a.octets());
                h.extend(Ipv6Addr::LOCALHOST.octets());
                h
            }
        };
        let mut data = Vec::new();
        data.extend(sport.to_be_bytes());
        data.extend(dport.to_be_bytes());
        data.extend([0; 16]);
        Packet { net, data }
    }

    /// Runs the program on `p` the way the kernel does; returns the verdict.
    fn run(prog: &[Instruction], p: &Packet) -> u32 {
        let load = |k: u32, size: usize| -> Option<u32> {
            let (buf, at) = if k >= SKF_NET_OFF {
                (&p.net, (k - SKF_NET_OFF) as usize)
            } else {
                (&p.data, k as usize)
            };
            let bytes = buf.get(at..at + size)?;
            Some(bytes.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b)))
        };
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let ins = prog[pc];
            pc += 1;
            match ins.code {
                LD_W_ABS | LD_H_ABS | LD_B_ABS => {
                    let size = match ins.code {
                        LD_W_ABS => 4,
                        LD_H_ABS => 2,
                        _ => 1,
                    };
                    match load(ins.k, size) {
                        Some(v) => a = v,
                        None => return 0,
                    }
                }
                ALU_AND_K => a &= ins.k,
                ALU_RSH_K => a >>= ins.k,
                JMP_JA => pc += ins.k as usize,
                JMP_JEQ_K => pc += if a == ins.k { ins.jt } else { ins.jf } as usize,
                RET_K => return ins.k,
                other => panic!("unexpected op {other:#x}"),
            }
        }
    }

    fn policy(text: &str) -> Policy {
        Policy::parse("t", text).unwrap()
    }

    fn passes(prog: &[Instruction], src: &str, sport: u16, dport: u16) -> bool {
        run(prog, &packet(src.parse().unwrap(), sport, dport)) == ACCEPT
    }

    #[test]
    fn outgoing_rules_let_replies_in_by_source_address_and_port() {
        let p = policy("net-allow outgoing tcp 10.1.0.0/16 443\n");
        let prog = compile(&p, Protocol::Tcp, &[]).unwrap();
        assert!(passes(&prog, "10.1.2.3", 443, 40000));
        assert!(!passes(&prog, "10.1.2.3", 444, 40000));
        assert!(!passes(&prog, "10.2.2.3", 443, 40000));
        // The port is the peer's, not ours.
        assert!(!passes(&prog, "10.1.2.3", 40000, 443));
        assert!(!passes(&prog, "::1", 443, 40000));
        // Rules of the other protocol are not in this program.
        let udp = compile(&p, Protocol::Udp, &[]).unwrap();
        assert!(!passes(&udp, "10.1.2.3", 443, 40000));
    }

    #[test]
    fn incoming_rules_match_the_peer_address_and_the_local_port() {
        let p =
            policy("net-allow incoming tcp 192.168.0.0/16 8080\nnet-allow incoming tcp ::1 22\n");
        let prog = compile(&p, Protocol::Tcp, &[]).unwrap();
        assert!(passes(&prog, "192.168.7.7", 51000, 8080));
        assert!(!passes(&prog, "192.169.7.7", 51000, 8080));
        assert!(!passes(&prog, "192.168.7.7", 8080, 51000));
        assert!(passes(&prog, "::1", 51000, 22));
        assert!(!passes(&prog, "::2", 51000, 22));
        assert!(!passes(&prog, "127.0.0.1", 51000, 22));
    }

    #[test]
    fn any_means_any_and_masks_are_honoured() {
        let p = policy("net-allow incoming udp 0/0 0/0\n");
        let prog = compile(&p, Protocol::Udp, &[]).unwrap();
        assert!(passes(&prog, "8.8.8.8", 1, 2));
        // 0/0 is all of IPv4, not IPv6 (write ::/0 for that).
        assert!(!passes(&prog, "2001:db8::1", 1, 2));
        let p = policy("net-allow incoming udp ::/0 5000/65520\n");
        let prog = compile(&p, Protocol::Udp, &[]).unwrap();
        assert!(passes(&prog, "2001:db8::1", 1, 5000 & 0xfff0));
        assert!(passes(&prog, "2001:db8::1", 1, (5000 & 0xfff0) + 15));
        assert!(!passes(&prog, "2001:db8::1", 1, (5000 & 0xfff0) + 16));
        // ::/0 contains the mapped range, so it covers IPv4 packets too.
        assert!(passes(&prog, "1.2.3.4", 1, 5000 & 0xfff0));
    }

    #[test]
    fn mapped_ipv6_rules_cover_ipv4_packets() {
        let p = policy("net-allow outgoing udp ::ffff:10.0.0.0/104 53\n");
        let prog = compile(&p, Protocol::Udp, &[]).unwrap();
        assert!(passes(&prog, "10.9.9.9", 53, 3333));
        assert!(!passes(&prog, "11.9.9.9", 53, 3333));
        assert_eq!(
            mapped_part("2001:db8::".parse().unwrap(), 32),
            None,
            "a network outside the mapped range has no IPv4 part"
        );
        assert_eq!(mapped_part("::".parse().unwrap(), 64), Some((0, 0)));
    }

    #[test]
    fn myhost_expands_to_the_given_addresses() {
        let p = policy("net-allow outgoing tcp MYHOST_ADDR 0/0\n");
        let host: Vec<IpAddr> = vec!["10.0.0.5".parse().unwrap(), "fe80::5".parse().unwrap()];
        let prog = compile(&p, Protocol::Tcp, &host).unwrap();
        assert!(passes(&prog, "10.0.0.5", 1, 2));
        assert!(passes(&prog, "fe80::5", 1, 2));
        assert!(!passes(&prog, "10.0.0.6", 1, 2));
    }

    #[test]
    fn no_rules_drop_everything_and_other_ip_versions_are_dropped() {
        let prog = compile(&Policy::default(), Protocol::Tcp, &[]).unwrap();
        assert!(!passes(&prog, "127.0.0.1", 1, 2));
        assert!(!passes(&prog, "::1", 1, 2));
        let p = policy("net-allow incoming tcp 0/0 0/0\n");
        let prog = compile(&p, Protocol::Tcp, &[]).unwrap();
        let mut weird = packet("1.2.3.4".parse().unwrap(), 1, 2);
        weird.net[0] = 0x55;
        assert_eq!(run(&prog, &weird), DROP);
    }

    #[test]
    fn agrees_with_the_policy_matcher() {
        // The filter is a second implementation of NetRule::matches_ip: compare them on a grid
        // of rules and packets.
        let rules = "net-allow outgoing tcp 10.0.0.0/8 80\n\
                     net-allow outgoing tcp 2001:db8::/48 443/65280\n\
                     net-allow incoming tcp 127.0.0.1 8000\n\
                     net-allow incoming tcp ::ffff:192.168.1.0/120 22\n\
                     net-allow incoming tcp fe80::/10 0/0\n";
        let p = policy(rules);
        let prog = compile(&p, Protocol::Tcp, &[]).unwrap();
        let addrs = [
            "10.0.0.1",
            "10.255.1.1",
            "11.0.0.1",
            "127.0.0.1",
            "127.0.0.2",
            "192.168.1.9",
            "192.168.2.9",
            "2001:db8::1",
            "2001:db8:0:1::1",
            "2001:db9::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "::1",
        ];
        let ports = [22u16, 80, 443, 480, 511, 8000, 40000];
        for a in addrs {
            let ip: IpAddr = a.parse().unwrap();
            for &sport in &ports {
                for &dport in &ports {
                    let want = p
                        .check_ip(Direction::Outgoing, Protocol::Tcp, ip, sport, &[])
                        .is_some()
                        || p.check_ip(Direction::Incoming, Protocol::Tcp, ip, dport, &[])
                            .is_some();
                    assert_eq!(passes(&prog, a, sport, dport), want, "{a} {sport}->{dport}");
                }
            }
        }
    }

    #[test]
    fn thousands_of_rules_are_refused_with_a_sentence() {
        let text: String = (0..2000)
            .map(|i| format!("net-allow outgoing tcp 2001:db8::{i:x} {}\n", 1000 + i))
            .collect();
        let e = compile(&policy(&text), Protocol::Tcp, &[]).unwrap_err();
        assert!(e.to_string().contains("merge rules"), "{e}");
    }
}
