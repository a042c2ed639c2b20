//! serde helpers for proto3's JSON mapping: zero values omitted, int64 as
//! strings (numbers accepted), bytes as padded standard base64 (unpadded and
//! URL-safe accepted).

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{de, Deserialize, Deserializer, Serializer};

/// `skip_serializing_if` for proto3 defaults.
pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// int64/uint64 fields: written as strings, read from strings or numbers.
pub(crate) mod int64 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Num(i64),
            Str(String),
        }
        match Either::deserialize(d)? {
            Either::Num(n) => Ok(n),
            Either::Str(s) => s.trim().parse().map_err(de::Error::custom),
        }
    }
}

/// Decodes proto3 JSON bytes: padded standard base64, or the unpadded and
/// URL-safe variants other encoders write.
pub(crate) fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
}

/// Optional bytes fields of a `oneof` (present only when set).
pub(crate) mod opt_bytes {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_str(&STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => decode_bytes(&text)
                .map(Some)
                .ok_or_else(|| de::Error::custom("invalid base64")),
            None => Ok(None),
        }
    }
}
