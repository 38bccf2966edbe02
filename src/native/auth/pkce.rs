//! PKCE (RFC 7636, S256), random state values, and reading an id token's claims.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

/// `n` random bytes from the OS.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    use std::io::Read;
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)) {
        Ok(()) => buf,
        // No /dev/urandom: fastrand's seed is OS-random too; rarely reached.
        Err(_) => (0..n).map(|_| fastrand::u8(..)).collect(),
    }
}

/// A random URL-safe token (state values, verifiers).
pub fn random_token(bytes: usize) -> String {
    URL_SAFE_NO_PAD.encode(random_bytes(bytes))
}

/// A verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Pkce {
        let verifier = random_token(64);
        let challenge = challenge_of(&verifier);
        Pkce {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Pkce::new()
    }
}

/// `BASE64URL(SHA256(verifier))`.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The claims of a JWT (its middle part), unverified: fen reads its own id token for display
/// and for the account id, it does not make trust decisions on it.
pub fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_example_challenge() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new();
        assert!(p.verifier.len() >= 43 && p.verifier.len() <= 128);
        assert_ne!(Pkce::new().verifier, p.verifier);
    }

    #[test]
    fn claims_of_a_jwt() {
        let body = URL_SAFE_NO_PAD.encode(br#"{"email":"a@b.c"}"#);
        let c = jwt_claims(&format!("x.{body}.sig")).unwrap();
        assert_eq!(c["email"], "a@b.c");
        assert!(jwt_claims("garbage").is_none());
    }
}
