//! The only source of randomness for DP noise.
//!
//! [`SecureRng`] is ChaCha20 (a CSPRNG, `rand_chacha`) keyed with 256 bits from the operating
//! system, via `getrandom` (in the browser: `crypto.getRandomValues`). Its only public
//! constructor reads the OS. A seeded constructor exists for tests only: in this crate's unit
//! tests, and with the feature `seeded-rng-for-tests`, which only the root package's
//! dev-dependency switches on, for the one test outside the core that needs it (the CLI's
//! `same_release.rs`). Cargo leaves dev-dependency features out of `cargo build` and
//! `cargo install`, so no binary anyone runs has it, and the root package's test
//! `seeded_rng_stays_in_tests` fails if code outside the core's tests and that file names it,
//! or a manifest enables the feature outside a dev-dependency.
//! All mechanisms take `&mut SecureRng`, not a generic RNG, for the same reason.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::DpError;

pub struct SecureRng(ChaCha20Rng);

impl SecureRng {
    /// A generator keyed from the operating system's (or browser's) secure randomness.
    pub fn from_os() -> Result<SecureRng, DpError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| DpError::Rng(e.to_string()))?;
        Ok(SecureRng(ChaCha20Rng::from_seed(key)))
    }

    /// A reproducible generator, for tests only (module docs: not in release builds).
    #[cfg(any(test, feature = "seeded-rng-for-tests"))]
    #[doc(hidden)]
    pub fn seeded_for_tests(seed: u64) -> SecureRng {
        SecureRng(ChaCha20Rng::seed_from_u64(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    pub(crate) fn next_u128(&mut self) -> u128 {
        ((self.0.next_u64() as u128) << 64) | self.0.next_u64() as u128
    }

    /// Fills `bytes` (for identifiers and data-independent seeds, not for noise).
    pub fn fill(&mut self, bytes: &mut [u8]) {
        self.0.fill_bytes(bytes)
    }
}
