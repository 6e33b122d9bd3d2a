//! Descriptors by name (libcapsicum's fdlist): `--fd NAME=PATH:RIGHTS` on the command line, and
//! the environment variable the sandboxed program finds them by.
//!
//! The program receives [`ENV`] = `NAME=NUMBER,NAME=NUMBER`, and asks for a descriptor by name
//! ([`lookup`]) instead of assuming a number: the numbers are warden's choice.

use crate::rights::Rights;

/// The environment variable listing the named descriptors.
pub const ENV: &str = "WARDEN_FDLIST";

/// One `--fd NAME=PATH:RIGHTS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdSpec {
    /// The name the program asks for.
    pub name: String,
    /// The file or directory to open.
    pub path: std::path::PathBuf,
    /// What the descriptor may do.
    pub rights: Rights,
}

/// One `--fd-inherited NAME=N:RIGHTS`: a descriptor warden inherits from the program that
/// started it (a host using [`crate::sandbox::Sandbox::start`]), passed on by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InheritedSpec {
    /// The name the program asks for.
    pub name: String,
    /// The descriptor's number in warden.
    pub fd: i32,
    /// What the descriptor may do.
    pub rights: Rights,
}

impl InheritedSpec {
    /// Parses `NAME=N:RIGHTS`.
    pub fn parse(text: &str) -> Result<InheritedSpec, String> {
        let (name, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: expected NAME=N:RIGHTS"))?;
        check_name(name)?;
        let (fd, rights) = rest.split_once(':').ok_or_else(|| {
            format!("{text:?}: expected NAME=N:RIGHTS (rights such as read,seek)")
        })?;
        let fd =
            fd.parse::<i32>().ok().filter(|n| *n >= 3).ok_or_else(|| {
                format!("{text:?}: {fd:?} is not a descriptor number of 3 or more")
            })?;
        Ok(InheritedSpec {
            name: name.to_owned(),
            fd,
            rights: Rights::parse(rights).map_err(|e| format!("{text:?}: {e}"))?,
        })
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "{name:?}: a descriptor's name is letters, digits, _ and -"
        ));
    }
    Ok(())
}

impl FdSpec {
    /// Parses `NAME=PATH:RIGHTS`. The rights follow the last `:`, so a path may hold colons;
    /// a name is letters, digits, `_` and `-`.
    pub fn parse(text: &str) -> Result<FdSpec, String> {
        let (name, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: expected NAME=PATH:RIGHTS"))?;
        check_name(name)?;
        let (path, rights) = rest.rsplit_once(':').ok_or_else(|| {
            format!("{text:?}: expected NAME=PATH:RIGHTS (rights such as read,seek)")
        })?;
        if path.is_empty() {
            return Err(format!("{text:?}: no path"));
        }
        Ok(FdSpec {
            name: name.to_owned(),
            path: path.into(),
            rights: Rights::parse(rights).map_err(|e| format!("{text:?}: {e}"))?,
        })
    }
}

/// The value of [`ENV`] for descriptors `(name, number)`.
pub fn encode<'a>(fds: impl IntoIterator<Item = (&'a str, i32)>) -> String {
    fds.into_iter()
        .map(|(n, fd)| format!("{n}={fd}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The number of the descriptor named `name` in a value of [`ENV`].
pub fn find(list: &str, name: &str) -> Option<i32> {
    list.split(',')
        .filter_map(|e| e.split_once('='))
        .find(|(n, _)| *n == name)
        .and_then(|(_, fd)| fd.parse().ok())
}

/// The number of this process's descriptor named `name` (libcapsicum's `fdlist_lookup`).
pub fn lookup(name: &str) -> Option<i32> {
    find(&std::env::var(ENV).ok()?, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_colons_in_paths() {
        let s = FdSpec::parse("in=/tmp/a:b.gz:read,seek").unwrap();
        assert_eq!(s.name, "in");
        assert_eq!(s.path, std::path::Path::new("/tmp/a:b.gz"));
        assert_eq!(s.rights.to_string(), "read,seek");
        for bad in [
            "in",
            "=/x:read",
            "in=/x",
            "in=:read",
            "a b=/x:read",
            "in=/x:fly",
        ] {
            assert!(FdSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn inherited_specs_name_a_number() {
        let s = InheritedSpec::parse("host=7:read,write").unwrap();
        assert_eq!((s.name.as_str(), s.fd), ("host", 7));
        assert_eq!(s.rights.to_string(), "read,write");
        for bad in [
            "host=2:read",
            "host=x:read",
            "host=7",
            "h st=7:read",
            "host=7:fly",
        ] {
            assert!(InheritedSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_find_their_numbers() {
        let list = encode([("in", 3), ("out", 4)]);
        assert_eq!(list, "in=3,out=4");
        assert_eq!(find(&list, "out"), Some(4));
        assert_eq!(find(&list, "o"), None);
    }
}
