//! `WARDEN_TIMINGS=1`: where a run's start-up time goes, phase by phase, printed on stderr when
//! the run ends (issue 13 asks for the breakdown; it stays in the product so anyone can see
//! it on their own machine).
//!
//! A phase ends at a mark: [`mark`] in warden, and for the steps inside the sandbox, the
//! monotonic clock's readings that the program's process sends with its listener (they are
//! taken always, a few vDSO reads; only recording and printing wait for the variable). Every
//! reading is `CLOCK_MONOTONIC`, one clock for warden and the sandbox alike, so the phases
//! add up to the time from warden's `main` to the end of the run.

use std::sync::{Mutex, OnceLock};

static ON: OnceLock<bool> = OnceLock::new();
static MARKS: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());

/// Whether `WARDEN_TIMINGS` is set to something other than `0` or empty.
pub fn enabled() -> bool {
    *ON.get_or_init(|| {
        std::env::var_os("WARDEN_TIMINGS").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// Now, in nanoseconds of `CLOCK_MONOTONIC`.
pub fn now() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// Ends the phase `name` now.
pub fn mark(name: &'static str) {
    if enabled() {
        mark_at(name, now());
    }
}

/// Ends the phase `name` at `at` (a reading of [`now`], taken elsewhere: in the sandbox). A
/// zero reading (not taken) is left out.
pub fn mark_at(name: &'static str, at: u64) {
    if enabled() && at != 0 {
        if let Ok(mut marks) = MARKS.lock() {
            marks.push((name, at));
        }
    }
}

/// Whether a mark is the sandbox's (`init: ...`, `program: ...`) rather than warden's.
fn in_sandbox(name: &str) -> bool {
    name.starts_with("init:") || name.starts_with("program:")
}

/// One phase: its name, microseconds since the previous mark, and since the previous mark on
/// the same side (warden's or the sandbox's: the two work at once for a while, warden adding
/// the Landlock rules while init builds the view).
pub type Phase = (&'static str, u64, u64);

/// The phases in the order of the clock, and the total from the first mark to the last.
pub fn phases(marks: &[(&'static str, u64)]) -> (Vec<Phase>, u64) {
    let mut sorted = marks.to_vec();
    sorted.sort_by_key(|&(_, t)| t);
    let Some(&(_, first)) = sorted.first() else {
        return (Vec::new(), 0);
    };
    let (mut last, mut last_warden, mut last_sandbox) = (first, first, first);
    let mut out = Vec::new();
    for &(name, t) in &sorted[1..] {
        let sandbox = in_sandbox(name);
        let since = if sandbox { last_sandbox } else { last_warden };
        out.push((name, (t - last) / 1000, (t - since) / 1000));
        // The sandbox starts where warden's clone ends.
        if sandbox || name == "clone" {
            last_sandbox = t;
        }
        if !sandbox {
            last_warden = t;
        }
        last = t;
    }
    (out, (last - first) / 1000)
}

/// Prints the phases so far on stderr, one a line, and forgets them.
pub fn print() {
    if !enabled() {
        return;
    }
    let marks = match MARKS.lock() {
        Ok(mut m) => std::mem::take(&mut *m),
        Err(_) => return,
    };
    let (phases, total) = phases(&marks);
    let mut text = String::from(
        "warden: timings (us; each phase ends at its name; since the previous mark, and since \
         the previous on its side, warden's or the sandbox's)\n",
    );
    for (name, us, own) in phases {
        text.push_str(&format!("warden:   {name:<36} {us:>8} {own:>8}\n"));
    }
    text.push_str(&format!("warden:   {:<36} {total:>8}\n", "total"));
    eprint!("{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_ordered_by_the_clock_and_add_up() {
        let marks = [
            ("start", 1_000_000),
            ("c", 9_000_000),
            ("clone", 3_000_000),
            ("init: b", 4_500_000),
            ("d", 5_000_000),
        ];
        let (p, total) = phases(&marks);
        assert_eq!(
            p,
            vec![
                ("clone", 2000, 2000),
                ("init: b", 1500, 1500),
                ("d", 500, 2000),
                ("c", 4000, 4000)
            ]
        );
        assert_eq!(total, 8000);
        assert_eq!(p.iter().map(|&(_, us, _)| us).sum::<u64>(), total);
    }

    #[test]
    fn no_marks_no_phases() {
        assert_eq!(phases(&[]), (Vec::new(), 0));
    }
}
