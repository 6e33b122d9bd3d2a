//! Resource limits: the `limit-*` keywords of a policy and the matching `warden run` flags.
//!
//! ```text
//! limit-time        2        # CPU seconds (user+sys) of the whole sandbox
//! limit-wall-time   5        # wall-clock seconds
//! limit-extra-time  0.5      # grace before the kill; a run over the limit is still "TO"
//! limit-mem         256M     # memory of the whole sandbox
//! limit-processes   16       # processes and threads of the sandbox
//! limit-fsize       16M      # largest file the program may write
//! limit-stack       64M      # stack size
//! limit-open-files  64       # descriptors per process
//! limit-output      1M       # bytes on stdout and stderr together
//! limit-sockets     256      # sockets in the host's network held at once (default 4096)
//! limit-disk        512M     # the run's own disk: scratch, tmpfs maps, copies (default 1G)
//! ```
//!
//! Values are plain functions of their text ([`parse_seconds`], [`parse_size`], [`parse_count`]),
//! so the policy parser and the command line accept and reject exactly the same spellings.

use std::fmt;
use std::time::Duration;

/// Which limit a keyword or flag sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// CPU time of the whole sandbox.
    Time,
    /// Wall-clock time.
    WallTime,
    /// Grace after a time limit before the kill.
    ExtraTime,
    /// Memory of the whole sandbox.
    Mem,
    /// Processes and threads.
    Processes,
    /// Largest file written.
    Fsize,
    /// Stack size.
    Stack,
    /// Descriptors per process.
    OpenFiles,
    /// Bytes written to stdout and stderr.
    Output,
    /// Sockets in the host's network the sandbox holds at once.
    Sockets,
    /// The run's own disk (scratch, tmpfs maps, private copies' changes) in bytes.
    Disk,
}

/// What a limit's value is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds, decimals allowed.
    Seconds,
    /// Bytes, with an optional K/M/G suffix.
    Bytes,
    /// A plain count.
    Count,
}

impl LimitKind {
    /// Every limit, in the order normalized policies list them.
    pub const ALL: [LimitKind; 11] = [
        LimitKind::Time,
        LimitKind::WallTime,
        LimitKind::ExtraTime,
        LimitKind::Mem,
        LimitKind::Processes,
        LimitKind::Fsize,
        LimitKind::Stack,
        LimitKind::OpenFiles,
        LimitKind::Output,
        LimitKind::Sockets,
        LimitKind::Disk,
    ];

    /// The policy keyword, such as `limit-mem`.
    pub fn keyword(self) -> &'static str {
        match self {
            LimitKind::Time => "limit-time",
            LimitKind::WallTime => "limit-wall-time",
            LimitKind::ExtraTime => "limit-extra-time",
            LimitKind::Mem => "limit-mem",
            LimitKind::Processes => "limit-processes",
            LimitKind::Fsize => "limit-fsize",
            LimitKind::Stack => "limit-stack",
            LimitKind::OpenFiles => "limit-open-files",
            LimitKind::Output => "limit-output",
            LimitKind::Sockets => "limit-sockets",
            LimitKind::Disk => "limit-disk",
        }
    }

    /// Parses a policy keyword.
    pub fn from_keyword(s: &str) -> Option<LimitKind> {
        LimitKind::ALL.into_iter().find(|k| k.keyword() == s)
    }

    /// The unit of the value.
    pub fn unit(self) -> Unit {
        match self {
            LimitKind::Time | LimitKind::WallTime | LimitKind::ExtraTime => Unit::Seconds,
            LimitKind::Mem
            | LimitKind::Fsize
            | LimitKind::Stack
            | LimitKind::Output
            | LimitKind::Disk => Unit::Bytes,
            LimitKind::Processes | LimitKind::OpenFiles | LimitKind::Sockets => Unit::Count,
        }
    }
}

/// One limit's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitValue {
    /// A duration.
    Time(Duration),
    /// Bytes or a count.
    Amount(u64),
}

/// Parses `text` as a value of `kind`'s unit; the error is a sentence naming the text.
pub fn parse_limit(kind: LimitKind, text: &str) -> Result<LimitValue, String> {
    let value = match kind.unit() {
        Unit::Seconds => parse_seconds(text).map(LimitValue::Time)?,
        Unit::Bytes => parse_size(text).map(LimitValue::Amount)?,
        Unit::Count => parse_count(text).map(LimitValue::Amount)?,
    };
    // Zero bytes of output or of file is a real limit; zero time or zero processes would stop
    // the program before it starts, which is never what was meant.
    let zero =
        matches!(value, LimitValue::Time(d) if d.is_zero()) || value == LimitValue::Amount(0);
    if zero
        && matches!(
            kind,
            LimitKind::Time
                | LimitKind::WallTime
                | LimitKind::Processes
                | LimitKind::OpenFiles
                | LimitKind::Stack
                | LimitKind::Mem
                | LimitKind::Disk
        )
    {
        return Err(format!(
            "`{text}` would stop the program before it starts; give a value above zero"
        ));
    }
    Ok(value)
}

/// Seconds as a decimal number (`2`, `0.5`, `1.25`), at most one day; millisecond precision.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a number of seconds (such as 2 or 0.5)");
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || whole.len() > 6
    {
        return Err(bad());
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let mut millis = 0u64;
    for (i, b) in frac.bytes().enumerate() {
        if i < 3 {
            millis = millis * 10 + u64::from(b - b'0');
        }
    }
    millis *= 10u64.pow(3u32.saturating_sub(frac.len().min(3) as u32));
    let d = Duration::from_secs(secs) + Duration::from_millis(millis);
    if d > Duration::from_secs(86_400) {
        return Err(format!("`{text}` seconds is more than a day"));
    }
    Ok(d)
}

/// Bytes: a count with an optional binary suffix K, M or G (also KB/MB/GB, KiB/MiB/GiB, any
/// case), such as `65536`, `64K`, `256M`, `1G`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a size (a number of bytes, or one with K, M or G)");
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (num, suffix) = text.split_at(digits);
    if num.is_empty() || num.len() > 19 {
        return Err(bad());
    }
    let n: u64 = num.parse().map_err(|_| bad())?;
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift)
        .filter(|&v| v < 1u64 << 50)
        .ok_or_else(|| format!("`{text}` is too large a size"))
}

/// A plain positive count such as `16`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a count (a whole number such as 16)");
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse().map_err(|_| bad())
}

/// Every limit of a run; `None` means "not limited".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// CPU time of the whole sandbox.
    pub time: Option<Duration>,
    /// Wall-clock time.
    pub wall_time: Option<Duration>,
    /// Grace after a time limit before the kill.
    pub extra_time: Option<Duration>,
    /// Memory of the whole sandbox, bytes.
    pub mem: Option<u64>,
    /// Processes and threads of the sandbox.
    pub processes: Option<u64>,
    /// Largest file written, bytes.
    pub fsize: Option<u64>,
    /// Stack size, bytes.
    pub stack: Option<u64>,
    /// Descriptors per process.
    pub open_files: Option<u64>,
    /// Bytes on stdout and stderr together.
    pub output: Option<u64>,
    /// Sockets in the host's network held at once (the agent's default: [`DEFAULT_SOCKETS`]).
    pub sockets: Option<u64>,
    /// The run's own disk, bytes (default [`DEFAULT_DISK`] where the run has a view).
    pub disk: Option<u64>,
}

/// How much the run may keep on its own disk (one tmpfs holding the scratch directory, every
/// `path-map tmpfs` and the private copies' changes) when its policy says nothing
/// (`limit-disk`): room for a build, far from filling the host's memory or disk.
pub const DEFAULT_DISK: u64 = 1 << 30;

/// How many sockets in the host's network a sandbox may hold at once when its policy says
/// nothing (`limit-sockets`): enough for a busy server, far from the 28,000 ephemeral ports a
/// program could otherwise take from the host.
pub const DEFAULT_SOCKETS: u64 = 4096;

impl Limits {
    /// Sets one limit. A value of the wrong unit for `kind` is ignored (parse with
    /// [`parse_limit`], which cannot produce one).
    pub fn set(&mut self, kind: LimitKind, value: LimitValue) {
        match (kind, value) {
            (LimitKind::Time, LimitValue::Time(d)) => self.time = Some(d),
            (LimitKind::WallTime, LimitValue::Time(d)) => self.wall_time = Some(d),
            (LimitKind::ExtraTime, LimitValue::Time(d)) => self.extra_time = Some(d),
            (LimitKind::Mem, LimitValue::Amount(n)) => self.mem = Some(n),
            (LimitKind::Processes, LimitValue::Amount(n)) => self.processes = Some(n),
            (LimitKind::Fsize, LimitValue::Amount(n)) => self.fsize = Some(n),
            (LimitKind::Stack, LimitValue::Amount(n)) => self.stack = Some(n),
            (LimitKind::OpenFiles, LimitValue::Amount(n)) => self.open_files = Some(n),
            (LimitKind::Output, LimitValue::Amount(n)) => self.output = Some(n),
            (LimitKind::Sockets, LimitValue::Amount(n)) => self.sockets = Some(n),
            (LimitKind::Disk, LimitValue::Amount(n)) => self.disk = Some(n),
            _ => {}
        }
    }

    /// One limit's value.
    pub fn get(&self, kind: LimitKind) -> Option<LimitValue> {
        let t = |d: Option<Duration>| d.map(LimitValue::Time);
        let a = |n: Option<u64>| n.map(LimitValue::Amount);
        match kind {
            LimitKind::Time => t(self.time),
            LimitKind::WallTime => t(self.wall_time),
            LimitKind::ExtraTime => t(self.extra_time),
            LimitKind::Mem => a(self.mem),
            LimitKind::Processes => a(self.processes),
            LimitKind::Fsize => a(self.fsize),
            LimitKind::Stack => a(self.stack),
            LimitKind::OpenFiles => a(self.open_files),
            LimitKind::Output => a(self.output),
            LimitKind::Sockets => a(self.sockets),
            LimitKind::Disk => a(self.disk),
        }
    }

    /// Each limit set in `other` replaces the one in `self`.
    pub fn merge(&mut self, other: &Limits) {
        for kind in LimitKind::ALL {
            if let Some(v) = other.get(kind) {
                self.set(kind, v);
            }
        }
    }
}

impl fmt::Display for LimitValue {
    /// In the form the parser reads back: seconds with up to three decimals, bytes with the
    /// largest exact suffix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LimitValue::Time(d) => {
                let ms = d.as_millis();
                if ms % 1000 == 0 {
                    write!(f, "{}", ms / 1000)
                } else {
                    let s = format!("{}.{:03}", ms / 1000, ms % 1000);
                    f.write_str(s.trim_end_matches('0'))
                }
            }
            LimitValue::Amount(n) => {
                for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
                    if n != 0 && n % (1u64 << shift) == 0 {
                        return write!(f, "{}{suffix}", n >> shift);
                    }
                }
                write!(f, "{n}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds(".25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_seconds("1.2345"), Ok(Duration::from_millis(1234)));
        assert_eq!(parse_seconds("3."), Ok(Duration::from_secs(3)));
        for bad in ["", ".", "-1", "1e3", "abc", "1.2.3", "+1", "1 ", "99999999"] {
            assert!(parse_seconds(bad).is_err(), "{bad:?}");
        }
        assert!(parse_seconds("86401")
            .unwrap_err()
            .contains("more than a day"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("3kb"), Ok(3 << 10));
        for bad in ["", "M", "12Q", "-1", "1.5M", "1 M", "1T"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn zero_only_where_it_means_something() {
        assert!(parse_limit(LimitKind::Time, "0").is_err());
        assert!(parse_limit(LimitKind::Processes, "0").is_err());
        assert!(parse_limit(LimitKind::Mem, "0K").is_err());
        assert_eq!(
            parse_limit(LimitKind::Output, "0"),
            Ok(LimitValue::Amount(0))
        );
        assert_eq!(
            parse_limit(LimitKind::Fsize, "0"),
            Ok(LimitValue::Amount(0))
        );
        assert_eq!(
            parse_limit(LimitKind::ExtraTime, "0"),
            Ok(LimitValue::Time(Duration::ZERO))
        );
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("16"), Ok(16));
        for bad in ["", "-1", "1.0", "1K", "9999999999"] {
            assert!(parse_count(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        for (kind, text) in [
            (LimitKind::Time, "2"),
            (LimitKind::Time, "0.5"),
            (LimitKind::Time, "1.25"),
            (LimitKind::Mem, "256M"),
            (LimitKind::Mem, "1G"),
            (LimitKind::Fsize, "1000"),
            (LimitKind::Output, "3K"),
            (LimitKind::Processes, "16"),
        ] {
            let v = parse_limit(kind, text).unwrap();
            assert_eq!(v.to_string(), text);
            assert_eq!(parse_limit(kind, &v.to_string()), Ok(v));
        }
    }

    #[test]
    fn merge_overrides_what_is_set() {
        let mut a = Limits {
            time: Some(Duration::from_secs(1)),
            mem: Some(1 << 20),
            ..Limits::default()
        };
        let b = Limits {
            time: Some(Duration::from_secs(3)),
            output: Some(10),
            ..Limits::default()
        };
        a.merge(&b);
        assert_eq!(a.time, Some(Duration::from_secs(3)));
        assert_eq!(a.mem, Some(1 << 20));
        assert_eq!(a.output, Some(10));
    }
}
