//! Who may open a WebSocket: codex's `--ws-auth` modes. A capability token is kept only as its
//! SHA-256 and a presented token is hashed and compared in constant time; a signed bearer token
//! is a JWT signed with HMAC-SHA256 under a shared secret, its `exp`, `nbf`, `iss` and `aud`
//! checked with a clock skew allowance.
//!
//! Invariants: a secret shorter than `MIN_SECRET_BYTES` is refused when the server starts and a
//! presented token shorter than that is refused without being compared; no secret reaches an
//! error message or the access log.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The shortest token or shared secret accepted, in bytes: 256 bits, the strength of the hash.
pub const MIN_SECRET_BYTES: usize = 32;

/// How a WebSocket client proves it may connect (`--ws-auth`).
#[derive(Clone)]
#[non_exhaustive]
pub enum WsAuth {
    /// Anyone who can reach the listener; refused on a non-loopback address.
    None,
    /// `Authorization: Bearer TOKEN` where the token's SHA-256 is this.
    CapabilityToken {
        /// The token's SHA-256.
        sha256: [u8; 32],
    },
    /// `Authorization: Bearer JWT`, an HS256 JWT signed with the shared secret.
    SignedBearer(SignedBearer),
}

/// What a signed bearer token is checked against.
#[derive(Clone)]
pub struct SignedBearer {
    secret: Vec<u8>,
    issuer: Option<String>,
    audience: Option<String>,
    max_clock_skew_s: u64,
}

// Written by hand so that no secret can reach a log through `{:?}`.
impl std::fmt::Debug for WsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::CapabilityToken { .. } => f.write_str("CapabilityToken"),
            Self::SignedBearer(bearer) => f
                .debug_struct("SignedBearer")
                .field("issuer", &bearer.issuer)
                .field("audience", &bearer.audience)
                .field("max_clock_skew_s", &bearer.max_clock_skew_s)
                .finish_non_exhaustive(),
        }
    }
}

impl WsAuth {
    /// `--ws-auth capability-token --ws-token-file PATH`: the file holds the token (surrounding
    /// whitespace, such as its final newline, is not part of it).
    ///
    /// # Errors
    /// When the file cannot be read or the token is shorter than `MIN_SECRET_BYTES`.
    pub fn token_file(path: &Path) -> Result<Self> {
        let token = read_secret(path)?;
        Ok(Self::CapabilityToken { sha256: sha256(&token) })
    }

    /// `--ws-auth capability-token --ws-token-sha256 HEX`: the token's SHA-256, 64 hex digits.
    ///
    /// # Errors
    /// When `hex` is not 64 hex digits.
    pub fn token_sha256(hex: &str) -> Result<Self> {
        let hex = hex.trim();
        let mut sha256 = [0u8; 32];
        let digits: Vec<u8> = hex.bytes().filter_map(hex_value).collect();
        if hex.len() != 64 || digits.len() != 64 {
            return Err(Error::BadSha256);
        }
        for (byte, pair) in sha256.iter_mut().zip(digits.chunks(2)) {
            *byte = (pair[0] << 4) | pair[1];
        }
        Ok(Self::CapabilityToken { sha256 })
    }

    /// `--ws-auth signed-bearer-token --ws-shared-secret-file PATH` with the optional issuer and
    /// audience the tokens must name, and the clock skew allowed on `exp` and `nbf`.
    ///
    /// # Errors
    /// When the file cannot be read or the secret is shorter than `MIN_SECRET_BYTES`.
    pub fn signed_bearer(
        secret_file: &Path,
        issuer: Option<String>,
        audience: Option<String>,
        max_clock_skew_s: u64,
    ) -> Result<Self> {
        let secret = read_secret(secret_file)?;
        Ok(Self::SignedBearer(SignedBearer { secret, issuer, audience, max_clock_skew_s }))
    }

    /// Whether anyone who reaches the listener may connect.
    pub fn is_none(&self) -> bool {
        matches!(self, Self::None)
    }

    /// Checks a handshake's `Authorization` header at `now_s` (Unix seconds): who the client is
    /// (for the access log), or why it is refused.
    pub(crate) fn check(
        &self,
        authorization: Option<&str>,
        now_s: u64,
    ) -> std::result::Result<String, String> {
        let bearer = || {
            let value = authorization.ok_or_else(|| "no Authorization header".to_owned())?;
            match value.trim().split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Ok(token.trim()),
                _ => Err("not a bearer token".to_owned()),
            }
        };
        match self {
            Self::None => Ok("anonymous".to_owned()),
            Self::CapabilityToken { sha256: expected } => {
                let token = bearer()?;
                if token.len() < MIN_SECRET_BYTES {
                    return Err("token too short".to_owned());
                }
                if constant_time_eq(&sha256(token.as_bytes()), expected) {
                    Ok("capability-token".to_owned())
                } else {
                    Err("wrong token".to_owned())
                }
            }
            Self::SignedBearer(config) => {
                let token = bearer()?;
                config.verify(token, now_s).map(|subject| {
                    subject.map_or_else(|| "signed-bearer-token".to_owned(), |s| format!("sub={s}"))
                })
            }
        }
    }
}

impl SignedBearer {
    /// The token's subject when its signature and claims hold at `now_s`.
    fn verify(&self, token: &str, now_s: u64) -> std::result::Result<Option<String>, String> {
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a JWT".to_owned());
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| "not a JWT".to_owned());
        let header: serde_json::Value =
            serde_json::from_slice(&decode(header)?).map_err(|_| "not a JWT".to_owned())?;
        if header.get("alg").and_then(serde_json::Value::as_str) != Some("HS256") {
            return Err("the JWT is not signed with HS256".to_owned());
        }
        let signed = &token[..token.len() - signature.len() - 1];
        if !constant_time_eq(&hmac_sha256(&self.secret, signed.as_bytes()), &decode(signature)?) {
            return Err("bad JWT signature".to_owned());
        }
        let claims: serde_json::Value =
            serde_json::from_slice(&decode(claims)?).map_err(|_| "not a JWT".to_owned())?;
        let skew = self.max_clock_skew_s;
        let exp = claims.get("exp").and_then(serde_json::Value::as_u64);
        match exp {
            None => return Err("the JWT has no exp".to_owned()),
            Some(exp) if exp.saturating_add(skew) < now_s => {
                return Err("the JWT has expired".to_owned());
            }
            Some(_) => {}
        }
        if let Some(nbf) = claims.get("nbf").and_then(serde_json::Value::as_u64)
            && nbf > now_s.saturating_add(skew)
        {
            return Err("the JWT is not valid yet".to_owned());
        }
        if let Some(issuer) = &self.issuer
            && claims.get("iss").and_then(serde_json::Value::as_str) != Some(issuer)
        {
            return Err("the JWT's issuer is not the expected one".to_owned());
        }
        if let Some(audience) = &self.audience {
            let names = |value: &serde_json::Value| match value {
                serde_json::Value::String(name) => name == audience,
                serde_json::Value::Array(names) => names.iter().any(|n| n == audience.as_str()),
                _ => false,
            };
            if !claims.get("aud").is_some_and(names) {
                return Err("the JWT's audience is not the expected one".to_owned());
            }
        }
        Ok(claims.get("sub").and_then(serde_json::Value::as_str).map(str::to_owned))
    }
}

fn read_secret(path: &Path) -> Result<Vec<u8>> {
    let bytes = fs_err::read(path).map_err(|source| Error::ReadSecret { source })?;
    let secret = bytes.trim_ascii().to_vec();
    if secret.len() < MIN_SECRET_BYTES {
        return Err(Error::ShortSecret { path: path.to_owned(), min: MIN_SECRET_BYTES });
    }
    Ok(secret)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha256::digest(bytes));
    out
}

/// HMAC (RFC 2104) over SHA-256: a block-sized key, inner and outer pads.
pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer.finalize());
    out
}

/// Equal contents, in a time that depends on the lengths only.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}
