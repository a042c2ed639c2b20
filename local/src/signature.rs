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

/// Whether a `/files` request without a token carries a valid, unexpired
/// signature for `token`.
pub(crate) fn signed_request_ok(method: &Method, query: Option<&str>, token: &str) -> bool {
    let op = match *method {
        Method::GET => "read",
        Method::POST => "write",
        _ => return false,
    };
    let Ok(q) = serde_urlencoded::from_str::<SignedQuery>(query.unwrap_or("")) else {
        return false;
    };
    let Some(signature) = q.signature else {
        return false;
    };
    if let Some(exp) = q.signature_expiration {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(u64::MAX);
        if now > exp {
            return false;
        }
    }
    let expected = sign(&q.path, op, &q.username, token, q.signature_expiration);
    constant_time_eq(expected.as_bytes(), signature.as_bytes())
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
        assert!(signed_request_ok(&Method::GET, Some(&q), "tok"));
        assert!(!signed_request_ok(&Method::POST, Some(&q), "tok"));
        assert!(!signed_request_ok(&Method::GET, Some(&q), "other"));
        let sig = sign("/a", "read", "", "tok", Some(1));
        let q = format!(
            "path=%2Fa&signature={}&signature_expiration=1",
            urlencode(&sig)
        );
        assert!(!signed_request_ok(&Method::GET, Some(&q), "tok"));
    }

    fn urlencode(s: &str) -> String {
        serde_urlencoded::to_string([("x", s)]).unwrap()[2..].to_string()
    }
}
