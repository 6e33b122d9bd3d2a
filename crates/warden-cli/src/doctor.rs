//! `warden doctor`: what this host gives warden, what each run mode enforces here, and how to
//! get the rest. Needs no privilege; `--json` for scripts.

use clap::Args;
use warden::host::{Answer, Probe};
use warden_policy::escape::escape;

#[derive(Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text: the probe's facts (`facts`), the modes (`modes`) and the
    /// advice (`advice`).
    #[arg(long)]
    json: bool,
}

pub fn main(args: DoctorArgs) -> i32 {
    let probe = Probe::run();
    if args.json {
        let out = serde_json::json!({
            "facts": probe,
            "modes": probe.modes(),
            "advice": probe.advice(),
        });
        println!("{out:#}");
        return 0;
    }
    print!("{}", text(&probe));
    0
}

fn line(out: &mut String, name: &str, a: Answer, note: &str) {
    out.push_str(&format!("  {name:<34} {}{note}\n", a.describe()));
}

fn text(p: &Probe) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "warden doctor: Linux {}, as uid {}\n\nNamespaces\n",
        escape(p.kernel.as_bytes()),
        p.uid
    ));
    let n = &p.namespaces;
    line(&mut out, "user namespace", n.user, "");
    let inside = if n.user.yes() { " (inside it)" } else { "" };
    line(&mut out, "mount namespace", n.mount, inside);
    line(&mut out, "PID namespace", n.pid, inside);
    line(&mut out, "network namespace", n.net, inside);
    for (name, v) in [
        ("user.max_user_namespaces", n.max_user_namespaces),
        (
            "kernel.unprivileged_userns_clone",
            n.unprivileged_userns_clone,
        ),
        (
            "kernel.apparmor_restrict_unprivileged_userns",
            n.apparmor_restrict_unprivileged_userns,
        ),
    ] {
        if let Some(v) = v {
            out.push_str(&format!("  {name} = {v}\n"));
        }
    }
    out.push_str("\nLandlock\n");
    match (p.landlock.abi, p.landlock.error) {
        (Some(abi), _) => out.push_str(&format!("  ABI {abi}\n")),
        (None, Some(Answer::No(libc::EOPNOTSUPP))) => {
            out.push_str("  built in, not enabled (EOPNOTSUPP)\n")
        }
        (None, e) => out.push_str(&format!(
            "  none ({})\n",
            e.map(Answer::describe).unwrap_or_default()
        )),
    }
    out.push_str("\nSeccomp\n");
    let s = &p.seccomp;
    line(&mut out, "user notification", s.user_notification, "");
    line(&mut out, "a listener of our own", s.listener, "");
    line(&mut out, "WAIT_KILLABLE_RECV", s.wait_killable_recv, "");
    line(&mut out, "USER_NOTIF_FLAG_CONTINUE", s.continue_flag, "");
    line(&mut out, "ADDFD_FLAG_SEND", s.addfd_send, "");
    out.push_str(&format!(
        "  filters above us                   {}\n",
        match (s.mode, s.filters) {
            (Some(0), _) => "none".to_owned(),
            (Some(m), Some(f)) => format!("{f} (mode {m})"),
            (Some(m), None) => format!("mode {m}"),
            (None, _) => "unknown".to_owned(),
        }
    ));
    out.push_str("\nThe agent's calls (on a child of its own)\n");
    let c = &p.process;
    line(&mut out, "pidfd_open", c.pidfd_open, "");
    line(&mut out, "pidfd_getfd", c.pidfd_getfd, "");
    line(&mut out, "PIDFD_THREAD", c.pidfd_thread, "");
    line(&mut out, "process_vm_readv", c.process_vm_readv, "");
    line(&mut out, "/proc/PID/mem", c.proc_pid_mem, "");
    out.push_str("\nMounts\n");
    let m = &p.mounts;
    line(&mut out, "openat2", m.openat2, "");
    line(&mut out, "fsopen (new mount API)", m.fsopen, "");
    out.push_str(&format!(
        "  overlayfs                          {}\n",
        if m.overlayfs {
            "yes"
        } else {
            "not listed (may load on demand)"
        }
    ));
    line(
        &mut out,
        "a detached tree accepts mounts",
        m.detached_tree_accepts_mounts,
        "",
    );
    out.push_str("\ncgroups\n");
    let g = &p.cgroups;
    out.push_str(&format!(
        "  v2                                 {}\n",
        if g.v2 { "yes" } else { "no" }
    ));
    if !g.v1_controllers.is_empty() {
        out.push_str(&format!(
            "  v1 controllers                     {}\n",
            g.v1_controllers.join(" ")
        ));
    }
    if let Some(own) = &g.own {
        out.push_str(&format!(
            "  warden's group                     {}\n",
            escape(own.as_bytes())
        ));
        out.push_str(&format!(
            "  its controllers                    {}\n",
            g.controllers.join(" ")
        ));
        out.push_str(&format!(
            "  passed to children                 {}\n",
            g.subtree_control.join(" ")
        ));
        line(&mut out, "may make a child group", g.may_create_child, "");
    }
    out.push_str(&format!(
        "  a run's limits use                 {}\n",
        g.warden_uses.as_deref().unwrap_or("rlimits and rusage")
    ));
    out.push_str("\nWhat each mode enforces here\n");
    for mode in p.modes() {
        out.push_str(&format!(
            "  {}: {}\n",
            mode.name,
            if mode.available {
                "available"
            } else {
                "not available"
            }
        ));
        for l in &mode.enforces {
            out.push_str(&format!("    - {l}\n"));
        }
    }
    let advice = p.advice();
    if advice.is_empty() {
        out.push_str("\nNothing is missing.\n");
    } else {
        out.push_str("\nHow to get the rest\n");
        for a in advice {
            out.push_str(&format!("  - {a}\n"));
        }
    }
    out
}
