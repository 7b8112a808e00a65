//! Ownership kept on the record itself (`--txt-ownership=metadata`): what a provider whose records carry
//! metadata (a Cloudflare record's comment, an Azure record set's metadata) and the registry that writes
//! ownership there agree on, so neither depends on the other.
//!
//! A provider that keeps metadata hands the ownership payload it finds on a record to the registry as the
//! [`OWNERSHIP_PROPERTY`] of the endpoint it reads, and writes that property's value back into its metadata
//! when the endpoint it is given carries it; it says how much room a record has left for the payload
//! through [`Provider::ownership_room`](crate::Provider::ownership_room). The payload's format is the
//! registry's (docs/ownership-metadata.md); all a provider needs of it is [`PAYLOAD_MARK`], how every
//! version of it starts, to find it among a user's own text.

/// The provider-specific property carrying a record's ownership payload between provider and registry.
/// Never set by a source: the registry takes it off what it reads and puts it on what it writes.
pub const OWNERSHIP_PROPERTY: &str = "extdns/ownership";

/// How every version of the ownership payload starts (`extdns:v1;…`): a provider sharing a free-text
/// field with the user (Cloudflare's comment) finds the payload by it. The payload holds no space, so it is
/// one whitespace-separated word of such a field.
pub const PAYLOAD_MARK: &str = "extdns:v";

/// Whether `word` is an ownership payload (of any version).
pub fn is_payload(word: &str) -> bool {
    word.strip_prefix(PAYLOAD_MARK)
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_the_mark_and_a_version_number() {
        assert!(is_payload("extdns:v1;o=a"));
        assert!(is_payload("extdns:v12;x"));
        assert!(!is_payload("extdns:vx;o=a"));
        assert!(!is_payload("my extdns:v1"));
        assert!(!is_payload("heritage=external-dns"));
    }
}
