//! Fixtures the sinks' tests share: both status writers (the DNSEndpoint conditions and the object
//! status) are tested on the outcome of one name, built once here.

use extdns_controller::{NameOutcome, NameState, ObjectNames};

/// The names of an object that asks for `web.example.org A` alone, in `state`.
pub(crate) fn web_names(state: NameState) -> ObjectNames {
    ObjectNames {
        uid: None,
        names: vec![NameOutcome {
            name: "web.example.org".into(),
            record_type: "A".into(),
            set_identifier: Box::default(),
            state,
        }]
        .into(),
    }
}
