//! openat2's `struct open_how` of any size and content, and the size register itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warden::agent::decode;

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.get(..8) {
        let size = u64::from_ne_bytes(head.try_into().unwrap());
        if let Ok(n) = decode::open_how_size(size) {
            assert!((24..=4096).contains(&n));
        }
    }
    if let Ok(how) = decode::open_how(data) {
        assert!(data.len() >= 24 && data[24..].iter().all(|&b| b == 0));
        let _ = how.flags | how.mode | how.resolve;
    }
});
