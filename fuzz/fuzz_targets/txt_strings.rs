//! TXT data as character-strings (`extdns_endpoint::txt`): what Cloud DNS, Route53, PowerDNS and a DNS
//! message hold of a TXT value, read back into the value the registry parses. A value cut must read back
//! whole, a value read back must be written again as it was read, and no string written may be longer than
//! a character-string can be.
//!
//! The input is zone-file TXT data as a provider reads it (bytes that are not UTF-8 are replaced, as the
//! providers do).

#![no_main]

use extdns_endpoint::txt::{self, CHARACTER_STRING_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    // Arbitrary data read back: never a panic; what it joins into, written again, is what was read.
    let strings = txt::unquoted_strings(&text);
    if let Some(joined) = txt::joined(&text) {
        let parts = strings.as_ref().map(Vec::len).unwrap_or_default();
        assert!(parts >= 2, "{text:?} joined from {parts} strings");
        assert_eq!(
            txt::unquoted_strings(&joined).map(|s| s.concat()),
            strings.map(|s| s.concat())
        );
        assert_eq!(txt::unfitted(&txt::fitted(&joined)), joined, "{text:?}");
    }

    // The input as a value to write: cut into strings that fit, which read back as the value.
    for part in txt::character_strings(&text) {
        assert!(part.len() <= CHARACTER_STRING_MAX);
    }
    assert_eq!(txt::character_strings(&text).concat(), text);
    let written = txt::quoted_strings(&text);
    let read = txt::unquoted_strings(&written).unwrap_or_default();
    assert!(read.iter().all(|s| s.len() <= CHARACTER_STRING_MAX), "{written:?}");
    assert_eq!(read.concat(), text);
    let quoted = txt::quoted(&text);
    assert_eq!(txt::unfitted(&txt::fitted(&quoted)), quoted, "{text:?}");
});
