use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::RecordType;

/// One target of a record, kept as written and classified once when it is made.
///
/// external-dns keeps targets as strings and parses them again wherever an address matters (dual-stack
/// split, validation, conflict resolution, target-net filter, NAT64, providers). Here the text is parsed
/// once, on construction or deserialisation, and everybody asks the value: [`Target::ip`],
/// [`Target::kind`]. The text is what is compared, sorted, hashed and serialised, so the JSON (webhook,
/// preview) and the order of targets stay byte for byte external-dns's; an IPv6 address written
/// `2001:0db8::1` stays so.
///
/// Editing goes through methods that classify the new text again ([`Target::trim_trailing_dot`]), or by
/// building a new target; there is no `&mut String` to the text.
///
/// Memory: a target is 24 bytes, like the `String` it replaces, plus its text on the heap. An IPv6 target
/// keeps its text and address in one more heap block (32 bytes) so the common IPv4 and hostname targets do
/// not pay 16 bytes each for an address they do not have.
#[derive(Clone)]
pub struct Target(Repr);

#[derive(Clone)]
enum Repr {
    Ipv4(Box<str>, Ipv4Addr),
    Ipv6(Box<Ipv6Target>),
    Hostname(Box<str>),
    Other(Box<str>),
}

#[derive(Clone)]
struct Ipv6Target {
    text: Box<str>,
    addr: Ipv6Addr,
}

/// What a target's text is.
///
/// Addresses follow Go's `netip.ParseAddr`, which external-dns uses: strict dotted IPv4 (no leading zeros,
/// no surrounding space), IPv6 including IPv4-mapped forms and an optional non-empty `%zone` (the zone is
/// not part of the address).
///
/// A hostname is what a CNAME, NS, PTR or MX target can name without escaping: ASCII labels of letters,
/// digits, `-` and `_` (service labels such as `_sip._tcp`), 1 to 63 characters, not starting or ending
/// with `-`; optionally a whole first label `*` (a wildcard); optionally one trailing dot; at most 253
/// characters without that dot; and a last label that is not all digits, so a mistyped address such as
/// `01.2.3.4` or `1.2.3.4.5` is not taken for a name. Anything else is [`TargetKind::Other`]: TXT data,
/// SRV/MX/NAPTR record data, Unicode names, text with spaces.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A dotted-quad IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address (a `%zone` suffix is allowed in the text and left out of the address).
    Ipv6(Ipv6Addr),
    /// A hostname as defined above.
    Hostname,
    /// Anything else: record data, free text, Unicode names.
    Other,
}

impl TargetKind {
    /// Classify a text. Used for [`Target`]s, and for text that is not a target but is asked the same
    /// question (a template's `isIPv4`).
    pub fn of(text: &str) -> TargetKind {
        // The IPv4 parser gives up at the first character that cannot be part of an address. Only text with
        // a ':' can be an IPv6 address (and then cannot be a hostname).
        if let Ok(v4) = text.parse::<Ipv4Addr>() {
            return TargetKind::Ipv4(v4);
        }
        if text.as_bytes().contains(&b':') {
            let addr = match text.split_once('%') {
                Some((_, "")) => return TargetKind::Other,
                Some((addr, _zone)) => addr,
                None => text,
            };
            return match addr.parse::<Ipv6Addr>() {
                Ok(v6) => TargetKind::Ipv6(v6),
                Err(_) => TargetKind::Other,
            };
        }
        if is_hostname(text) {
            TargetKind::Hostname
        } else {
            TargetKind::Other
        }
    }

    /// The address, for the two address kinds.
    #[inline]
    pub fn ip(self) -> Option<IpAddr> {
        match self {
            TargetKind::Ipv4(a) => Some(IpAddr::V4(a)),
            TargetKind::Ipv6(a) => Some(IpAddr::V6(a)),
            TargetKind::Hostname | TargetKind::Other => None,
        }
    }

    /// The record type such a target calls for (external-dns's `suitableType`): A for an IPv4 address,
    /// AAAA for an IPv6 one, CNAME for anything else.
    #[inline]
    pub fn suitable_type(self) -> RecordType {
        match self {
            TargetKind::Ipv4(_) => RecordType::A,
            TargetKind::Ipv6(_) => RecordType::Aaaa,
            TargetKind::Hostname | TargetKind::Other => RecordType::Cname,
        }
    }
}

/// The hostname rule of [`TargetKind`], for text that is not an address.
fn is_hostname(text: &str) -> bool {
    let name = text.strip_suffix('.').unwrap_or(text);
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels = name.strip_prefix("*.").unwrap_or(name);
    let labels_ok = labels.split('.').all(|l| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    });
    labels_ok
        && !labels
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|c| c.is_ascii_digit()))
}

impl Target {
    fn classify(text: Box<str>) -> Target {
        Target(match TargetKind::of(&text) {
            TargetKind::Ipv4(addr) => Repr::Ipv4(text, addr),
            TargetKind::Ipv6(addr) => Repr::Ipv6(Box::new(Ipv6Target { text, addr })),
            TargetKind::Hostname => Repr::Hostname(text),
            TargetKind::Other => Repr::Other(text),
        })
    }

    /// The text exactly as given (trailing dot included unless trimmed by [`Endpoint::new`](crate::Endpoint::new)).
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Ipv4(text, _) | Repr::Hostname(text) | Repr::Other(text) => text,
            Repr::Ipv6(v6) => &v6.text,
        }
    }

    /// The classification, computed once when the target was built.
    #[inline]
    pub fn kind(&self) -> TargetKind {
        match &self.0 {
            Repr::Ipv4(_, a) => TargetKind::Ipv4(*a),
            Repr::Ipv6(v6) => TargetKind::Ipv6(v6.addr),
            Repr::Hostname(_) => TargetKind::Hostname,
            Repr::Other(_) => TargetKind::Other,
        }
    }

    /// The address, when the target is one (without its `%zone`).
    #[inline]
    pub fn ip(&self) -> Option<IpAddr> {
        self.kind().ip()
    }

    /// True for an IPv4 or IPv6 address.
    #[inline]
    pub fn is_ip(&self) -> bool {
        matches!(self.0, Repr::Ipv4(..) | Repr::Ipv6(_))
    }

    /// True for a plain hostname (not for record data such as an MX target).
    #[inline]
    pub fn is_hostname(&self) -> bool {
        matches!(self.0, Repr::Hostname(_))
    }

    /// See [`TargetKind::suitable_type`].
    #[inline]
    pub fn suitable_type(&self) -> RecordType {
        self.kind().suitable_type()
    }

    /// Remove one trailing dot, as external-dns's endpoint constructor does for most record types. The
    /// shorter text is classified again: `1.2.3.4.` is neither address nor name, `1.2.3.4` an address.
    #[inline]
    pub fn trim_trailing_dot(&mut self) {
        // An IPv4 target never ends with a dot: no need to look (this runs for every target of every
        // endpoint built). An IPv6 one can, in its zone.
        if !matches!(self.0, Repr::Ipv4(..)) && self.as_str().ends_with('.') {
            self.pop_and_classify();
        }
    }

    #[cold]
    fn pop_and_classify(&mut self) {
        let mut text = String::from(std::mem::take(self).into_boxed_str());
        text.pop();
        *self = Target::from(text);
    }

    /// Lower-case the ASCII letters (names read back from DNS are lower case). Classification ignores ASCII
    /// case (hex digits of an address, letters of a name), so the kind stays what it was.
    pub fn make_ascii_lowercase(&mut self) {
        match &mut self.0 {
            Repr::Ipv4(text, _) | Repr::Hostname(text) | Repr::Other(text) => text.make_ascii_lowercase(),
            Repr::Ipv6(v6) => v6.text.make_ascii_lowercase(),
        }
        debug_assert_eq!(self.kind(), TargetKind::of(self.as_str()));
    }

    /// The text, giving up the classification.
    pub fn into_boxed_str(self) -> Box<str> {
        match self.0 {
            Repr::Ipv4(text, _) | Repr::Hostname(text) | Repr::Other(text) => text,
            Repr::Ipv6(v6) => v6.text,
        }
    }
}

/// The empty target (classified [`TargetKind::Other`]); what `mem::take` leaves behind.
impl Default for Target {
    fn default() -> Self {
        Target(Repr::Other(Box::default()))
    }
}

impl From<String> for Target {
    fn from(text: String) -> Self {
        Target::classify(text.into_boxed_str())
    }
}

impl From<&str> for Target {
    fn from(text: &str) -> Self {
        Target::classify(text.into())
    }
}

impl From<&String> for Target {
    fn from(text: &String) -> Self {
        Target::classify(text.as_str().into())
    }
}

impl From<Box<str>> for Target {
    fn from(text: Box<str>) -> Self {
        Target::classify(text)
    }
}

impl From<&Target> for Target {
    fn from(t: &Target) -> Self {
        t.clone()
    }
}

/// An address in its canonical spelling, classified without parsing.
impl From<IpAddr> for Target {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => a.into(),
            IpAddr::V6(a) => a.into(),
        }
    }
}

impl From<Ipv4Addr> for Target {
    fn from(addr: Ipv4Addr) -> Self {
        Target(Repr::Ipv4(addr.to_string().into_boxed_str(), addr))
    }
}

impl From<Ipv6Addr> for Target {
    fn from(addr: Ipv6Addr) -> Self {
        let text = addr.to_string().into_boxed_str();
        Target(Repr::Ipv6(Box::new(Ipv6Target { text, addr })))
    }
}

impl From<Target> for String {
    fn from(t: Target) -> Self {
        t.into_boxed_str().into()
    }
}

impl Deref for Target {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Target {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Equality, hashing and order are the text's (the classification follows from it), so a target can be
/// looked up by `&str` and sorts in external-dns's plain string order.
impl Borrow<str> for Target {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Target {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for Target {}

impl Hash for Target {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for Target {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Target {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for Target {
    #[inline]
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Target {
    #[inline]
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Target {
    #[inline]
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Target> for str {
    #[inline]
    fn eq(&self, other: &Target) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Target> for &str {
    #[inline]
    fn eq(&self, other: &Target) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Target> for String {
    #[inline]
    fn eq(&self, other: &Target) -> bool {
        self == other.as_str()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Like the string it is, so test failures and logs read as before.
impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Target::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> TargetKind {
        Target::from(s).kind()
    }

    fn v4(s: &str) -> TargetKind {
        TargetKind::Ipv4(s.parse().unwrap_or(Ipv4Addr::UNSPECIFIED))
    }

    fn v6(s: &str) -> TargetKind {
        TargetKind::Ipv6(s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED))
    }

    #[test]
    fn a_target_is_as_small_as_a_string() {
        assert_eq!(std::mem::size_of::<Target>(), std::mem::size_of::<String>());
    }

    #[test]
    fn addresses_follow_go_address_parsing() {
        for (target, want) in [
            ("1.2.3.4", v4("1.2.3.4")),
            ("2001:db8::1", v6("2001:db8::1")),
            ("::ffff:1.2.3.4", v6("::ffff:1.2.3.4")),
            ("fe80::1%eth0", v6("fe80::1")),
        ] {
            assert_eq!(kind(target), want, "{target:?}");
        }
        for other in [
            "fe80::1%",
            "01.2.3.4",
            "999.1.1.1",
            " 1.2.3.4",
            "1.2.3.4:80",
            "1.2.3.4.5",
        ] {
            assert_eq!(kind(other), TargetKind::Other, "{other:?}");
        }
    }

    #[test]
    fn hostnames_allow_underscores_a_wildcard_and_one_trailing_dot() {
        for name in [
            "lb.example.com",
            "LB.Example.COM.",
            "_sip._tcp.example.com",
            "*.example.com",
            "localhost",
            "a-b.c0",
        ] {
            assert_eq!(kind(name), TargetKind::Hostname, "{name}");
        }
        let long_label = format!("{}.com", "a".repeat(64));
        let long_name = vec!["a".repeat(50); 6].join(".");
        for not_a_name in [
            "",
            ".",
            "a..b",
            "-a.example.com",
            "a-.example.com",
            "a.*.example.com",
            "**.example.com",
            "*",
            "bücher.example",
            "0 50 80 host.example.com.",
            "heritage=external-dns,external-dns/owner=x",
            "1.2.3",
            "1.2.3.4.",
            long_label.as_str(),
            long_name.as_str(),
        ] {
            assert_eq!(kind(not_a_name), TargetKind::Other, "{not_a_name}");
        }
    }

    #[test]
    fn the_spelling_is_kept_and_is_what_compares() {
        let t = Target::from("2001:0DB8::1");
        assert_eq!(t.as_str(), "2001:0DB8::1");
        assert_eq!(t.ip(), "2001:db8::1".parse().ok());
        assert_ne!(t, Target::from("2001:db8::1"));
        assert_eq!(serde_json::to_string(&t).ok().as_deref(), Some(r#""2001:0DB8::1""#));
        let back: Option<Target> = serde_json::from_str(r#""2001:0DB8::1""#).ok();
        assert_eq!(back.map(|b| b.kind()), Some(t.kind()));
    }

    #[test]
    fn order_is_plain_string_order() {
        let mut v: Vec<Target> = ["9.0.0.1", "10.0.0.1", "b.example.com", "A.example.com"]
            .into_iter()
            .map(Target::from)
            .collect();
        v.sort();
        assert_eq!(v, ["10.0.0.1", "9.0.0.1", "A.example.com", "b.example.com"]);
    }

    #[test]
    fn trimming_the_trailing_dot_classifies_again() {
        let mut t = Target::from("1.2.3.4.");
        assert_eq!(t.kind(), TargetKind::Other);
        t.trim_trailing_dot();
        assert_eq!(t, "1.2.3.4");
        assert_eq!(t.kind(), v4("1.2.3.4"));
        t.trim_trailing_dot();
        assert_eq!(t, "1.2.3.4", "only a trailing dot is removed");
        let mut t = Target::from("fe80::1%eth0.");
        assert_eq!(t.kind(), v6("fe80::1"), "the zone may end with a dot");
        t.trim_trailing_dot();
        assert_eq!((t.as_str(), t.kind()), ("fe80::1%eth0", v6("fe80::1")));
        let mut t = Target::from("lb.example.com.");
        t.trim_trailing_dot();
        assert_eq!((t.as_str(), t.kind()), ("lb.example.com", TargetKind::Hostname));
    }

    #[test]
    fn lower_casing_keeps_the_kind() {
        for text in [
            "2001:DB8::A%Eth0",
            "LB.Example.COM",
            "V=SPF1 -ALL",
            "1.2.3.4",
            "FE80::1%",
        ] {
            let mut t = Target::from(text);
            let before = t.kind();
            t.make_ascii_lowercase();
            assert_eq!(t, text.to_ascii_lowercase().as_str());
            assert_eq!((t.kind(), TargetKind::of(&t)), (before, before), "{text}");
        }
    }

    #[test]
    fn an_ipv4_target_is_spelled_canonically() {
        // `Targets::same` relies on it to compare IPv4 targets by their text.
        for text in ["0.0.0.0", "10.0.0.1", "255.255.255.255", "192.0.2.33"] {
            assert_eq!(Target::from(text).ip().map(|ip| ip.to_string()).as_deref(), Some(text));
        }
        for text in ["010.0.0.1", "1.2.3.04", "+1.2.3.4", "1.2.3.4 "] {
            assert_eq!(Target::from(text).ip(), None, "{text}");
        }
    }

    #[test]
    fn targets_from_addresses_are_canonical_and_classified() {
        let t = Target::from(IpAddr::V6("2001:0db8::0001".parse().unwrap_or(Ipv6Addr::UNSPECIFIED)));
        assert_eq!(t, "2001:db8::1");
        assert_eq!(t.kind(), Target::from("2001:db8::1").kind());
        let t = Target::from(Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!((t.as_str(), t.suitable_type()), ("192.0.2.1", RecordType::A));
    }

    #[test]
    fn suitable_type_is_a_aaaa_or_cname() {
        assert_eq!(Target::from("1.2.3.4").suitable_type(), RecordType::A);
        assert_eq!(Target::from("::1").suitable_type(), RecordType::Aaaa);
        assert_eq!(Target::from("lb.example.com").suitable_type(), RecordType::Cname);
        assert_eq!(Target::from("v=spf1 -all").suitable_type(), RecordType::Cname);
    }
}
