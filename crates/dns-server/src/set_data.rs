//! A record set's data as the zone holds it: addresses as their bytes, everything else as hickory's
//! record data.
//!
//! hickory's `RData` is 184 bytes whatever it holds (its largest variants set the size), so an A record
//! kept as one cost 184 bytes for its 4, and A and AAAA are most of a zone the controller writes (70 % of
//! the serving benchmark's). An address set is kept as its addresses (4 or 16 bytes each) and made into
//! `RData` when a query or a transfer reads it, which is as cheap as the copy of the `RData` it replaces;
//! other types keep their `RData` (what they name, a CNAME's target or an MX's exchange, is read by
//! reference on the answer path). Every form is a boxed slice: exactly its length, and 8 bytes smaller
//! than a vector; but one address, the commonest set, is kept inside the set itself (as large as the
//! slice's pointer and length), so reading it costs no load of another cache line, and holding it no
//! allocation (issue 49: the tail and memory per record).

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::RData;
use hickory_proto::rr::rdata::{A, AAAA};

/// The records of one set, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetData(Form);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Form {
    /// An A set of one record.
    OneV4(Ipv4Addr),
    /// An AAAA set of one record.
    OneV6(Ipv6Addr),
    /// An A set.
    V4(Box<[Ipv4Addr]>),
    /// An AAAA set.
    V6(Box<[Ipv6Addr]>),
    /// Any other set (or an empty one).
    Other(Box<[RData]>),
}

impl From<Vec<RData>> for SetData {
    /// Addresses when every record is an A record or every record an AAAA record; the data as given
    /// otherwise.
    fn from(data: Vec<RData>) -> SetData {
        let v4 = every(&data, |d| match d {
            RData::A(a) => Some(a.0),
            _ => None,
        });
        let v6 = every(&data, |d| match d {
            RData::AAAA(a) => Some(a.0),
            _ => None,
        });
        let form = match (v4, v6) {
            (Some(v4), _) => match *v4 {
                [one] => Form::OneV4(one),
                _ => Form::V4(v4),
            },
            (_, Some(v6)) => match *v6 {
                [one] => Form::OneV6(one),
                _ => Form::V6(v6),
            },
            _ => Form::Other(data.into_boxed_slice()),
        };
        SetData(form)
    }
}

/// What `pick` takes out of every record, when it takes something out of every one and there is one.
fn every<T>(data: &[RData], pick: impl Fn(&RData) -> Option<T>) -> Option<Box<[T]>> {
    let picked: Option<Box<[T]>> = data.iter().map(pick).collect();
    picked.filter(|p| !p.is_empty())
}

impl SetData {
    /// The set's data in the form it is kept: its IPv4 addresses, its IPv6 addresses or its other
    /// data, two of the three empty.
    fn parts(&self) -> (&[Ipv4Addr], &[Ipv6Addr], &[RData]) {
        match &self.0 {
            Form::OneV4(a) => (std::slice::from_ref(a), &[], &[]),
            Form::OneV6(a) => (&[], std::slice::from_ref(a), &[]),
            Form::V4(a) => (a, &[], &[]),
            Form::V6(a) => (&[], a, &[]),
            Form::Other(d) => (&[], &[], d),
        }
    }

    /// Records in the set.
    pub fn len(&self) -> usize {
        let (v4, v6, other) = self.parts();
        v4.len() + v6.len() + other.len()
    }

    /// Whether the set holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every record's data, in order: made for an address set, borrowed for the others.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, RData>> + '_ {
        let (v4, v6, other) = self.parts();
        let v4 = v4.iter().map(|a| Cow::Owned(RData::A(A(*a))));
        let v6 = v6.iter().map(|a| Cow::Owned(RData::AAAA(AAAA(*a))));
        v4.chain(v6).chain(other.iter().map(Cow::Borrowed))
    }

    /// The data as hickory's values, for what takes a slice of them (the signer).
    pub fn to_vec(&self) -> Vec<RData> {
        self.iter().map(Cow::into_owned).collect()
    }

    /// The data of a set whose records may name other names (CNAME, MX, SRV, NS and the rest), by
    /// reference; empty for an A or AAAA set, which names none: what an answer follows for a CNAME's
    /// target or adds the addresses of.
    pub fn naming(&self) -> &[RData] {
        self.parts().2
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::Name;
    use hickory_proto::rr::rdata::{CNAME, TXT};

    use super::*;

    fn a(ip: &str) -> RData {
        RData::A(A(ip.parse().expect("test address")))
    }

    fn aaaa(ip: &str) -> RData {
        RData::AAAA(AAAA(ip.parse().expect("test address")))
    }

    #[test]
    fn every_set_reads_back_as_written_in_order() {
        let cname = RData::CNAME(CNAME(Name::from_ascii("Web.example.org.").expect("name")));
        let sets = [
            vec![a("192.0.2.2"), a("192.0.2.1"), a("192.0.2.2")],
            vec![aaaa("2001:db8::1"), aaaa("2001:db8::2")],
            vec![cname],
            vec![RData::TXT(TXT::new(vec!["one".into(), "two".into()]))],
            vec![],
        ];
        for data in sets {
            let set = SetData::from(data.clone());
            assert_eq!(set.len(), data.len());
            assert_eq!(set.is_empty(), data.is_empty());
            assert_eq!(set.to_vec(), data);
            assert_eq!(set.iter().map(Cow::into_owned).collect::<Vec<_>>(), data);
        }
    }

    #[test]
    fn addresses_are_held_as_bytes_and_name_nothing() {
        let v4 = SetData::from(vec![a("192.0.2.1"), a("192.0.2.9")]);
        assert!(matches!(&v4.0, Form::V4(a) if a.len() == 2));
        assert!(v4.naming().is_empty());
        assert!(matches!(
            SetData::from(vec![aaaa("2001:db8::1"), aaaa("2001:db8::2")]).0,
            Form::V6(_)
        ));
        let one = SetData::from(vec![a("192.0.2.1")]);
        assert!(matches!(one.0, Form::OneV4(_)), "one address kept inside the set");
        assert_eq!((one.len(), one.to_vec()), (1, vec![a("192.0.2.1")]));
        let one = SetData::from(vec![aaaa("2001:db8::1")]);
        assert!(matches!(one.0, Form::OneV6(_)));
        assert_eq!((one.len(), one.to_vec()), (1, vec![aaaa("2001:db8::1")]));
        assert!(size_of::<SetData>() <= 24, "no larger for the address inside");
        let cname = RData::CNAME(CNAME(Name::from_ascii("web.example.org.").expect("name")));
        let other = SetData::from(vec![cname.clone()]);
        assert_eq!(other.naming(), [cname]);
        assert!(
            matches!(other.iter().next(), Some(Cow::Borrowed(_))),
            "named data is lent, not copied"
        );
    }
}
