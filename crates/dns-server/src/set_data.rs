//! A record set's data as the zone holds it: addresses as their bytes, everything else as its wire form.
//!
//! hickory's `RData` is 184 bytes whatever it holds (its largest variants set the size), so an A record
//! kept as one cost 184 bytes for its 4, and A and AAAA are most of a zone the controller writes (70 % of
//! the serving benchmark's). An address set is kept as its addresses (4 or 16 bytes each) and made into
//! `RData` when a query or a transfer reads it, which is as cheap as the copy of the `RData` it replaces.
//! Every other set (CNAME, TXT, MX, SRV and the rest: 30 % of the benchmark's zone) is kept as its records'
//! wire form, each after its length: a CNAME to a 20-character name is 24 bytes, where its `RData` was 184
//! and the name's spill beyond hickory's inline room. It is read back into `RData` for an answer, which
//! costs about what the copy of a kept `RData` cost; the data a write gives is kept as `RData` only when
//! its wire form does not read back as the same data (a form hickory writes but does not read alike).
//! Every form is a boxed slice: exactly its length, and 8 bytes smaller than a vector; but one address,
//! the commonest set, is kept inside the set itself (as large as the slice's pointer and length), so
//! reading it costs no load of another cache line, and holding it no allocation (issue 49: the tail and
//! memory per record).

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, RecordType};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, BinEncoder, Restrict};

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
    /// Any other set: each record's data in its wire form after its length (two bytes, big-endian).
    Wire(RecordType, Box<[u8]>),
    /// A set whose wire form does not read back as given (or an empty one): its data as given.
    Other(Box<[RData]>),
}

impl From<Vec<RData>> for SetData {
    /// Addresses when every record is an A record or every record an AAAA record; the wire form when
    /// it reads back as the data given; the data as given otherwise.
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
            _ => match wire_form(&data) {
                Some((record_type, wire)) => Form::Wire(record_type, wire),
                None => Form::Other(data.into_boxed_slice()),
            },
        };
        SetData(form)
    }
}

/// What `pick` takes out of every record, when it takes something out of every one and there is one.
fn every<T>(data: &[RData], pick: impl Fn(&RData) -> Option<T>) -> Option<Box<[T]>> {
    let picked: Option<Box<[T]>> = data.iter().map(pick).collect();
    picked.filter(|p| !p.is_empty())
}

/// The wire form of `data` (records of one type, at least one), when it reads back as `data`.
fn wire_form(data: &[RData]) -> Option<(RecordType, Box<[u8]>)> {
    let record_type = data.first()?.record_type();
    let mut wire = Vec::new();
    let mut one = Vec::new();
    for d in data {
        if d.record_type() != record_type {
            return None;
        }
        one.clear();
        d.emit(&mut BinEncoder::new(&mut one)).ok()?;
        wire.extend_from_slice(&u16::try_from(one.len()).ok()?.to_be_bytes());
        wire.extend_from_slice(&one);
    }
    let alike = {
        let mut back = records(record_type, &wire);
        data.iter().all(|d| back.next().flatten().is_some_and(|r| *r == *d)) && back.next().is_none()
    };
    alike.then(|| (record_type, wire.into_boxed_slice()))
}

/// Each record of a wire form, read back; `None` for one that does not read (never, for a form
/// [`wire_form`] kept).
fn records<'a>(record_type: RecordType, wire: &'a [u8]) -> impl Iterator<Item = Option<Cow<'a, RData>>> + 'a {
    each_record(wire).map(move |one| {
        let length = u16::try_from(one.len()).ok()?;
        RData::read(&mut BinDecoder::new(one), record_type, Restrict::new(length))
            .ok()
            .map(Cow::Owned)
    })
}

/// Each record's bytes in a wire form, by the lengths before them: what counting the records reads,
/// without reading the records themselves.
fn each_record(mut wire: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (length, rest) = wire.split_first_chunk::<2>()?;
        let (one, rest) = rest
            .split_at_checked(usize::from(u16::from_be_bytes(*length)))
            .unwrap_or((rest, &[]));
        wire = rest;
        Some(one)
    })
}

/// A set's IPv4 addresses, its IPv6 addresses, its records' wire form (and their type) and its data as
/// given: all but one empty.
type Parts<'a> = (
    &'a [Ipv4Addr],
    &'a [Ipv6Addr],
    Option<(RecordType, &'a [u8])>,
    &'a [RData],
);

impl SetData {
    /// The set's data in the form it is kept.
    fn parts(&self) -> Parts<'_> {
        match &self.0 {
            Form::OneV4(a) => (std::slice::from_ref(a), &[], None, &[]),
            Form::OneV6(a) => (&[], std::slice::from_ref(a), None, &[]),
            Form::V4(a) => (a, &[], None, &[]),
            Form::V6(a) => (&[], a, None, &[]),
            Form::Wire(record_type, wire) => (&[], &[], Some((*record_type, wire)), &[]),
            Form::Other(d) => (&[], &[], None, d),
        }
    }

    /// Records in the set.
    pub fn len(&self) -> usize {
        let (v4, v6, wire, other) = self.parts();
        let wire = wire.map_or(0, |(_, wire)| each_record(wire).count());
        v4.len() + v6.len() + wire + other.len()
    }

    /// Whether the set holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every record's data, in order: made for an address set and read back from a wire form, borrowed
    /// for data kept as given.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, RData>> + '_ {
        let (v4, v6, wire, other) = self.parts();
        let v4 = v4.iter().map(|a| Cow::Owned(RData::A(A(*a))));
        let v6 = v6.iter().map(|a| Cow::Owned(RData::AAAA(AAAA(*a))));
        let wire = wire
            .into_iter()
            .flat_map(|(record_type, wire)| records(record_type, wire).flatten());
        v4.chain(v6).chain(wire).chain(other.iter().map(Cow::Borrowed))
    }

    /// The data as hickory's values, for what takes a slice of them (the signer).
    pub fn to_vec(&self) -> Vec<RData> {
        self.iter().map(Cow::into_owned).collect()
    }

    /// The data of a set whose records name other names an answer follows or adds the addresses of (a
    /// CNAME's target; an MX's, SRV's or NS's): empty for a set of any other type.
    pub fn naming(&self) -> Cow<'_, [RData]> {
        match &self.0 {
            Form::Wire(record_type, wire) if names_others(*record_type) => {
                Cow::Owned(records(*record_type, wire).flatten().map(Cow::into_owned).collect())
            }
            Form::Other(d) => Cow::Borrowed(d),
            _ => Cow::Borrowed(&[]),
        }
    }
}

/// Whether an answer follows or adds the addresses of what records of `record_type` name.
fn names_others(record_type: RecordType) -> bool {
    matches!(
        record_type,
        RecordType::CNAME | RecordType::MX | RecordType::SRV | RecordType::NS
    )
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::Name;
    use hickory_proto::rr::rdata::{CNAME, MX, SRV, TXT};

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
            vec![
                RData::MX(MX::new(10, Name::from_ascii("mx1.example.net.").expect("name"))),
                RData::MX(MX::new(20, Name::from_ascii("Mx2.example.net.").expect("name"))),
            ],
            vec![RData::SRV(SRV::new(
                10,
                5,
                443,
                Name::from_ascii("node.example.net.").expect("name"),
            ))],
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
        let wire = SetData::from(vec![cname.clone()]);
        assert!(
            matches!(&wire.0, Form::Wire(RecordType::CNAME, w) if w.len() == 2 + 17),
            "a CNAME is its target's wire form and its length: {wire:?}"
        );
        assert_eq!(&*wire.naming(), [cname], "what an answer follows");
        let txt = SetData::from(vec![RData::TXT(TXT::new(vec!["v=spf1 -all".into()]))]);
        assert!(txt.naming().is_empty(), "a TXT names nothing to follow");
    }

    #[test]
    fn data_whose_wire_form_reads_back_otherwise_is_kept_as_given() {
        // A CNAME and an MX in one set (never written so) have no one type to read back as.
        let mixed = vec![
            RData::CNAME(CNAME(Name::from_ascii("web.example.org.").expect("name"))),
            RData::MX(MX::new(10, Name::from_ascii("mx.example.org.").expect("name"))),
        ];
        let set = SetData::from(mixed.clone());
        assert!(matches!(&set.0, Form::Other(_)));
        assert_eq!(set.to_vec(), mixed);
        assert_eq!(set.len(), 2);
    }
}
