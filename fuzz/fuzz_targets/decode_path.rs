//! Paths and xattr names as copied from a client: components are never empty, `.` or hold a
//! slash, and a name the agent accepts is short and NUL-free.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warden::agent::decode;

fuzz_target!(|data: &[u8]| {
    for c in decode::components(data) {
        assert!(!c.is_empty() && c != b"." && !c.contains(&b'/'));
    }
    if let Ok(name) = decode::xattr_name(data.to_vec()) {
        assert!(!name.as_bytes().is_empty() && name.as_bytes().len() <= 255);
    }
    let _ = decode::is_user_xattr(data);
});
