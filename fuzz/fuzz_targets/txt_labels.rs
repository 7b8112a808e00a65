//! TXT registry values and names: what extdns reads back from a zone decides what it owns, so a value that
//! parses must mean the same after extdns writes it again (plain and encrypted), and an ownership name must
//! lead back to the record it was written for.
//!
//! The input is one TXT value as read from DNS (bytes that are not UTF-8 are replaced, as the providers do).

#![no_main]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extdns_endpoint::{Labels, RecordType, label};
use extdns_registry::crypto::{self, AesKey};
use extdns_registry::{NameMapper, labels};
use libfuzzer_sys::fuzz_target;

/// The key of the encrypted checks: external-dns accepts a 32-byte key as it is.
const KEY: &[u8; 32] = b"01234567890123456789012345678901";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let key = AesKey::from_bytes(*KEY);

    // Arbitrary values never panic, with or without a key, and a key does not change how a plain value reads
    // (a value this input could decrypt would need a valid GCM tag under `KEY`).
    let plain = labels::parse_plain(&text);
    assert_eq!(labels::parse(&text, None), plain);
    let with_key = labels::parse(&text, Some(&key));
    if crypto::decrypt(text.trim_matches('"'), &key).is_err() {
        assert_eq!(with_key, plain, "a key changed how a plain value reads");
    }
    let _ = AesKey::parse(&text);

    if let Ok(read) = &plain {
        assert!(
            text.trim_matches('"').split(',').any(|t| t == "heritage=external-dns"),
            "{text:?} parsed without a heritage token"
        );
        plain_round_trip(read);
        encrypted_round_trip(read, &key, data);
    }

    mapper_round_trip(&text);
});

/// What reading back a written value gives: every label but the nonce (never written in plain text), and
/// the last label's value without trailing double quotes, because reading strips quotes from both ends of
/// the whole value as external-dns does.
fn expected_after_write(labels: &Labels) -> Labels {
    let mut expected = without_nonce(labels);
    let last = expected
        .iter()
        .next_back()
        .map(|(k, v)| (k.clone(), v.trim_end_matches('"').to_string()));
    if let Some((key, trimmed)) = last {
        expected.insert(key, trimmed);
    }
    expected
}

fn plain_round_trip(read: &Labels) {
    let expected = expected_after_write(read);
    for quoted in [true, false] {
        let written = labels::serialize_plain(read, quoted);
        assert_eq!(
            labels::parse_plain(&written).as_ref(),
            Ok(&expected),
            "{written:?} does not read back as it was written"
        );
        let mut copy = read.clone();
        let via_serialize = labels::serialize(&mut copy, quoted, None);
        assert_eq!(via_serialize.as_ref(), Ok(&written));
    }
}

fn encrypted_round_trip(read: &Labels, key: &AesKey, data: &[u8]) {
    // A fixed nonce derived from the input keeps the run deterministic (a missing one would be random).
    let mut nonce = [0u8; crypto::NONCE_LEN];
    for (i, b) in data.iter().enumerate() {
        nonce[i % crypto::NONCE_LEN] ^= b.rotate_left((i / crypto::NONCE_LEN) as u32 % 8);
    }
    let mut labels_in = read.clone();
    labels_in.insert(label::TXT_ENCRYPTION_NONCE.to_string(), STANDARD.encode(nonce));
    for quoted in [true, false] {
        let mut to_write = labels_in.clone();
        let written = match labels::serialize(&mut to_write, quoted, Some(key)) {
            Ok(w) => w,
            Err(e) => panic!("encrypting {to_write:?}: {e}"),
        };
        assert!(!written.contains("heritage"), "an encrypted value shows its plain text");
        let mut expected = expected_after_write(&to_write);
        if let Some(n) = to_write.get(label::TXT_ENCRYPTION_NONCE) {
            expected.insert(label::TXT_ENCRYPTION_NONCE.to_string(), n.clone());
        }
        let back = labels::parse(&written, Some(key));
        assert_eq!(
            back.as_ref(),
            Ok(&expected),
            "{written:?} does not decrypt to what was written"
        );
        // Without the key an encrypted value is nobody's.
        assert!(labels::parse(&written, None).is_err());
        // Writing what was read gives the same value when reading lost nothing: no update every sync.
        if expected_after_write(&to_write) == without_nonce(&to_write)
            && let Ok(mut again) = back
        {
            assert_eq!(labels::serialize(&mut again, quoted, Some(key)).as_ref(), Ok(&written));
        }
    }
}

fn without_nonce(labels: &Labels) -> Labels {
    let mut l = labels.clone();
    l.remove(label::TXT_ENCRYPTION_NONCE);
    l
}

/// An ownership name maps back to the record it was written for, for every affix form extdns writes, when
/// the name is a plain lower-case host name (upper case reads back lower-cased; the wildcard replacement
/// and single-label names in suffix mode are one-way in external-dns too).
fn mapper_round_trip(text: &str) {
    let name = text.trim();
    let plain_labels = !name.is_empty()
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        });
    if !plain_labels {
        return;
    }
    let mappers = [
        NameMapper::new("", "", ""),
        NameMapper::new("txt.", "", ""),
        NameMapper::new("txt-", "", ""),
        NameMapper::new("%{record_type}-", "", ""),
        NameMapper::new("", "-txt", ""),
        NameMapper::new("", "-%{record_type}", ""),
    ];
    for (i, mapper) in mappers.iter().enumerate() {
        if i >= 4 && !name.contains('.') {
            continue;
        }
        for rt in RecordType::KNOWN {
            let txt_name = mapper.to_txt_name(name, &rt);
            let (back, back_type) = mapper.to_endpoint_name(&txt_name);
            assert_eq!(
                (back.as_str(), &back_type),
                (name, &rt),
                "{mapper:?}: {name} {rt} was written as {txt_name}"
            );
        }
    }
}
