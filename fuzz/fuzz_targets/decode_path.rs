//! Paths and xattr names as copied from a client: components are never empty, `.` (but after a
//! name at the end) or hold a slash (and the walk's queue of them yields exactly those), and a
//! name the agent accepts is short and NUL-free.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warden::agent::decode;

fuzz_target!(|data: &[u8]| {
    let parts = decode::components(data);
    for (i, c) in parts.iter().enumerate() {
        // `.` only at the end, after a name (`a/.`: the directory itself).
        assert!(!c.is_empty() && (c != b"." || (i > 0 && i + 1 == parts.len())));
        assert!(!c.contains(&b'/'));
    }
    // The walk's compact queue yields the same components.
    let mut pending = decode::Pending::new(data);
    for c in &parts {
        assert_eq!(pending.pop_front().as_deref(), Some(&c[..]));
    }
    assert!(pending.is_empty() && pending.pop_front().is_none());
    if let Ok(name) = decode::xattr_name(data.to_vec()) {
        assert!(!name.as_bytes().is_empty() && name.as_bytes().len() <= 255);
    }
    let _ = decode::is_user_xattr(data);
});
