//! `warden ps` and `warden inspect`: the running sandboxes, and what one of them holds.
//!
//! Everything a sandbox can choose (its command line, its processes' names, working
//! directories and file names) is printed through [`escape`] in the text forms: a name is
//! data, never terminal control. The JSON forms carry it as JSON strings.

use clap::Args;
use warden::registry::{self, Entry};
use warden_policy::escape::escape;

#[derive(Args)]
pub struct PsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct InspectArgs {
    /// A sandbox id (as `warden ps` shows), warden's pid, or the pid of a process in it.
    target: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The running sandboxes the caller may see; says on stderr which of the caller's own registry
/// directories were not believed (somebody else's, a link, or open to others), and why.
fn running(cmd: &str) -> Vec<Entry> {
    let listing = registry::list(&registry::readable_dirs());
    // A few, whatever another user made: anyone may make a `warden-run-UID.*` in /tmp.
    const SHOWN: usize = 3;
    for (path, why) in listing.ignored.iter().take(SHOWN) {
        eprintln!(
            "warden {cmd}: ignored {}: {why}{}",
            escape(path.as_os_str().as_encoded_bytes()),
            why.remedy()
        );
    }
    if let Some(more) = listing.ignored.len().checked_sub(SHOWN).filter(|&n| n > 0) {
        eprintln!("warden {cmd}: ignored {more} more directories like these");
    }
    listing.entries
}

pub fn ps(args: PsArgs) -> i32 {
    let entries = running("ps");
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).unwrap_or_default()
        );
        return 0;
    }
    println!(
        "{:<20} {:>8} {:>6} {:>8} {:>9} {:>7}  {:<8} {:<30} COMMAND",
        "ID", "PID", "UID", "UPTIME", "DELEGATED", "DENIED", "NETWORK", "POLICY"
    );
    let now = now();
    let marked = entries.iter().any(|e| !e.degraded.is_empty());
    for e in entries {
        // A degraded run is marked after its id (`warden inspect ID` says how).
        let id = if e.degraded.is_empty() {
            escape(&e.id).into_owned()
        } else {
            format!("{}*", escape(&e.id))
        };
        println!(
            "{:<20} {:>8} {:>6} {:>7.0}s {:>9} {:>7}  {:<8} {:<30} {}",
            id,
            e.warden_pid,
            e.uid,
            (now - e.started).max(0.0),
            e.delegated,
            e.denied,
            escape(&e.network),
            escape(&e.policies.join(",")),
            escape(&e.command.join(" "))
        );
    }
    if marked {
        println!(
            "* runs in a weaker mode where the host lacks a piece: `warden inspect ID` says which"
        );
    }
    0
}

pub fn inspect(args: InspectArgs) -> i32 {
    let entries = running("inspect");
    let Some(entry) = find(&entries, &args.target) else {
        eprintln!(
            "warden inspect: no running sandbox of yours is {} (see `warden ps`; only root sees \
             other users' sandboxes)",
            escape(&args.target)
        );
        return 1;
    };
    let procs = match registry::processes(entry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "warden inspect: cannot look into sandbox {} (uid {}): {e}",
                escape(&entry.id),
                entry.uid
            );
            return 1;
        }
    };
    if args.json {
        let doc = serde_json::json!({ "sandbox": entry, "processes": procs });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return 0;
    }
    println!(
        "sandbox {}: {} (warden pid {}, uid {}), up {:.0} s",
        escape(&entry.id),
        escape(&entry.command.join(" ")),
        entry.warden_pid,
        entry.uid,
        (now() - entry.started).max(0.0)
    );
    let mode = match entry.mode.as_str() {
        "delegated" => "all decided by the agent".to_string(),
        "kernel" => "opens decided by the kernel (Landlock), the rest by the agent".to_string(),
        "view" => "opens and lookups decided by the kernel in the sandbox's view, execs by \
                   the agent"
            .to_string(),
        "view+exec" => {
            "opens, lookups and execs decided by the kernel in the sandbox's view".to_string()
        }
        other => escape(other).into_owned(),
    };
    println!(
        "  file calls: {mode}; network: {}; policy: {}",
        escape(&entry.network),
        escape(&entry.policies.join(", "))
    );
    if !entry.degraded.is_empty() {
        let degraded: Vec<_> = entry.degraded.iter().map(|d| escape(d)).collect();
        println!("  degraded: {}", degraded.join("; "));
    }
    println!(
        "  {} delegated calls, {} denied",
        entry.delegated, entry.denied
    );
    if let Some(c) = &entry.capsicum {
        let how = match c.entry.as_str() {
            "warden" => "every process (--capability-mode)",
            _ => "processes that entered it (--capsicum)",
        };
        println!("  capability mode: {how}");
    }
    for p in procs {
        println!();
        let mode = match p.capability_mode {
            Some(true) => ", in capability mode",
            Some(false) => ", not in capability mode",
            None => "",
        };
        println!(
            "  pid {} ({}) cwd {}{mode}",
            p.pid,
            escape(&p.comm),
            escape(&p.cwd_bytes)
        );
        let rights = p.capability_mode.is_some();
        println!(
            "    {:>4} {:<6} {:<3} {:<22} {:<40} RULE{}",
            "FD",
            "TYPE",
            "MODE",
            "DEV:INODE",
            "OBJECT",
            if rights { "  RIGHTS" } else { "" }
        );
        for d in p.fds {
            println!(
                "    {:>4} {:<6} {:<4} {:<22} {:<40} {}{}",
                d.fd,
                escape(&d.kind),
                escape(&d.mode),
                format!("{}:{}", d.dev, d.ino),
                escape(&d.target_bytes),
                escape(d.rule.as_deref().unwrap_or("-")),
                d.rights.map(|r| format!("  {r}")).unwrap_or_default()
            );
        }
    }
    0
}

/// The entry `target` names: an id, warden's pid, or a pid inside the sandbox.
fn find<'a>(entries: &'a [Entry], target: &str) -> Option<&'a Entry> {
    if let Some(e) = entries.iter().find(|e| e.id == target) {
        return Some(e);
    }
    let pid: u32 = target.parse().ok()?;
    if let Some(e) = entries.iter().find(|e| e.warden_pid == pid) {
        return Some(e);
    }
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    entries.iter().find(|e| {
        std::fs::read_link(format!("/proc/{}/ns/pid", e.init_pid))
            .ok()
            .as_ref()
            == Some(&ns)
    })
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
