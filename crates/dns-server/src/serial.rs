//! Serial number arithmetic (RFC 1982), a leaf every module that orders serials or signing rounds uses:
//! the zones, the signer's rounds, NOTIFY.

/// Whether serial `a` is after serial `b` in RFC 1982 arithmetic.
pub(crate) fn after(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < (1 << 31)
}

/// Whether serial `a` is `b` or after it.
pub(crate) fn at_or_after(a: u32, b: u32) -> bool {
    a == b || after(a, b)
}
