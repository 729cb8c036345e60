//! Reproducible draws for the kernels' checks (`int_products::check`, `attention::kernel::check`),
//! which run in the unit tests natively and in the page's model check in the worker: the same
//! cases on every machine, with no generator crate linked into the worker for them.

/// Marsaglia's 32-bit xorshift (shifts 13, 17, 5) from `seed` (not 0): the next word at each call.
pub(crate) fn xorshift32(seed: u32) -> impl FnMut() -> u32 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s
    }
}
