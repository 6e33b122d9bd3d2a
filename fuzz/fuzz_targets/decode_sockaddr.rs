//! A sockaddr as a hostile client lays it out: the agent's decoding never panics, and a unix
//! socket's path is a NUL-free slice of what was given.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warden::agent::decode;

fuzz_target!(|data: &[u8]| {
    let family = decode::family(data);
    if let Ok((_, _)) = decode::endpoint(family, data) {
        assert!(data.len() >= 16);
    }
    for f in [libc::AF_INET, libc::AF_INET6] {
        let _ = decode::endpoint(f, data);
    }
    if let Some(path) = decode::unix_path(data) {
        assert!(!path.is_empty() && !path.contains(&0));
        assert!(path.len() + 2 <= data.len());
    }
});
