//! `warden check --explain`: for each rule of a policy, who enforces it (the agent, the kernel,
//! or both) and how, and warnings about rules that allow more than they seem to. Pure: a policy
//! in, lines out.

use warden_policy::kernel::{Enforcer, KernelPlan};
use warden_policy::{Access, Direction, NetAddr, NetTarget, Policy, PortMatch, Protocol};

/// One explained rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explained {
    /// Where the rule was written (`file:line:col`).
    pub at: String,
    /// The rule, as a normalized policy line.
    pub rule: String,
    /// Who enforces it, and how.
    pub enforcement: String,
    /// On the fast path (opens straight to the kernel): who decides, or why it cannot be taken.
    pub fast_path: Option<String>,
    /// What it allows that a reader might not expect.
    pub warnings: Vec<String>,
}

/// Unix sockets of system daemons: reaching one is reaching the daemon, with the user's rights
/// (some, like Docker's, are as good as root).
const DAEMON_SOCKETS: [&str; 7] = [
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/systemd/private",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
];

/// Explains every rule of `policy`, in policy order (path rules, then net rules), with `plan`
/// ([`warden_policy::kernel::kernel_plan`] of the same policy) saying how each path rule fares on
/// the fast path.
pub fn explain(policy: &Policy, plan: &KernelPlan) -> Vec<Explained> {
    let mut out = Vec::new();
    for (i, rule) in policy.path_rules().iter().enumerate() {
        let fast_path = plan.rules.get(i).map(|p| match &p.enforcer {
            Enforcer::Kernel => "kernel-enforced: Landlock decides the opens it allows".to_string(),
            Enforcer::Agent => "the agent's: the calls it allows are always delegated".to_string(),
            Enforcer::Narrower(what) => format!("narrower: {what}"),
            Enforcer::Blocks(why) => format!("keeps opens delegated: {why}"),
        });
        let lit = rule.pattern.literal();
        let per_process = rule.pattern.per_process();
        let name_prefix = rule.pattern.is_prefix() && !lit.ends_with('/');
        let kernel = if per_process {
            "Landlock cannot name each process's /proc/self, so the agent alone enforces it".into()
        } else if name_prefix {
            "Landlock gets the entries that exist now (it cannot match name prefixes); names \
             created later only the agent allows"
                .into()
        } else if rule.access.is_none() {
            "Landlock's rules are laid out around it (a parent's entries granted one by one)".into()
        } else if rule.pattern.is_prefix() {
            let root = lit.trim_end_matches('/');
            format!(
                "Landlock grants {} beneath {} as a second lock",
                landlock_words(rule.access),
                if root.is_empty() { "/" } else { root }
            )
        } else {
            format!(
                "Landlock grants {} on it as a second lock (on a directory: listing only)",
                landlock_words(rule.access)
            )
        };
        let agent = match rule.access {
            Some(Access::Exec) => {
                "the agent checks execve, then the kernel runs it under Landlock's execute right \
                 (the lock that holds if the path is swapped)"
            }
            Some(_) => "the agent decides every call that names a matching path",
            None => "the agent denies every access to matching paths",
        };
        let mut warnings = Vec::new();
        if rule.access.is_some() && rule.pattern.is_prefix() && lit == "/" {
            warnings.push(format!(
                "`/*` allows {} on the whole file system",
                rule.access.map_or("", Access::name)
            ));
        }
        if rule.access == Some(Access::Write) {
            let exec = policy
                .path_rules()
                .iter()
                .find(|r| r.access == Some(Access::Exec) && overlaps(&r.pattern, &rule.pattern));
            if let Some(e) = exec {
                warnings.push(format!(
                    "the program may write files it may also execute ({} at {}): it can run \
                     code it wrote",
                    e.pattern, e.span
                ));
            }
        }
        let enforcement = match rule.access {
            // The execute right is the kernel's part already.
            Some(Access::Exec) if !per_process && !name_prefix => agent.to_string(),
            _ => format!("{agent}; {kernel}"),
        };
        out.push(Explained {
            at: rule.span.to_string(),
            rule: rule.to_string(),
            enforcement,
            fast_path,
            warnings,
        });
    }
    for rule in policy.net_rules() {
        let (enforcement, warnings) = match &rule.target {
            NetTarget::Ip {
                protocol,
                addr,
                port,
            } => (
                ip_enforcement(rule.direction, *protocol),
                ip_warnings(addr, port),
            ),
            NetTarget::Unix(pattern) => {
                let mut w = Vec::new();
                let daemons: Vec<&str> = DAEMON_SOCKETS
                    .iter()
                    .copied()
                    .filter(|s| pattern.matches(s))
                    .collect();
                if !daemons.is_empty() {
                    w.push(format!(
                        "reaches system daemons' sockets ({}): the program talks to them with \
                         your rights (Docker's is as good as root)",
                        daemons.join(", ")
                    ));
                }
                (
                    "the agent resolves the socket's path like any path and connects or binds \
                     it itself"
                        .to_string(),
                    w,
                )
            }
        };
        out.push(Explained {
            at: rule.span.to_string(),
            rule: rule.to_string(),
            enforcement,
            fast_path: None,
            warnings,
        });
    }
    out
}

fn landlock_words(access: Option<Access>) -> &'static str {
    match access {
        Some(Access::Read) => "reading files and listing directories",
        Some(Access::Write) => "writing, creating and truncating",
        Some(Access::Unlink) => "removing",
        Some(Access::Exec) => "executing",
        None => "nothing",
    }
}

fn ip_enforcement(dir: Direction, proto: Protocol) -> String {
    match (dir, proto) {
        (Direction::Outgoing, _) => format!(
            "the agent makes the {proto} socket in warden's namespace and checks every connect \
             and send address on its own copy"
        ),
        (Direction::Incoming, Protocol::Tcp) => {
            "the agent checks the port on bind, and performs accept, closing connections from \
             other peers"
                .into()
        }
        (Direction::Incoming, Protocol::Udp) => {
            "the agent checks the port on bind; a locked socket filter drops datagrams from \
             other peers in the kernel"
                .into()
        }
    }
}

fn ip_warnings(addr: &NetAddr, port: &PortMatch) -> Vec<String> {
    let any_addr = matches!(addr, NetAddr::Net { prefix_len: 0, .. });
    let any_port = port.mask == 0;
    match (any_addr, any_port) {
        (true, true) => vec!["any address and any port: the whole network".into()],
        (true, false) => vec![format!("any address on port {port}")],
        _ => Vec::new(),
    }
}

/// Whether some path could match both patterns.
fn overlaps(a: &warden_policy::PathPattern, b: &warden_policy::PathPattern) -> bool {
    let (la, lb) = (a.literal(), b.literal());
    match (a.is_prefix(), b.is_prefix()) {
        (true, true) => la.starts_with(lb) || lb.starts_with(la),
        (true, false) => lb.starts_with(la),
        (false, true) => la.starts_with(lb),
        (false, false) => la == lb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explained(text: &str) -> Vec<Explained> {
        let policy = Policy::parse("p", text).unwrap();
        explain(&policy, &KernelPlan::default())
    }

    #[test]
    fn path_rules_say_who_enforces_them() {
        let e = explained(
            "path-allow read /usr/*\npath-allow exec /usr/bin/*\npath-allow read /proc/self/*\n\
             path-allow read /etc/ho*\npath-deny /usr/secret\n",
        );
        assert_eq!(e.len(), 5);
        assert_eq!(e[0].at, "p:1:17");
        assert!(e[0].enforcement.contains("beneath /usr"), "{e:?}");
        assert!(e[1].enforcement.contains("execute right"), "{e:?}");
        assert!(e[2].enforcement.contains("agent alone"), "{e:?}");
        assert!(e[3].enforcement.contains("entries that exist now"), "{e:?}");
        assert!(e[4].enforcement.contains("denies every access"), "{e:?}");
        assert!(e.iter().all(|x| x.warnings.is_empty()), "{e:?}");
    }

    #[test]
    fn warns_about_rules_that_allow_more_than_they_seem() {
        let e = explained(
            "path-allow read /*\npath-allow write /srv/app/*\npath-allow exec /srv/app/bin/tool\n\
             net-allow outgoing unix-domain /run/*\nnet-allow outgoing tcp 0/0 0/0\n\
             net-allow incoming tcp 0/0 8080\nnet-allow outgoing tcp 10.0.0.1 443\n",
        );
        assert!(e[0].warnings[0].contains("whole file system"), "{e:?}");
        assert!(e[1].warnings[0].contains("may also execute"), "{e:?}");
        assert!(e[1].warnings[0].contains("/srv/app/bin/tool"), "{e:?}");
        assert!(e[2].warnings.is_empty(), "{e:?}");
        assert!(e[3].warnings[0].contains("/run/docker.sock"), "{e:?}");
        assert!(e[4].warnings[0].contains("whole network"), "{e:?}");
        assert!(
            e[5].warnings[0].contains("any address on port 8080"),
            "{e:?}"
        );
        assert!(e[6].warnings.is_empty(), "{e:?}");
        assert!(e[5].enforcement.contains("performs accept"), "{e:?}");
    }

    #[test]
    fn the_default_policy_explains_cleanly() {
        let e = explain(&Policy::default_policy(), &KernelPlan::default());
        assert!(!e.is_empty());
        // The default policy allows no write where it allows exec, and no network.
        assert!(
            e.iter().all(|x| x.warnings.is_empty()),
            "{:#?}",
            e.iter()
                .filter(|x| !x.warnings.is_empty())
                .collect::<Vec<_>>()
        );
    }
}
