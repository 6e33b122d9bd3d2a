//! A msghdr's control buffer: every message found lies inside the buffer, after its header.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warden::agent::decode;

fuzz_target!(|data: &[u8]| {
    if let Ok(msgs) = decode::cmsgs(data) {
        let mut last_end = 0;
        for m in msgs {
            assert!(m.data.start >= 16 && m.data.start <= m.data.end && m.data.end <= data.len());
            assert!(m.data.start >= last_end);
            last_end = m.data.end;
        }
    }
});
