//! Signed `/files` URLs (`download_url` / `upload_url` in the SDKs): instead
//! of `X-Access-Token`, the query carries
//! `signature = "v1_" + base64(sha256("{path}:{op}:{user}:{token}[:{expiration}]"))`
//! (standard alphabet, no padding), `op` being `read` for GET and `write`
//! for POST.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;
use http::Method;
use serde::Deserialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Default, Deserialize)]
struct SignedQuery {
    #[serde(default)]
    path: String,
    #[serde(default)]
    username: String,
    signature: Option<String>,
    signature_expiration: Option<u64>,
}

/// The signature for `path`, `op` (`read`/`write`), `user` and `token`.
pub(crate) fn sign(
    path: &str,
    op: &str,
    user: &str,
    token: &str,
    expiration: Option<u64>,
) -> String {
    let raw = match expiration {
        Some(exp) => format!("{path}:{op}:{user}:{token}:{exp}"),
        None => format!("{path}:{op}:{user}:{token}"),
    };
    format!(
        "v1_{}",
        STANDARD_NO_PAD.encode(Sha256::digest(raw.as_bytes()))
    )
}

/// What the signature of a `/files` request says, for one access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signed {
    /// The query carries no signature.
    Absent,
    /// Signed with this token, and not expired.
    Valid,
    /// Signed with this token, but its expiration has passed.
    Expired,
    /// A signature this token did not make (or for another operation).
    Invalid,
}

/// Checks the signature a `/files` request's query carries against
/// `token`: the hash first (so only the token's holder learns that a URL
/// expired), then the expiration.
pub(crate) fn verify(method: &Method, query: Option<&str>, token: &str) -> Signed {
    let Ok(q) = serde_urlencoded::from_str::<SignedQuery>(query.unwrap_or("")) else {
        return Signed::Invalid;
    };
    let Some(signature) = q.signature else {
        return Signed::Absent;
    };
    let op = match *method {
        Method::GET => "read",
        Method::POST => "write",
        _ => return Signed::Invalid,
    };
    let expected = sign(&q.path, op, &q.username, token, q.signature_expiration);
    if !constant_time_eq(expected.as_bytes(), signature.as_bytes()) {
        return Signed::Invalid;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(u64::MAX);
    match q.signature_expiration {
        Some(exp) if now > exp => Signed::Expired,
        _ => Signed::Valid,
    }
}

/// Whether a query carries a signature at all (a signed URL needs no
/// token, and on the shared host no routing header either).
pub(crate) fn is_signed(query: Option<&str>) -> bool {
    serde_urlencoded::from_str::<SignedQuery>(query.unwrap_or(""))
        .is_ok_and(|q| q.signature.is_some())
}

/// Whether two secrets are equal, in time that does not depend on where
/// they differ (a client must not find a token byte by byte by timing).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_documented_example() {
        assert_eq!(
            sign("/home/user/a.txt", "read", "", "tok", None),
            "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY"
        );
    }

    #[test]
    fn checks_operation_and_expiry() {
        let sig = sign("/a", "read", "", "tok", None);
        let q = format!("path=%2Fa&signature={}", urlencode(&sig));
        assert_eq!(verify(&Method::GET, Some(&q), "tok"), Signed::Valid);
        assert_eq!(verify(&Method::POST, Some(&q), "tok"), Signed::Invalid);
        assert_eq!(verify(&Method::GET, Some(&q), "other"), Signed::Invalid);
        assert_eq!(
            verify(&Method::GET, Some("path=%2Fa"), "tok"),
            Signed::Absent
        );
        assert!(is_signed(Some(&q)) && !is_signed(Some("path=%2Fa")));
        let sig = sign("/a", "read", "", "tok", Some(1));
        let q = format!(
            "path=%2Fa&signature={}&signature_expiration=1",
            urlencode(&sig)
        );
        assert_eq!(verify(&Method::GET, Some(&q), "tok"), Signed::Expired);
        // Only the token's holder learns that it expired.
        assert_eq!(verify(&Method::GET, Some(&q), "other"), Signed::Invalid);
    }

    fn urlencode(s: &str) -> String {
        serde_urlencoded::to_string([("x", s)]).unwrap()[2..].to_string()
    }
}
