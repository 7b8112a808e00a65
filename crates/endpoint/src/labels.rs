use std::collections::BTreeMap;

/// Labels of an endpoint: ownership information the registry persists (`owner`, `resource`, ...).
/// A BTreeMap keeps them sorted, which is the order external-dns serialises them in TXT records.
pub type Labels = BTreeMap<String, String>;

/// Label keys with a meaning in extdns, spelled as external-dns spells them.
pub mod label {
    /// The owner id (`--txt-owner-id`) of the controller that manages the record.
    pub const OWNER: &str = "owner";
    /// The object the record comes from: `service/<namespace>/<name>`, `httproute/<namespace>/<name>`, ...
    pub const RESOURCE: &str = "resource";
    /// On a registry TXT endpoint: the DNS name of the record it owns.
    pub const OWNED_RECORD: &str = "ownedRecord";
    /// The AES-GCM nonce of an encrypted TXT record; never serialised into the TXT value.
    pub const TXT_ENCRYPTION_NONCE: &str = "txt-encryption-nonce";
    /// Used by the AWS Cloud Map registry.
    pub const AWS_SD_DESCRIPTION: &str = "aws-sd-description";
}
