//! warden's policy language: text in, decisions out.
//!
//! A policy says which files a sandboxed program may read, write, unlink or
//! execute and which network endpoints it may reach; everything else is
//! denied. The syntax is Ostia's (Garfinkel et al., NDSS 2004, Appendix A),
//! so existing policies read the same, plus a few warden extensions:
//!
//! ```text
//! starting_uid 1000
//! starting_dir $SCRATCH                    # per-run scratch directory
//! path-allow read   /usr /usr/* /etc/ld.so.cache
//! path-allow write  $SCRATCH/*
//! path-allow exec   /usr/bin/*
//! path-deny         /etc/shadow            # wins over any path-allow
//! net-allow outgoing tcp 10.0.0.0/8 443
//! net-allow outgoing tcp ::1 0/0           # IPv6 too
//! net-allow incoming unix-domain $SCRATCH/*
//! limit-time 2                             # CPU seconds of the whole sandbox
//! limit-mem 256M
//! ```
//!
//! # Why a crate of its own
//!
//! The policy is the one input every other part of warden trusts: the agent
//! enforces it, the Landlock backstop is computed from it, and `warden check`
//! explains it. Keeping it a pure library (no file system, no environment,
//! no unsafe code) means it can be unit-tested exhaustively and fuzzed, and
//! that its answers cannot depend on anything but the text and the path
//! asked about. Reading files, finding the scratch directory and resolving
//! paths safely are the callers' jobs.
//!
//! # Shape of the API
//!
//! * [`Policy::parse`] turns text into a [`Policy`] or into *every*
//!   [`Diagnostic`] in the file, each `file:line:col: sentence`.
//! * [`Policy::default_policy`] is the built-in [`DEFAULT_POLICY`];
//!   [`Policy::merge`] adds user policies and flags on top of it.
//! * [`Policy::expand_scratch`] fills in `$SCRATCH` once the run's scratch
//!   directory exists; until then scratch rules match nothing.
//! * [`Policy::check`], [`Policy::rights`], [`Policy::visible`] decide single
//!   paths; [`Policy::may_traverse`], [`Policy::new_entry_rights`] and
//!   [`Policy::subtree_rights`] decide whole directories.
//! * [`NetRule::matches_ip`] and [`NetRule::matches_unix`] decide sockets.
//! * [`Policy::to_normalized_string`] prints the canonical form, and
//!   [`Policy::explain_denial`] tells a user why something was refused.
//!
//! All decision functions take paths that are absolute and normalized (no
//! `.` or `..`, no repeated or trailing `/`); the caller resolves them.
//!
//! # Example
//!
//! ```
//! use warden_policy::{Access, Denial, Policy, Verdict};
//!
//! let mut policy = Policy::default_policy();
//! let user = Policy::parse("app.policy", "path-allow read /srv/data /srv/data/*\n").unwrap();
//! policy.merge(user);
//! let policy = policy.expand_scratch("/tmp/warden-42");
//!
//! assert!(policy.check("/srv/data/report.csv", Access::Read).is_allowed());
//! assert!(policy.check("/tmp/warden-42/out", Access::Write).is_allowed());
//! assert!(matches!(
//!     policy.check("/etc/shadow", Access::Read),
//!     Verdict::Denied(Denial::DeniedBy(_))
//! ));
//! assert_eq!(
//!     policy.explain_denial("/home/me/.ssh/id_rsa", Access::Read),
//!     "no path-allow read rule matches; add: path-allow read /home/me/.ssh/id_rsa"
//! );
//!
//! // Mistakes come back all at once, each with its position.
//! let errors = Policy::parse("bad.policy", "path-allow raed /a\npath-deny etc\n").unwrap_err();
//! assert_eq!(errors.len(), 2);
//! assert_eq!(
//!     errors[0].to_string(),
//!     "bad.policy:1:12: `raed` is not an access; expected exactly one of read, write, \
//!      unlink or exec (did you mean `read`?)"
//! );
//! assert!(errors[1].to_string().starts_with("bad.policy:2:11: `etc` is not an absolute path"));
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod diag;
pub mod escape;
pub mod kernel;
mod limits;
pub mod map;
mod net;
mod parse;
mod pattern;
mod policy;
pub mod view;

pub use diag::{Diagnostic, Span};
pub use limits::{
    parse_count, parse_limit, parse_seconds, parse_size, LimitKind, LimitValue, Limits, Unit,
    DEFAULT_DISK, DEFAULT_SOCKETS,
};
pub use net::{Direction, NetAddr, NetRule, NetTarget, PortMatch, Protocol};
pub use pattern::{PathPattern, UNNAMEABLE};
pub use policy::{
    Access, AccessSet, Denial, IdRange, IpUse, PathRule, Policy, RuleId, Verdict, DEFAULT_POLICY,
    DEFAULT_POLICY_NAME, PRIVATE_TMP, PRIVATE_TMP_NOTE,
};
