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
    let problems = map_problems(&merged);
    if !problems.is_empty() {
        for p in problems {
            println!("{p}");
        }
        return 1;
    }
    if args.explain {
        explain(&merged);
        return 0;
    }
    print!("{}", merged.to_normalized_string());
    0
}

/// The default policy with `policy` added, as `warden run` has it in a view: without the
/// default's private `/tmp` when `policy` names `/tmp` (run/plan.rs, `private_tmp`).
fn with_default(policy: &Policy) -> Policy {
    let mut all = Policy::default_policy();
    all.merge(policy.clone());
    if all.names_tmp().is_some() {
        all.without_private_tmp()
    } else {
        all
    }
}

/// What the host lacks for the policy's maps: each map's host path, and the mount point of a
/// map that lands in a tree of the host's (planned with the default policy, as `warden run`
/// plans it).
fn map_problems(policy: &Policy) -> Vec<String> {
    if policy.maps().is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> =
        warden_policy::map::host_problems(policy.maps(), &warden::confine::view::host_stat)
            .into_iter()
            .map(|(span, text)| format!("{span}: {text}"))
            .collect();
    if out.is_empty() {
        let planned = with_default(policy);
        let scratch = std::env::temp_dir().join("warden-check");
        let planned = planned.expand_scratch(&scratch.to_string_lossy());
        let plan = warden_policy::view::view_plan(&planned, &warden::confine::view::HostFs);
        out.extend(plan.errors);
    }
    out
}

/// `warden diff ID`.
#[derive(Args)]
pub struct DiffArgs {
    /// The run's copy directory, as `warden run --keep` printed it (a name in $TMPDIR, or a
    /// path).
    id: String,
}

pub fn diff(args: DiffArgs) -> i32 {
    let dir = match warden::copies::find(&args.id) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("warden: {e}");
            return warden::run::EXIT_WARDEN;
        }
    };
    match warden::copies::diff(&dir) {
        Ok(changes) => {
            print!("{}", warden::copies::render(&changes));
            0
        }
        Err(e) => {
            eprintln!("warden: cannot read the copies in {}: {e}", dir.display());
            warden::run::EXIT_WARDEN
        }
    }
}

/// The maps, for `--explain`: what appears where, and that the rules name the sandbox's paths.
fn explain_maps(policy: &Policy) {
    use warden_policy::map::{at_or_beneath, MapMode, MapSource};
    if policy.maps().is_empty() {
        return;
    }
    println!(
        "path-map: every path rule names the sandbox's paths (what the program sees); a map \
         says what appears there and grants nothing (the sandbox gets its own view, and the \
         agent decides opens by the sandbox's paths)"
    );
    for m in policy.maps() {
        let what = match (&m.source, m.mode) {
            (MapSource::Tmpfs, _) => "an empty tmpfs of the sandbox's own".to_string(),
            (MapSource::Host(h), MapMode::ReadOnly) => {
                format!("the host's {h}, read-only (writes: EROFS, whatever the rules)")
            }
            (MapSource::Host(h), MapMode::ReadWrite) => {
                format!("the host's {h}; writes the rules allow reach the host")
            }
            (MapSource::Host(h), MapMode::Copy) => format!(
                "a private copy of the host's {h}: writes land in the run's overlay and never \
                 reach the host (`warden run --keep`, then `warden diff`)"
            ),
        };
        println!("  {}  {m}: {} shows {what}", m.span, m.sandbox);
        let ruled = policy.path_rules().iter().any(|r| {
            r.access.is_some()
                && (at_or_beneath(r.pattern.literal(), &m.sandbox)
                    || (r.pattern.is_prefix()
                        && r.pattern.literal().ends_with('/')
                        && at_or_beneath(&m.sandbox, r.pattern.literal())))
        });
        if !ruled {
            println!(
                "    WARNING: no path-allow rule names {} or anything in it: the program can \
                 reach nothing through this map",
                m.sandbox
            );
        }
        if let (MapSource::Host(h), MapMode::ReadOnly | MapMode::ReadWrite) = (&m.source, m.mode) {
            let visible = policy
                .path_rules()
                .iter()
                .any(|r| r.access.is_some() && at_or_beneath(r.pattern.literal(), h));
            if visible && h != &m.sandbox {
                println!(
                    "    WARNING: the host's {h} is also in the view at its own path: Landlock's \
                     rights belong to objects, so there the kernel's backstop allows what either \
                     path's rules allow (the agent still decides each by its path)"
                );
            }
        }
    }
}

fn explain(policy: &Policy) {
    explain_maps(policy);
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
    // The default run is in the sandbox's own view, where more can be said exactly than on the
    // host's tree; say both, the default first (`warden run` decides the same way, run/plan.rs).
    let host_maps = policy
        .maps()
        .iter()
        .any(|m| m.source != warden_policy::map::MapSource::Tmpfs);
    let merged = with_default(policy);
    let in_view = warden_policy::kernel::kernel_plan_in_view(&merged, &find);
    let alone = warden_policy::kernel::kernel_plan_in_view(policy, &find).exact();
    if host_maps {
        println!(
            "opens in the sandbox's own view (the default): decided by the agent, since the \
             policy maps the host's paths (path-map)"
        );
    } else if in_view.exact() {
        println!(
            "opens in the sandbox's own view (the default): straight to the kernel, the view and \
             Landlock holding every path rule exactly{} (-v and --log keep them with the agent)",
            if alone {
                ""
            } else {
                " (with --default-policy=no the agent decides them: these rules alone cannot be \
                 said exactly)"
            }
        );
    } else {
        println!(
            "opens in the sandbox's own view (the default): decided by the agent: {} rule(s), \
             with the default policy's, cannot be said exactly by the view and Landlock:",
            in_view.blockers().count()
        );
        for (id, why) in in_view.blockers() {
            let rule = merged.rule(id);
            println!("  {}: {rule}: {why}", rule.span);
        }
    }
    let plan = warden_policy::kernel::kernel_plan(policy, &find);
    print!("on the host's tree (--view off), ");
    if plan.exact() {
        // Without a view the default's private /tmp is not made (run/plan.rs, `private_tmp`).
        let on_host = with_default(policy).without_private_tmp();
        let default_too = warden_policy::kernel::kernel_plan(&on_host, &find).exact();
        println!(
            "opens: the agent's, or straight to the kernel with --fast-path=auto or always{}: \
             Landlock can enforce every path rule exactly, as the files are now (the fast path)",
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
             exactly (\"keeps opens delegated\"; --fast-path=always refuses to start)",
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
