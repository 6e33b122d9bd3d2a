//! Network rules: `net-allow` in Ostia's notation, parsed, validated and
//! matched.
//!
//! Ostia writes an endpoint as `ADDRESS[/MASK] PORT[/MASK]`, with `0/0`
//! meaning "any". warden keeps that notation so old policies read the same,
//! and extends it to IPv6 (`::1`, `fe80::/64`) because a sandbox that only
//! understood IPv4 would have to deny, or worse ignore, half of today's
//! sockets.
//!
//! Rules are canonicalized when parsed: the address is masked to its prefix
//! (`10.1.2.3/8` is stored as `10.0.0.0/8`) and the port to its port mask, so
//! two rules that match the same endpoints compare equal and print the same.
//!
//! Address families are kept apart on purpose: `0/0` (all of IPv4) does not
//! match IPv6 addresses; write `::/0` for those. The one bridge is
//! IPv4-mapped IPv6 (`::ffff:a.b.c.d`), which *is* an IPv4 endpoint on the
//! wire; a rule matches such an address if it matches either spelling, so a
//! program cannot dodge (or be refused) an IPv4 rule by choosing an
//! `AF_INET6` socket. (It follows that `::/0`, which contains the mapped
//! range, also covers IPv4: a dual-stack socket reaches IPv4 that way.)
//!
//! Which endpoint a rule describes is the caller's business: for `outgoing`
//! it is the peer a socket connects or sends to, for `incoming` the local
//! address and port a socket binds, listens or accepts on (Ostia's example:
//! `net-allow incoming tcp 0/0 8080`). Enforcement lives in the agent; this
//! module only answers "does this rule cover that endpoint?".

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::diag::Span;
use crate::pattern::{quote, PathPattern};

/// Which way a connection goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Direction {
    /// The sandboxed program connects or sends to the endpoint.
    Outgoing,
    /// The sandboxed program binds, listens or accepts on the endpoint.
    Incoming,
}

impl Direction {
    /// Both directions, in the order normalized policies print them.
    pub const ALL: [Direction; 2] = [Direction::Outgoing, Direction::Incoming];

    /// The policy keyword: `outgoing` or `incoming`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Outgoing => "outgoing",
            Direction::Incoming => "incoming",
        }
    }

    /// Parses the policy keyword.
    pub fn from_name(s: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An IP transport protocol.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Protocol {
    /// TCP (stream sockets).
    Tcp,
    /// UDP (datagram sockets).
    Udp,
}

impl Protocol {
    /// Both protocols.
    pub const ALL: [Protocol; 2] = [Protocol::Tcp, Protocol::Udp];

    /// The policy keyword: `tcp` or `udp`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }

    /// Parses the policy keyword.
    pub fn from_name(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The address half of an endpoint.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NetAddr {
    /// A network: `addr` with its host bits cleared, and the prefix length
    /// (0..=32 for IPv4, 0..=128 for IPv6).
    Net {
        /// The network address (host bits are zero).
        addr: IpAddr,
        /// How many leading bits must match.
        prefix_len: u8,
    },
    /// `MYHOST_ADDR`: any of the host's own addresses, which the caller
    /// supplies at match time (they are not known when the policy is read).
    MyHost,
}

/// The keyword Ostia uses for the host's own addresses.
const MYHOST: &str = "MYHOST_ADDR";

impl NetAddr {
    /// Parses `ADDRESS[/MASK]`: ADDRESS is IPv4, IPv6, `0` (0.0.0.0) or
    /// `MYHOST_ADDR`; MASK is a prefix length or, for IPv4, a contiguous
    /// dotted netmask such as `255.255.255.0`.
    pub fn parse(s: &str) -> Result<NetAddr, String> {
        let (addr_text, mask_text) = match s.split_once('/') {
            Some((a, m)) => (a, Some(m)),
            None => (s, None),
        };
        if addr_text == MYHOST {
            return match mask_text {
                None => Ok(NetAddr::MyHost),
                Some(_) => Err(format!(
                    "{MYHOST} stands for this host's own addresses and takes no `/MASK`; remove {}",
                    quote(&s[addr_text.len()..])
                )),
            };
        }
        let addr: IpAddr = if addr_text == "0" {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            addr_text.parse().map_err(|_| {
                format!(
                    "{} is not an IP address; write an IPv4 or IPv6 address \
                     (such as 10.0.0.1 or ::1), `0` for any IPv4 address, or {MYHOST}",
                    quote(addr_text)
                )
            })?
        };
        let max = max_prefix(addr);
        let prefix_len = match mask_text {
            None => max,
            Some(m) => parse_mask(m, addr)?,
        };
        Ok(NetAddr::Net {
            addr: mask_addr(addr, prefix_len),
            prefix_len,
        })
    }

    /// Whether `ip` is covered. `myhost` lists the host's own addresses for
    /// `MYHOST_ADDR`. IPv4-mapped IPv6 addresses match in either spelling.
    pub fn matches(&self, ip: IpAddr, myhost: &[IpAddr]) -> bool {
        let alt = alternate_spelling(ip);
        match *self {
            NetAddr::MyHost => myhost
                .iter()
                .any(|&h| h == ip || Some(h) == alt || alternate_spelling(h) == Some(ip)),
            NetAddr::Net { addr, prefix_len } => {
                let hit = |candidate: IpAddr| {
                    max_prefix(candidate) == max_prefix(addr)
                        && mask_addr(candidate, prefix_len) == addr
                };
                hit(ip) || alt.is_some_and(hit)
            }
        }
    }
}

impl fmt::Display for NetAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NetAddr::MyHost => f.write_str(MYHOST),
            NetAddr::Net { addr, prefix_len } if prefix_len == max_prefix(addr) => {
                write!(f, "{addr}")
            }
            NetAddr::Net { addr, prefix_len } => write!(f, "{addr}/{prefix_len}"),
        }
    }
}

/// The port half of an endpoint: matches port `p` iff
/// `p & mask == port & mask` (`port` is stored already masked).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PortMatch {
    /// The port, with the bits outside `mask` cleared.
    pub port: u16,
    /// Which bits of the port must match; 0xffff = exactly `port`, 0 = any.
    pub mask: u16,
}

impl PortMatch {
    /// Any port (`0/0`).
    pub const ANY: PortMatch = PortMatch { port: 0, mask: 0 };

    /// Parses `PORT[/MASK]`, both decimal numbers from 0 to 65535.
    pub fn parse(s: &str) -> Result<PortMatch, String> {
        let (port_text, mask_text) = match s.split_once('/') {
            Some((p, m)) => (p, Some(m)),
            None => (s, None),
        };
        let port = parse_u16(port_text).ok_or_else(|| {
            format!(
                "{} is not a port; write a number from 0 to 65535, optionally with \
                 `/MASK` (`0/0` means any port)",
                quote(port_text)
            )
        })?;
        let mask = match mask_text {
            None => u16::MAX,
            Some(m) => parse_u16(m).ok_or_else(|| {
                format!(
                    "{} is not a port mask; write a decimal number from 0 to 65535 \
                     (0 means any port, 65535 exactly this port)",
                    quote(m)
                )
            })?,
        };
        Ok(PortMatch {
            port: port & mask,
            mask,
        })
    }

    /// Whether port `p` is covered.
    pub fn matches(&self, p: u16) -> bool {
        p & self.mask == self.port
    }
}

impl fmt::Display for PortMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mask == u16::MAX {
            write!(f, "{}", self.port)
        } else {
            write!(f, "{}/{}", self.port, self.mask)
        }
    }
}

/// What a `net-allow` rule lets through, besides its direction.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum NetTarget {
    /// A TCP or UDP endpoint range.
    Ip {
        /// The transport protocol.
        protocol: Protocol,
        /// The address range.
        addr: NetAddr,
        /// The port range.
        port: PortMatch,
    },
    /// Unix-domain sockets whose path matches the pattern. (Abstract
    /// sockets have no path and match no rule.)
    Unix(PathPattern),
}

/// One `net-allow` rule. A line listing several unix-domain patterns gives
/// one rule per pattern, each with its own span.
///
/// Displays as the normalized policy line, e.g.
/// `net-allow outgoing tcp 10.0.0.0/8 443`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetRule {
    /// Which way the traffic goes.
    pub direction: Direction,
    /// Which endpoints are allowed.
    pub target: NetTarget,
    /// Where the rule was written (the address or pattern token).
    pub span: Span,
}

impl NetRule {
    /// Whether this rule allows traffic in direction `dir` over `proto` with
    /// the endpoint `ip`:`port`. `myhost` lists the host's own addresses,
    /// for rules written with `MYHOST_ADDR`. Unix-domain rules never match.
    pub fn matches_ip(
        &self,
        dir: Direction,
        proto: Protocol,
        ip: IpAddr,
        port: u16,
        myhost: &[IpAddr],
    ) -> bool {
        match &self.target {
            NetTarget::Ip {
                protocol,
                addr,
                port: ports,
            } => {
                self.direction == dir
                    && *protocol == proto
                    && ports.matches(port)
                    && addr.matches(ip, myhost)
            }
            NetTarget::Unix(_) => false,
        }
    }

    /// Whether this rule allows a unix-domain socket at `path` (absolute,
    /// normalized) in direction `dir`. IP rules never match.
    pub fn matches_unix(&self, dir: Direction, path: &str) -> bool {
        match &self.target {
            NetTarget::Unix(pattern) => self.direction == dir && pattern.matches(path),
            NetTarget::Ip { .. } => false,
        }
    }

    /// Whether the rule is a unix-domain pattern rooted at `$SCRATCH`.
    pub fn uses_scratch(&self) -> bool {
        matches!(&self.target, NetTarget::Unix(p) if p.uses_scratch())
    }

    /// The rule with `$SCRATCH` expanded in its unix-domain pattern.
    pub fn expand_scratch(&self, scratch: &str) -> NetRule {
        let mut rule = self.clone();
        if let NetTarget::Unix(p) = &rule.target {
            rule.target = NetTarget::Unix(p.expand_scratch(scratch));
        }
        rule
    }
}

impl fmt::Display for NetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            NetTarget::Ip {
                protocol,
                addr,
                port,
            } => write!(f, "net-allow {} {protocol} {addr} {port}", self.direction),
            NetTarget::Unix(p) => write!(f, "net-allow {} unix-domain {p}", self.direction),
        }
    }
}

/// Parses a decimal u16 made of ASCII digits only (no sign, no spaces).
fn parse_u16(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn max_prefix(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// Parses a mask for `addr`: a prefix length, or (IPv4) a dotted netmask.
fn parse_mask(m: &str, addr: IpAddr) -> Result<u8, String> {
    let max = max_prefix(addr);
    if m.contains('.') {
        let IpAddr::V4(_) = addr else {
            return Err(format!(
                "{} is a dotted netmask, which only IPv4 addresses take; write a prefix length from 0 to 128",
                quote(m)
            ));
        };
        let mask: Ipv4Addr = m.parse().map_err(|_| {
            format!(
                "{} is not a netmask; write a prefix length from 0 to 32 or a netmask such as 255.255.255.0",
                quote(m)
            )
        })?;
        let bits = u32::from(mask);
        // Contiguous: ones, then zeros. leading_ones fits in u8 (<= 32).
        let ones = bits.leading_ones();
        if ones + bits.trailing_zeros() < 32 {
            return Err(format!(
                "{} is not a contiguous netmask (its one bits must all come first, as in 255.255.255.0)",
                quote(m)
            ));
        }
        return Ok(u8::try_from(ones).unwrap_or(32));
    }
    let valid = !m.is_empty() && m.len() <= 3 && m.bytes().all(|b| b.is_ascii_digit());
    match m.parse::<u8>() {
        Ok(n) if valid && n <= max => Ok(n),
        _ => Err(format!(
            "{} is not a valid mask for {}; write a prefix length from 0 to {max}{}",
            quote(m),
            if max == 32 {
                "an IPv4 address"
            } else {
                "an IPv6 address"
            },
            if max == 32 {
                " or a netmask such as 255.255.255.0"
            } else {
                ""
            }
        )),
    }
}

/// `addr` with every bit past the first `prefix_len` cleared.
fn mask_addr(addr: IpAddr, prefix_len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let keep = u32::MAX
                .checked_shl(32 - u32::from(prefix_len))
                .unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & keep))
        }
        IpAddr::V6(a) => {
            let keep = u128::MAX
                .checked_shl(128 - u32::from(prefix_len))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & keep))
        }
    }
}

/// The other spelling of the same IPv4 endpoint: a plain IPv4 address as
/// IPv4-mapped IPv6, or an IPv4-mapped IPv6 address as plain IPv4.
fn alternate_spelling(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(a) => Some(IpAddr::V6(a.to_ipv6_mapped())),
        IpAddr::V6(a) => a.to_ipv4_mapped().map(IpAddr::V4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn addr(s: &str) -> NetAddr {
        NetAddr::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn rule(direction: Direction, protocol: Protocol, a: &str, p: &str) -> NetRule {
        NetRule {
            direction,
            target: NetTarget::Ip {
                protocol,
                addr: addr(a),
                port: PortMatch::parse(p).unwrap(),
            },
            span: Span::new("t", 1, 1),
        }
    }

    #[test]
    fn address_parsing_and_display() {
        let cases = [
            ("128.36.31.50", "128.36.31.50"),
            ("128.36.31.50/32", "128.36.31.50"),
            ("10.1.2.3/8", "10.0.0.0/8"),
            ("10.1.2.3/255.0.0.0", "10.0.0.0/8"),
            ("192.168.1.7/255.255.255.0", "192.168.1.0/24"),
            ("1.2.3.4/0.0.0.0", "0.0.0.0/0"),
            ("0", "0.0.0.0"),
            ("0/0", "0.0.0.0/0"),
            ("0.0.0.0/0", "0.0.0.0/0"),
            ("::1", "::1"),
            ("::1/128", "::1"),
            ("fe80::1/64", "fe80::/64"),
            ("::/0", "::/0"),
            ("MYHOST_ADDR", "MYHOST_ADDR"),
        ];
        for (input, shown) in cases {
            let a = addr(input);
            assert_eq!(a.to_string(), shown, "{input}");
            assert_eq!(addr(&a.to_string()), a, "{input}");
        }
    }

    #[test]
    fn address_errors() {
        let err = |s: &str| NetAddr::parse(s).expect_err(s);
        assert!(err("example.com").contains("is not an IP address"));
        assert!(err("1.2.3").contains("is not an IP address"));
        assert!(err("").contains("is not an IP address"));
        assert!(err("1.2.3.4/33").contains("prefix length from 0 to 32"));
        assert!(err("::1/129").contains("from 0 to 128"));
        assert!(err("::1/255.0.0.0").contains("only IPv4"));
        assert!(err("1.2.3.4/255.0.255.0").contains("contiguous"));
        assert!(err("1.2.3.4/255.0.0").contains("not a netmask"));
        assert!(err("1.2.3.4/").contains("not a valid mask"));
        assert!(err("1.2.3.4/+8").contains("not a valid mask"));
        assert!(err("1.2.3.4/8/8").contains("not a valid mask"));
        assert!(err("MYHOST_ADDR/24").contains("takes no `/MASK`"));
        assert!(err("fe80::1%eth0").contains("is not an IP address"));
    }

    #[test]
    fn port_parsing() {
        let p = |s: &str| PortMatch::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(
            p("80"),
            PortMatch {
                port: 80,
                mask: 0xffff
            }
        );
        assert_eq!(p("0/0"), PortMatch::ANY);
        assert_eq!(p("8080/0"), PortMatch::ANY);
        assert_eq!(
            p("65535"),
            PortMatch {
                port: 65535,
                mask: 0xffff
            }
        );
        assert_eq!(p("8080/65280").to_string(), "7936/65280");
        let err = |s: &str| PortMatch::parse(s).expect_err(s);
        assert!(err("65536").contains("is not a port"));
        assert!(err("http").contains("is not a port"));
        assert!(err("-1").contains("is not a port"));
        assert!(err("+80").contains("is not a port"));
        assert!(err("80/70000").contains("is not a port mask"));
        assert!(err("80/0xff").contains("is not a port mask"));
        assert!(err("").contains("is not a port"));
    }

    #[test]
    fn port_matching() {
        let any = PortMatch::ANY;
        assert!(any.matches(0) && any.matches(65535));
        let exact = PortMatch::parse("443").unwrap();
        assert!(exact.matches(443) && !exact.matches(444));
        // 8080/65280 (0xff00): every port from 7936 to 8191.
        let range = PortMatch::parse("8080/65280").unwrap();
        assert!(range.matches(7936) && range.matches(8080) && range.matches(8191));
        assert!(!range.matches(7935) && !range.matches(8192));
    }

    #[test]
    fn ip_matching() {
        use Direction::*;
        use Protocol::*;
        let r = rule(Outgoing, Tcp, "128.36.31.50", "80");
        assert!(r.matches_ip(Outgoing, Tcp, ip("128.36.31.50"), 80, &[]));
        assert!(!r.matches_ip(Incoming, Tcp, ip("128.36.31.50"), 80, &[]));
        assert!(!r.matches_ip(Outgoing, Udp, ip("128.36.31.50"), 80, &[]));
        assert!(!r.matches_ip(Outgoing, Tcp, ip("128.36.31.51"), 80, &[]));
        assert!(!r.matches_ip(Outgoing, Tcp, ip("128.36.31.50"), 81, &[]));
        // The IPv4-mapped spelling is the same endpoint.
        assert!(r.matches_ip(Outgoing, Tcp, ip("::ffff:128.36.31.50"), 80, &[]));
        assert!(!r.matches_unix(Outgoing, "/x"));

        let net = rule(Incoming, Udp, "10.0.0.0/8", "0/0");
        assert!(net.matches_ip(Incoming, Udp, ip("10.255.0.1"), 5353, &[]));
        assert!(!net.matches_ip(Incoming, Udp, ip("11.0.0.1"), 5353, &[]));

        // 0/0 is all of IPv4, but not IPv6.
        let any4 = rule(Outgoing, Tcp, "0/0", "0/0");
        assert!(any4.matches_ip(Outgoing, Tcp, ip("8.8.8.8"), 53, &[]));
        assert!(any4.matches_ip(Outgoing, Tcp, ip("::ffff:8.8.8.8"), 53, &[]));
        assert!(!any4.matches_ip(Outgoing, Tcp, ip("2001:db8::1"), 53, &[]));
        let any6 = rule(Outgoing, Tcp, "::/0", "0/0");
        assert!(any6.matches_ip(Outgoing, Tcp, ip("2001:db8::1"), 53, &[]));
        // ::/0 covers mapped addresses as IPv6, and so plain IPv4 too.
        assert!(any6.matches_ip(Outgoing, Tcp, ip("8.8.8.8"), 53, &[]));

        let v6 = rule(Outgoing, Tcp, "fe80::1/64", "22");
        assert!(v6.matches_ip(Outgoing, Tcp, ip("fe80::abcd"), 22, &[]));
        assert!(!v6.matches_ip(Outgoing, Tcp, ip("fe81::1"), 22, &[]));
        let lo = rule(Outgoing, Tcp, "::1", "22");
        assert!(lo.matches_ip(Outgoing, Tcp, ip("::1"), 22, &[]));
        assert!(!lo.matches_ip(Outgoing, Tcp, ip("127.0.0.1"), 22, &[]));
    }

    #[test]
    fn myhost_matching() {
        use Direction::*;
        use Protocol::*;
        let r = rule(Outgoing, Tcp, "MYHOST_ADDR", "0/0");
        let hosts = [ip("192.0.2.7"), ip("2001:db8::7")];
        assert!(r.matches_ip(Outgoing, Tcp, ip("192.0.2.7"), 1, &hosts));
        assert!(r.matches_ip(Outgoing, Tcp, ip("::ffff:192.0.2.7"), 1, &hosts));
        assert!(r.matches_ip(Outgoing, Tcp, ip("2001:db8::7"), 1, &hosts));
        assert!(!r.matches_ip(Outgoing, Tcp, ip("192.0.2.8"), 1, &hosts));
        assert!(!r.matches_ip(Outgoing, Tcp, ip("192.0.2.7"), 1, &[]));
        let mapped_host = [ip("::ffff:192.0.2.7")];
        assert!(r.matches_ip(Outgoing, Tcp, ip("192.0.2.7"), 1, &mapped_host));
    }

    #[test]
    fn unix_matching_and_scratch() {
        let r = NetRule {
            direction: Direction::Incoming,
            target: NetTarget::Unix(PathPattern::parse("$SCRATCH/*").unwrap()),
            span: Span::new("t", 1, 1),
        };
        assert!(r.uses_scratch());
        assert!(!r.matches_unix(Direction::Incoming, "/tmp/s/sock"));
        let e = r.expand_scratch("/tmp/s");
        assert!(!e.uses_scratch());
        assert!(e.matches_unix(Direction::Incoming, "/tmp/s/sock"));
        assert!(!e.matches_unix(Direction::Outgoing, "/tmp/s/sock"));
        assert!(!e.matches_ip(Direction::Incoming, Protocol::Tcp, ip("::1"), 1, &[]));
        assert_eq!(e.to_string(), "net-allow incoming unix-domain /tmp/s/*");
        let ipr = rule(Direction::Outgoing, Protocol::Udp, "10.0.0.1/8", "53");
        assert_eq!(ipr.to_string(), "net-allow outgoing udp 10.0.0.0/8 53");
        assert!(!ipr.uses_scratch());
        assert_eq!(ipr.expand_scratch("/x"), ipr);
    }

    #[test]
    fn keywords() {
        assert_eq!(Direction::from_name("incoming"), Some(Direction::Incoming));
        assert_eq!(Direction::from_name("in"), None);
        assert_eq!(Protocol::from_name("udp"), Some(Protocol::Udp));
        assert_eq!(Protocol::from_name("TCP"), None);
    }
}
