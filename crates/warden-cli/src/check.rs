//! `warden check`.

use clap::Args;
use std::path::PathBuf;
use warden_policy::{Policy, DEFAULT_POLICY};

#[derive(Args)]
pub struct CheckArgs {
    /// Print the built-in default policy, as shipped.
    #[arg(long)]
    show_default: bool,
    /// Print the syscall table: what warden does with each system call, and why.
    #[arg(long)]
    syscalls: bool,
    /// For each rule of the files: who enforces it (agent, kernel, both) and how, with warnings
    /// about rules that allow more than they seem to.
    #[arg(long)]
    explain: bool,
    /// Policy files to check.
    files: Vec<PathBuf>,
}

pub fn main(args: CheckArgs) -> i32 {
    if args.show_default {
        print!("{DEFAULT_POLICY}");
        return 0;
    }
    if args.syscalls {
        use warden::syscalls::Network;
        for e in warden::syscalls::TABLE {
            println!(
                "{:<24} {:<28} {}",
                e.name(),
                format!("{:?}", e.class),
                e.note
            );
            // Policies with IP rules (and UDP rules) class a few calls differently.
            let mut shown = vec![e.class];
            for (net, when) in [
                (Network::Host { udp: false }, "with tcp rules"),
                (Network::Host { udp: true }, "with udp rules"),
            ] {
                let class = e.class_in(net);
                if !shown.contains(&class) {
                    shown.push(class);
                    println!(
                        "{:<24} {:<28} {when}: {}",
                        "",
                        format!("{class:?}"),
                        e.note_in(net)
                    );
                }
            }
            // What the agent uses of its own privilege performing the call (as root).
            if let Some(p) = e.agent {
                let caps: Vec<&str> = p.caps.names().collect();
                let caps = if caps.is_empty() {
                    "no capability".to_owned()
                } else {
                    caps.join(", ")
                };
                println!("{:<24} {:<28} {caps}: {}", "", "agent privilege", p.why);
            }
        }
        return 0;
    }
    if args.files.is_empty() {
        eprintln!("warden: check needs policy files (or --show-default, --syscalls)");
        return warden::run::EXIT_WARDEN;
    }
    let mut merged = Policy::default();
    let mut failed = false;
    for file in &args.files {
        let name = file.display().to_string();
        match std::fs::read_to_string(file) {
            Ok(text) => match Policy::parse(&name, &text) {
                Ok(p) => merged.merge(p),
                Err(diags) => {
                    failed = true;
                    for d in diags {
                        println!("{d}");
                    }
                }
            },
            Err(e) => {
                failed = true;
                println!("{name}:1:1: cannot read the file: {e}");
            }
        }
    }
    if failed {
        return 1;
    }
    if args.explain {
        explain(&merged);
        return 0;
    }
    print!("{}", merged.to_normalized_string());
    0
}

fn explain(policy: &Policy) {
    let ip = policy.ip_use();
    if ip.any() {
        println!(
            "network: the sandbox's TCP/UDP sockets are made by the agent in warden's namespace; \
             every address is checked against the net-allow rules below"
        );
    } else {
        println!("network: none beyond the sandbox's private loopback (no net-allow tcp/udp rule)");
    }
    if policy.ptrace_inside.is_some() {
        println!("ptrace-allow inside: debuggers work inside; the PID namespace and Landlock keep everything outside out of reach");
    }
    println!("(`warden run` adds these rules to the default policy unless --default-policy=no)");
    // $SCRATCH is a fresh empty directory at run time.
    let find = |p: &str| match p.strip_prefix("$SCRATCH") {
        Some("") => warden_policy::kernel::Found::Dir(p.to_string()),
        Some(_) => warden_policy::kernel::Found::Missing,
        None => warden::confine::landlock::found(p),
    };
    let plan = warden_policy::kernel::kernel_plan(policy, &find);
    if plan.exact() {
        let mut with_default = Policy::default_policy();
        with_default.merge(policy.clone());
        let default_too = warden_policy::kernel::kernel_plan(&with_default, &find).exact();
        println!(
            "opens: straight to the kernel{}: Landlock enforces every path rule exactly, as the \
             files are now (the fast path)",
            if default_too {
                ""
            } else {
                " with --default-policy=no (the default policy's /proc/self rules and path-deny \
                 inside /etc keep them delegated)"
            }
        );
    } else {
        println!(
            "opens: delegated to the agent: {} rule(s) below cannot be enforced by Landlock \
             exactly (\"keeps opens delegated\")",
            plan.blockers().count()
        );
    }
    let mut warnings = 0;
    for e in warden::explain::explain(policy, &plan) {
        println!();
        println!("{}  {}", e.at, e.rule);
        println!("    {}", e.enforcement);
        if let Some(f) = &e.fast_path {
            println!("    fast path: {f}");
        }
        for w in &e.warnings {
            warnings += 1;
            println!("    WARNING: {w}");
        }
    }
    if warnings > 0 {
        println!();
        println!("{warnings} warning(s)");
    }
}
