//! Hosts that refuse the sandbox's namespaces: Docker's and Kubernetes' default seccomp
//! profiles (`unshare`/`clone` with namespace flags refused, `clone3` ENOSYS), Ubuntu 24.04's
//! AppArmor restriction (the user namespace is made, but holds no capability),
//! `user.max_user_namespaces=0` (ENOSPC). There warden runs in its *no-namespace mode*: no new
//! namespace at all, no view, and the rules the namespaces held kept by other routes (docs/guide.md,
//! "Without user namespaces"):
//!
//! - signals (and `F_SETOWN`'s SIGIO): Landlock's signal scope (ABI 6) holds them to the
//!   sandbox's domain in the kernel, at delivery; on a kernel without it, the agent decides
//!   them and every call that names a pid, against the sandbox's own process tree
//!   (`crate::agent::hostpids`);
//! - `ptrace`, `process_vm_*`, `pidfd_getfd`, `kcmp`: refused by the filter, and Landlock
//!   refuses ptrace access (`/proc/PID/mem`, `environ`, ...) across its domain;
//! - other processes' `/proc/PID`: the agent's resolver shows only the caller's own;
//! - priorities, limits, scheduling and process groups of other pids, System V IPC and POSIX
//!   message queues: refused by a stacked filter (`crate::filter::hostns_denials`);
//! - abstract unix sockets: refused by the agent (it performs every `connect` and `bind`) and
//!   by Landlock's abstract-socket scope (ABI 6);
//! - the network: without a net rule, no socket but unix and netlink (the stacked filter); with
//!   net rules, the agent decides as it always does;
//! - as root: the program runs as uid 65534 (or `starting_uid`), with no capability.
//!
//! Whether the host refuses is found by trying ([`probe`]), never guessed from versions; the
//! probe runs only where something says it may fail (a seccomp filter on warden, a sysctl), so
//! an ordinary host pays a few small reads.

use crate::confine::namespaces::SANDBOX_NAMESPACES;
use crate::sys::process::{self, NamespaceRefusal};

/// What a run has to do without: why the host refuses namespaces, in a few words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoNamespaces {
    /// The reason, as the notice and the reports say it.
    pub reason: String,
}

/// Whether the host refuses the sandbox's namespaces, and why (`None`: they can be made, or
/// nothing suggests otherwise and the launch will say). Must run while warden is
/// single-threaded.
pub fn probe() -> Option<NoNamespaces> {
    if !may_refuse() {
        return None;
    }
    let reason = match process::probe_namespaces(SANDBOX_NAMESPACES) {
        Ok(()) => return None,
        Err(NamespaceRefusal::Clone(e)) => match e.raw_os_error() {
            Some(libc::ENOSPC) => {
                "clone(CLONE_NEWUSER): ENOSPC, user.max_user_namespaces reached".to_owned()
            }
            Some(libc::EPERM) => {
                "clone(CLONE_NEWUSER): EPERM, a seccomp profile or security module".to_owned()
            }
            Some(libc::EACCES) => "clone(CLONE_NEWUSER): EACCES, a security module".to_owned(),
            Some(libc::ENOSYS | libc::EINVAL) => {
                format!("clone(CLONE_NEWUSER): no user namespaces in this kernel or profile: {e}")
            }
            // Not a refusal (out of memory, too many processes): the launch says it.
            _ => return None,
        },
        Err(NamespaceRefusal::Capabilities(e)) => {
            format!("a new user namespace holds no capability (AppArmor's or an LSM's restriction): {e}")
        }
    };
    Some(NoNamespaces { reason })
}

/// Whether anything on this host says namespaces may be refused: a seccomp filter on warden
/// itself, `user.max_user_namespaces` 0, and for an unprivileged user the AppArmor and
/// Debian switches. A handful of small reads; only then does [`probe`] try.
fn may_refuse() -> bool {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
    if process::under_seccomp_filter() {
        return true;
    }
    if read("/proc/sys/user/max_user_namespaces").is_ok_and(|v| v == "0") {
        return true;
    }
    if rustix::process::geteuid().is_root() {
        return false;
    }
    read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").is_ok_and(|v| v == "1")
        || read("/proc/sys/kernel/unprivileged_userns_clone").is_ok_and(|v| v == "0")
}

/// The one line warden says on stderr at the start of a run without namespaces.
pub fn notice(no: &NoNamespaces, uid: Option<u32>) -> String {
    let scopes = if crate::confine::landlock::enforces_scopes() {
        "the agent and Landlock's scopes"
    } else {
        "the agent (this kernel's Landlock has no scopes)"
    };
    let user = match uid {
        Some(uid) => format!("; the program runs as uid {uid} with no capability, not as root"),
        None => String::new(),
    };
    format!(
        "warden: no user namespaces here ({}): signals, other processes and /proc are confined \
         by {scopes}, System V IPC and abstract sockets refused; no view, no private \
         network{user}",
        no.reason
    )
}
