//! The SkyDNS record format CoreDNS's etcd plugin serves and external-dns writes: one JSON object per etcd key,
//! the key being the record's name with its labels reversed under a prefix, plus one extra label (a random id)
//! so that several targets of one name each get a key of their own.

use extdns_endpoint::RecordType;
use serde::{Deserialize, Serialize};

/// One etcd value. Field order and names are external-dns's (Go's encoding of its struct), so the bytes we
/// write are the bytes it writes; zero values are left out as Go's `omitempty` does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The address (A/AAAA) or hostname (CNAME, SRV/MX target).
    pub host: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// SRV port.
    pub port: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// SRV priority, or MX preference when `mail` is set.
    pub priority: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// SRV weight.
    pub weight: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// TXT data.
    pub text: String,
    /// An MX record: `priority` is the preference.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mail: bool,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    /// TTL in seconds; 0 leaves CoreDNS's default.
    pub ttl: u32,
    /// How many leading labels of the key are not part of the record's name (the random id).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub targetstrip: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// SkyDNS group, from the `coredns/group` property; CoreDNS uses it to keep sets of values under one name apart.
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The owner id with `--coredns-strictly-owned`, so instances sharing a prefix leave each other's keys.
    pub ownedby: String,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
fn is_false(v: &bool) -> bool {
    !*v
}

impl Service {
    /// Nothing left to serve: the key can go.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty() && self.text.is_empty()
    }

    /// The record type the host field is served as: what CoreDNS answers for it.
    pub fn host_type(&self) -> Option<RecordType> {
        if self.host.is_empty() {
            None
        } else if self.mail {
            Some(RecordType::Mx)
        } else {
            Some(extdns_endpoint::suitable_type(&self.host))
        }
    }

    /// The host as an endpoint target (`<preference> <host>` for MX, as external-dns spells MX targets).
    pub fn host_target(&self) -> String {
        if self.mail {
            format!("{} {}", self.priority, self.host)
        } else {
            self.host.clone()
        }
    }
}

/// The etcd key of `name` under `prefix` with `id` as its extra first label: `/skydns/org/example/web/<id>`.
/// The prefix is used as given, as external-dns does (so `/skydns/` is the usual spelling).
pub fn key_for(prefix: &str, name: &str, id: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + name.len() + id.len() + 1);
    key.push_str(prefix);
    for (i, label) in name.trim_end_matches('.').rsplit('.').enumerate() {
        if i > 0 {
            key.push('/');
        }
        key.push_str(label);
    }
    key.push('/');
    key.push_str(id);
    key
}

/// The record name a key holds once `targetstrip` leading labels are dropped; `None` when the key is not
/// under the prefix or strips more labels than it has.
pub fn name_of(prefix: &str, key: &str, targetstrip: i64) -> Option<String> {
    let rest = key.strip_prefix(prefix)?;
    let labels: Vec<&str> = rest.split('/').collect();
    let strip = usize::try_from(targetstrip).ok()?;
    if strip >= labels.len() {
        return None;
    }
    let name: Vec<&str> = labels[..labels.len() - strip].iter().rev().copied().collect();
    let name = name.join(".");
    (!name.is_empty()).then_some(name)
}

/// A fresh id label: eight hex digits, as external-dns makes them.
pub fn random_id() -> String {
    let n = getrandom::u32().unwrap_or_else(|_| {
        // The OS refused randomness; a clock-derived id still keeps keys of one run apart.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default()
    });
    format!("{:08x}", n & 0x7fff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_reverse_the_labels_under_the_prefix() {
        assert_eq!(
            key_for("/skydns/", "web.example.org", "1a2b3c4d"),
            "/skydns/org/example/web/1a2b3c4d"
        );
        assert_eq!(
            key_for("/skydns/", "web.example.org.", "x"),
            "/skydns/org/example/web/x"
        );
        assert_eq!(key_for("/dns/", "org", "x"), "/dns/org/x");
    }

    #[test]
    fn names_come_back_from_keys() {
        assert_eq!(
            name_of("/skydns/", "/skydns/org/example/web/1a2b3c4d", 1).as_deref(),
            Some("web.example.org")
        );
        // No targetstrip: the last label is part of the name (how CoreDNS serves a key written by hand).
        assert_eq!(
            name_of("/skydns/", "/skydns/org/example/web/x1", 0).as_deref(),
            Some("x1.web.example.org")
        );
        assert_eq!(name_of("/skydns/", "/skydns/org/x", 2), None);
        assert_eq!(name_of("/skydns/", "/other/org/x", 1), None);
        assert_eq!(name_of("/skydns/", "/skydns/org/x", -1), None);
    }

    #[test]
    fn values_are_written_as_external_dns_writes_them() {
        let s = Service {
            host: "192.0.2.10".into(),
            ttl: 300,
            targetstrip: 1,
            ..Service::default()
        };
        assert_eq!(
            serde_json::to_string(&s).ok().as_deref(),
            Some(r#"{"host":"192.0.2.10","ttl":300,"targetstrip":1}"#)
        );
        let t = Service {
            text: "\"heritage=external-dns\"".into(),
            targetstrip: 1,
            ..Service::default()
        };
        assert_eq!(
            serde_json::to_string(&t).ok().as_deref(),
            Some(r#"{"text":"\"heritage=external-dns\"","targetstrip":1}"#)
        );
    }

    #[test]
    fn host_types_follow_what_coredns_serves() {
        let mut s = Service {
            host: "2001:db8::1".into(),
            ..Service::default()
        };
        assert_eq!(s.host_type(), Some(RecordType::Aaaa));
        s.host = "lb.example.net".into();
        assert_eq!(s.host_type(), Some(RecordType::Cname));
        s.mail = true;
        s.priority = 10;
        assert_eq!(s.host_type(), Some(RecordType::Mx));
        assert_eq!(s.host_target(), "10 lb.example.net");
        assert_eq!(Service::default().host_type(), None);
    }

    #[test]
    fn random_ids_are_eight_hex_digits() {
        let id = random_id();
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
