//! Random names: sandbox ids, access tokens, API keys.

/// Lowercase alphanumeric, like E2B's ids (no `-`: hosts are `{port}-{id}`).
pub(crate) fn random_id(len: usize) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A fresh key of the form the JS SDK accepts: `e2b_<32 hex>`.
pub fn generate_api_key() -> String {
    format!("e2b_{}", random_hex(32))
}

fn random_hex(len: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}
