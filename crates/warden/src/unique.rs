//! Unique names for what warden makes (scratch directories, cgroups, sandbox ids).

/// A random number, for unique names.
pub fn rand32() -> u32 {
    let mut b = [0u8; 4];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    u32::from_ne_bytes(b)
}
