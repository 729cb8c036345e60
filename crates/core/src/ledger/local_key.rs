//! This machine's local secret, and what it keys: the ledger's corpus keys
//! and the overlap sketches.
//!
//! # Why
//! Unkeyed, the ledger key of a corpus (SHA-256 over its sorted document hashes,
//! [`crate::input::corpus::corpus_key`]) lets whoever holds a ledger test a guess of the whole corpus,
//! and with all documents but one known (DP's usual adversary) test, or for low-entropy text
//! recover, the last one. The overlap sketches were keyed, but with a key stored beside them,
//! so anyone holding the ledger (or its export) could test a candidate document against them
//! (`crate::ledger::overlap`). Both are now keyed with a secret that never leaves its store:
//! - the page: a non-extractable WebCrypto HMAC key in this origin's IndexedDB
//!   (`worker::local_key`): script can sign with it but never read it, and no export holds it;
//! - the CLI: 32 random bytes in `<ledger>.key`, created readable by its owner only (0600) and
//!   never written anywhere else (`cli::local_key`).
//!
//! From the secret S two keys are derived, HMAC-SHA-256(S, label) with the labels below, once
//! per process, and kept in memory only ([`LocalKeys`]): `corpus` keys the ledger key,
//! `sketch` the sketch values. A ledger, or its export, then names corpora and holds sketches
//! that nobody without S can test a guess against; S itself cannot be exported.
//!
//! # What it costs
//! Keys differ between machines (and between a browser profile and the CLI): a ledger imported
//! into another browser keeps every run and its ε, and its budget accounts still add up (runs
//! carry their account), but its corpus keys do not match that browser's key for the same
//! corpus, and its sketches compare with nothing there. Ledgers and sketches written before
//! this version are keyed in place, the first time the book is opened with the secret
//! (`LedgerBook::key_with`: every corpus key, the accounts' lists of corpora included), and a
//! sketch stored with its own key (the older format) is still compared with that key. The book
//! records which secret keyed it (a short check tag, [`LocalKeys::check`]), so a ledger opened
//! with another secret is refused (the CLI: its key file is missing or another), and an
//! imported ledger keyed elsewhere is counted against every budget here, since its corpora
//! cannot be recognised (never fewer spends: `LedgerBook::mark_foreign`).

use sha2::{Digest, Sha256};

use crate::base::hex;
use crate::input::corpus::CorpusKeys;
use crate::input::matched::MatchedCorpus;

/// The label HMAC'd with the secret to key the ledger's corpus keys.
pub const CORPUS_LABEL: &[u8] = b"dpkps corpus key v3";
/// The label HMAC'd with the secret to key the overlap sketches.
pub const SKETCH_LABEL: &[u8] = b"dpkps overlap key v2";
/// The label HMAC'd with the secret for the ledger's key check ([`LocalKeys::check`]).
pub const CHECK_LABEL: &[u8] = b"dpkps key check v1";

/// The keys derived from this machine's local secret. In memory only: never written, except
/// `check`, a short tag that tells which secret keyed a ledger.
#[derive(Clone, PartialEq, Eq)]
pub struct LocalKeys {
    pub corpus: [u8; 32],
    pub sketch: [u8; 32],
    /// The first 8 bytes of HMAC(S, [`CHECK_LABEL`]), in hex: stored in the ledger
    /// (`LedgerBook::key_check`) so that a ledger keyed with another secret is recognised, not
    /// silently read as holding no spend for this corpus. 64 bits of a PRF output: it reveals
    /// nothing about S or the corpora.
    pub check: String,
}

impl LocalKeys {
    /// The keys of a secret given as its three HMAC outputs (the page signs with a key it
    /// cannot read: `worker::local_key`).
    pub fn from_macs(corpus: [u8; 32], sketch: [u8; 32], check: [u8; 32]) -> LocalKeys {
        LocalKeys { corpus, sketch, check: hex(&check[..8]) }
    }
}

impl std::fmt::Debug for LocalKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalKeys(…)")
    }
}

impl LocalKeys {
    /// The keys of a secret held as bytes (the CLI's key file).
    pub fn from_secret(secret: &[u8; 32]) -> LocalKeys {
        LocalKeys::from_macs(hmac_sha256(secret, CORPUS_LABEL), hmac_sha256(secret, SKETCH_LABEL), hmac_sha256(secret, CHECK_LABEL))
    }
}

/// HMAC-SHA-256 (RFC 2104) of `msg` under a 32-byte key, on the `hmac` crate.
pub fn hmac_sha256(key: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    // A 32-byte key is accepted by HMAC whatever its value.
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else { unreachable!("HMAC takes keys of any length") };
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// The ledger key of a corpus whose unkeyed key ([`crate::input::corpus::corpus_key`]) is `unkeyed`.
pub fn keyed_fingerprint(local: &LocalKeys, unkeyed: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"dpkps corpus v3\0");
    h.update(local.corpus);
    h.update(unkeyed.as_bytes());
    hex(&h.finalize())
}

impl CorpusKeys {
    /// These keys with the ledger key keyed by `local` (the unkeyed one kept in
    /// [`CorpusKeys::unkeyed`], to find an older ledger) and the sketches keyed by it.
    pub fn keyed(mut self, local: &LocalKeys) -> CorpusKeys {
        if self.sketch_key.is_some() {
            return self;
        }
        let unkeyed = std::mem::take(&mut self.fingerprint);
        self.fingerprint = keyed_fingerprint(local, &unkeyed);
        // A ledger of the oldest versions, keyed with the rest of the book when it was first
        // opened with this secret (`LedgerBook::key_with`), sits under the keyed legacy key.
        if !self.legacy.is_empty() {
            self.legacy = keyed_fingerprint(local, &self.legacy);
        }
        self.unkeyed = unkeyed;
        self.sketch_key = Some(local.sketch);
        self
    }

}

/// Keying a matched corpus (an inherent impl here, beside the keys, so that the matched
/// corpus does not import the ledger).
impl MatchedCorpus {
    /// Keys the ledger key and the overlap sketches with this machine's local secret
    /// (this module): done once a corpus is read, before any ledger sees it.
    pub fn key_with(&mut self, local: &LocalKeys) {
        self.keys = std::mem::take(&mut self.keys).keyed(local);
        self.fingerprint = self.keys.fingerprint.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_pythons() {
        // python3 -c "import hmac,hashlib;print(hmac.new(b'\x0b'*32,b'Hi There',hashlib.sha256).hexdigest())"
        let got = hmac_sha256(&[0x0b; 32], b"Hi There");
        assert_eq!(hex(&got), "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7");
    }

    #[test]
    fn the_ledger_key_is_keyed_and_the_older_ones_are_kept() {
        let hashes: Vec<[u8; 32]> = (0u8..5).map(|i| [i; 32]).collect();
        let plain = CorpusKeys { fingerprint: crate::input::corpus::corpus_key(&hashes), legacy: "old".into(), doc_hashes: hashes, ..CorpusKeys::default() };
        let a = plain.clone().keyed(&LocalKeys::from_secret(&[1; 32]));
        let b = plain.clone().keyed(&LocalKeys::from_secret(&[2; 32]));
        assert_ne!(a.fingerprint, plain.fingerprint);
        assert_ne!(a.fingerprint, b.fingerprint, "another machine's secret gives another key");
        assert_eq!(a.fingerprint, plain.clone().keyed(&LocalKeys::from_secret(&[1; 32])).fingerprint, "the same secret, the same key");
        assert_eq!(a.legacy, keyed_fingerprint(&LocalKeys::from_secret(&[1; 32]), "old"), "the oldest key, keyed like the book");
        assert_eq!(a.unkeyed, plain.fingerprint);
        assert_eq!(a.clone().keyed(&LocalKeys::from_secret(&[2; 32])).fingerprint, a.fingerprint, "keyed once");
        assert_eq!(a.sketch_key, Some(LocalKeys::from_secret(&[1; 32]).sketch));
    }
}
