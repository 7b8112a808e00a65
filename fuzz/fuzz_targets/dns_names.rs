//! The RFC2136 provider's mapping between endpoints (names and target text) and DNS record data, and the
//! DNS messages it reads. What a zone transfer yields must be writable again in the same form, or extdns
//! could not delete or update a record it owns; what extdns writes must read back as it was meant.
//!
//! The input is either a line of text, `NAME <name>` or `<TYPE> <target>` (`A 192.0.2.1`, `MX 10 mx.example.org`),
//! or anything else, taken as a DNS message on the wire (a zone transfer answer).

#![no_main]

use extdns_endpoint::RecordType;
use extdns_provider_rfc2136::TsigAlgorithm;
use extdns_provider_rfc2136::fuzzing::{
    Key, TsigFailure, Verifier, canonical_txt, name, name_text, rdata, target, txt_chunks, txt_value, update_message,
};
use hickory_proto::op::Message;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType as WireType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Some((word, rest)) = text.split_once(' ')
        && !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        if word == "NAME" {
            check_name(rest);
        } else {
            check_target(&RecordType::from(word), rest);
        }
        check_txt(rest);
        return;
    }
    check_message(data);
});

/// A name extdns accepts reads back as the same name, spelled the same way every time.
fn check_name(text: &str) {
    let Ok(n) = name(text) else { return };
    assert!(n.is_fqdn());
    let spelled = name_text(&n);
    assert!(
        !spelled.bytes().any(|b| b.is_ascii_uppercase()),
        "{spelled:?} is not lower case"
    );
    assert!(
        !spelled.ends_with('.') || spelled == ".",
        "{spelled:?} keeps its trailing dot"
    );
    match name(&spelled) {
        Ok(again) => {
            assert_eq!(again, n, "{text:?} is spelled {spelled:?}, which is another name");
            assert_eq!(name_text(&again), spelled);
        }
        Err(e) => panic!("{text:?} is spelled {spelled:?}, which is not a name: {e}"),
    }
}

/// A target extdns can write reads back as a target that writes the same record data, and survives the
/// UPDATE message's wire form.
fn check_target(rt: &RecordType, text: &str) {
    if *rt == RecordType::Naptr {
        return; // OPEN BUG, see `writable_as_read`.
    }
    let Ok(data) = rdata(rt, &text.into()) else { return };
    let Some((read_type, read)) = target(&data) else {
        // Only types extdns does not read back (CAA, SSHFP...) may be written without reading back.
        assert!(
            matches!(rt, RecordType::Other(_)),
            "{rt} {text:?} written as {data:?} does not read back"
        );
        return;
    };
    assert_eq!(&read_type, rt, "{rt} {text:?} reads back as another type");
    check_write_back(&read_type, &read, &data);
    check_update_wire(&data);
}

/// What was read from a zone can be written back (a delete names that record) and then reads back as the
/// same target (so the plan sees no difference).
fn check_write_back(rt: &RecordType, read: &str, data: &RData) {
    if !writable_as_read(rt, read) {
        return;
    }
    match rdata(rt, &read.into()) {
        // Compared as text: names in record data may differ in case only, which DNS ignores.
        Ok(again) => assert_eq!(
            target(&again).as_ref().map(|(t, v)| (t, v.as_str())),
            Some((rt, read)),
            "{rt} {read:?}, read from {data:?}, writes {again:?}"
        ),
        Err(e) => panic!("{rt} {read:?}, read from {data:?}, cannot be written back: {e}"),
    }
}

/// Reads that the endpoint text cannot carry back by design (see the codec's documentation): a TXT value that
/// is itself in zone-file quoting (a target in quotes means its unquoted text), and the root name as a
/// target (null MX, CNAME to "."), which no endpoint names.
fn writable_as_read(rt: &RecordType, read: &str) -> bool {
    match rt {
        RecordType::Txt => canonical_txt(read) == read,
        RecordType::Cname | RecordType::Ns | RecordType::Ptr | RecordType::Dname => read != ".",
        RecordType::Mx => !read.ends_with(" ."),
        RecordType::Srv => !read.ends_with(" ."),
        // OPEN BUG (docs/safety.md, "Fuzzing"): NAPTR text goes through hickory's formatter and parser,
        // which disagree (unescaped quotes and bytes in its strings, a relative replacement name). The
        // findings are kept in fuzz/known/; NAPTR is left out of this target until the codec writes NAPTR
        // itself. No source produces NAPTR records.
        RecordType::Naptr => false,
        _ => true,
    }
}

/// The record in an UPDATE message decodes to the same record data.
fn check_update_wire(data: &RData) {
    let Ok(owner) = name("web.example.org") else { return };
    let Ok(zone) = name("example.org") else { return };
    let record = Record::from_rdata(owner, 300, data.clone());
    let msg = update_message(&zone, std::slice::from_ref(&record));
    let wire = match msg.to_vec() {
        Ok(w) => w,
        Err(e) => panic!("{data:?} cannot be encoded: {e}"),
    };
    match Message::from_vec(&wire) {
        Ok(back) => {
            let got: Vec<&RData> = back.authorities.iter().map(|r| &r.data).collect();
            assert_eq!(got, vec![data], "the UPDATE message does not carry the record as built");
        }
        Err(e) => panic!("the UPDATE message for {data:?} does not decode: {e}"),
    }
}

/// TXT values are split into character-strings and joined back without loss.
fn check_txt(text: &str) {
    let canonical = canonical_txt(text);
    let chunks = txt_chunks(&canonical);
    assert!(chunks.iter().all(|c| c.len() <= 255 && std::str::from_utf8(c).is_ok()));
    let boxed: Vec<Box<[u8]>> = chunks.into_iter().map(Vec::into_boxed_slice).collect();
    assert_eq!(txt_value(&boxed), canonical);
}

/// A message as a zone transfer delivers it: every record extdns reads maps to a name and target it can
/// write back, and a message nobody signed never passes the TSIG check.
fn check_message(wire: &[u8]) {
    if let Ok(key) = Key::new("extdns-key", TsigAlgorithm::HmacSha256, b"0123456789abcdef") {
        let mut verifier = Verifier::new(&key, vec![0; 32], 1_700_000_000);
        match verifier.check(wire) {
            Ok(signed) => assert!(!signed, "an unsigned input passed the TSIG check"),
            // Both failures are answers to bad input; the enum is exhaustive, so a new kind of failure
            // shows here as a compile error rather than a panic.
            Err(TsigFailure::Rejected(_) | TsigFailure::BadResponse(_)) => {}
        }
    }
    let Ok(msg) = Message::from_vec(wire) else { return };
    for r in msg.answers.iter().chain(&msg.authorities).chain(&msg.additionals) {
        if r.dns_class != DNSClass::IN || r.record_type() == WireType::SOA {
            continue;
        }
        let owner = name_text(&r.name);
        if owner != "." {
            check_owner(&r.name, &owner);
        }
        if let Some((rt, read)) = target(&r.data) {
            check_write_back(&rt, &read, &r.data);
        }
    }
}

/// An owner name read from a zone names the same node when extdns writes to it.
fn check_owner(read: &Name, spelled: &str) {
    match name(spelled) {
        Ok(n) => assert_eq!(&n, read, "{read:?} is spelled {spelled:?}, which is another name"),
        Err(e) => panic!("{read:?} is spelled {spelled:?}, which is not a name: {e}"),
    }
}
