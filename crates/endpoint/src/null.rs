//! Go encodes a nil slice or map as `null`, so every optional field of external-dns's JSON (endpoints,
//! change sets, domain filters) may arrive as `null` as well as absent; both mean "empty".

use serde::{Deserialize, Deserializer};

/// A field that reads `null` as its default.
pub(crate) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
