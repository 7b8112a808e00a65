//! The endpoint and domain-filter JSON as external-dns's Go client decodes it, checked field by field.
//!
//! The kit decodes leniently where Go is lenient (unknown fields, absent or `null` values) and strictly where
//! Go would fail or lose data (a map where a list belongs, a number where a string belongs), so a server
//! passes exactly when the real client would read it correctly. Each endpoint is decoded on its own: one
//! malformed endpoint is reported against the check that wrote it, not against the whole answer.

use std::fmt;

use serde_json::{Map, Value, json};

/// One endpoint, reduced to what the protocol carries and a provider must give back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub dns_name: String,
    pub targets: Vec<String>,
    pub record_type: String,
    pub set_identifier: String,
    /// 0 when absent, as Go's zero value.
    pub ttl: i64,
    /// In the order the server sent them; compared as a set.
    pub provider_specific: Vec<(String, String)>,
}

impl Record {
    pub fn new(dns_name: String, record_type: &str, targets: &[&str]) -> Self {
        Record {
            dns_name,
            targets: targets.iter().map(|t| (*t).to_owned()).collect(),
            record_type: record_type.to_owned(),
            set_identifier: String::new(),
            ttl: 0,
            provider_specific: Vec::new(),
        }
    }

    /// The JSON external-dns sends, empty fields omitted as Go's `omitempty` does.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("dnsName".into(), json!(self.dns_name));
        m.insert("targets".into(), json!(self.targets));
        m.insert("recordType".into(), json!(self.record_type));
        if !self.set_identifier.is_empty() {
            m.insert("setIdentifier".into(), json!(self.set_identifier));
        }
        if self.ttl != 0 {
            m.insert("recordTTL".into(), json!(self.ttl));
        }
        if !self.provider_specific.is_empty() {
            let ps: Vec<Value> = self
                .provider_specific
                .iter()
                .map(|(name, value)| json!({ "name": name, "value": value }))
                .collect();
            m.insert("providerSpecific".into(), Value::Array(ps));
        }
        Value::Object(m)
    }

    /// Whether a server's copy is this endpoint: external-dns compares targets and provider-specific
    /// properties regardless of order, and a TTL only when one was asked for (providers apply defaults).
    pub fn differs_from(&self, got: &Record) -> Option<String> {
        let unquoted = |targets: &[String]| -> Vec<String> {
            let mut t: Vec<String> = targets
                .iter()
                .map(|v| {
                    v.strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(v)
                        .to_owned()
                })
                .collect();
            t.sort();
            t
        };
        // A TXT value comes back quoted or not depending on the provider; its text is what must survive.
        let same_targets = if self.record_type == "TXT" {
            unquoted(&self.targets) == unquoted(&got.targets)
        } else {
            sorted(&self.targets) == sorted(&got.targets)
        };
        if !same_targets {
            return Some(format!("targets {:?}, want {:?}", got.targets, self.targets));
        }
        if self.set_identifier != got.set_identifier {
            return Some(format!(
                "setIdentifier {:?}, want {:?}",
                got.set_identifier, self.set_identifier
            ));
        }
        if self.ttl != 0 && self.ttl != got.ttl {
            return Some(format!("recordTTL {}, want {}", got.ttl, self.ttl));
        }
        if sorted(&self.provider_specific) != sorted(&got.provider_specific) {
            return Some(format!(
                "providerSpecific {:?}, want {:?}",
                got.provider_specific, self.provider_specific
            ));
        }
        None
    }

    /// Same name (DNS names are case-insensitive; a trailing dot is the same name), type and set identifier:
    /// the key external-dns plans by.
    pub fn same_key(&self, other: &Record) -> bool {
        same_name(&self.dns_name, &other.dns_name)
            && self.record_type == other.record_type
            && self.set_identifier == other.set_identifier
    }
}

pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a.trim_end_matches('.').eq_ignore_ascii_case(b.trim_end_matches('.'))
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Why an endpoint (or filter) would not decode, or would decode into something else, in the Go client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShapeError {
    /// The endpoint's `dnsName` when it could be read, to name it.
    pub dns_name: Option<String>,
    pub field: &'static str,
    pub problem: String,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dns_name {
            Some(name) => write!(f, "endpoint {name:?}: {} {}", self.field, self.problem),
            None => write!(f, "{} {}", self.field, self.problem),
        }
    }
}

/// Why a whole answer body is unusable: not JSON, or not the JSON kind the call returns.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("body is not JSON ({source}): {preview}")]
    NotJson {
        preview: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("body is a JSON {got}, want {want}")]
    Kind { got: &'static str, want: &'static str },
    #[error("{key:?} is a JSON {got}, want {want}")]
    FilterField {
        key: String,
        got: &'static str,
        want: &'static str,
    },
    #[error(
        "unknown key {0:?} (the client ignores it, so the filter would match every domain); want \
         include/exclude or regexInclude/regexExclude"
    )]
    UnknownFilterKey(String),
    #[error("has both include/exclude and regexInclude/regexExclude; the client rejects it")]
    BothFilterForms,
}

fn parse(body: &[u8]) -> Result<Value, BodyError> {
    serde_json::from_slice(body).map_err(|source| BodyError::NotJson {
        preview: preview(body),
        source,
    })
}

/// One element of an endpoint array: its name when readable, and the decoded record or why it failed.
pub(crate) type Decoded = (Option<String>, Result<Record, ShapeError>);

/// An endpoint array (GET /records, POST /adjustendpoints). `Err` when the body is not a JSON array at all.
pub(crate) fn decode_endpoints(body: &[u8]) -> Result<Vec<Decoded>, BodyError> {
    match parse(body)? {
        Value::Array(items) => Ok(items
            .iter()
            .map(|item| {
                let name = item.get("dnsName").and_then(Value::as_str).map(str::to_owned);
                (name, decode_endpoint(item))
            })
            .collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(BodyError::Kind {
            got: kind(&other),
            want: "an array of endpoints",
        }),
    }
}

fn decode_endpoint(v: &Value) -> Result<Record, ShapeError> {
    let dns_name = v.get("dnsName").and_then(Value::as_str).map(str::to_owned);
    let err = |field: &'static str, problem: String| ShapeError {
        dns_name: dns_name.clone(),
        field,
        problem,
    };
    let Value::Object(m) = v else {
        return Err(err("endpoint", format!("is a JSON {}, want an object", kind(v))));
    };
    let string = |field: &'static str| -> Result<String, ShapeError> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(err(field, format!("is a JSON {}, want a string", kind(other)))),
        }
    };
    let targets = match m.get("targets") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) => Ok(s.clone()),
                other => Err(err("targets", format!("holds a JSON {}, want strings", kind(other)))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(err(
                "targets",
                format!("is a JSON {}, want a list of strings", kind(other)),
            ));
        }
    };
    let ttl = match m.get("recordTTL") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| err("recordTTL", format!("is {n}, want a 64-bit integer")))?,
        Some(other) => return Err(err("recordTTL", format!("is a JSON {}, want an integer", kind(other)))),
    };
    match m.get("labels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            if let Some((key, value)) = labels.iter().find(|(_, v)| !v.is_string()) {
                return Err(err(
                    "labels",
                    format!("has {key:?} = JSON {}, want string values", kind(value)),
                ));
            }
        }
        Some(other) => return Err(err("labels", format!("is a JSON {}, want an object", kind(other)))),
    }
    let provider_specific = match m.get("providerSpecific") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|p| {
                let name = p.get("name").and_then(Value::as_str);
                let value = p.get("value").and_then(Value::as_str);
                match (name, value) {
                    (Some(n), Some(v)) => Ok((n.to_owned(), v.to_owned())),
                    _ => Err(err(
                        "providerSpecific",
                        format!("holds {p}, want {{\"name\": string, \"value\": string}}"),
                    )),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Object(_)) => {
            return Err(err(
                "providerSpecific",
                "is a JSON object (a map), want a list of {\"name\",\"value\"} objects; the Go client \
                 rejects the whole answer"
                    .to_owned(),
            ));
        }
        Some(other) => {
            return Err(err(
                "providerSpecific",
                format!(
                    "is a JSON {}, want a list of {{\"name\",\"value\"}} objects",
                    kind(other)
                ),
            ));
        }
    };
    Ok(Record {
        dns_name: string("dnsName")?,
        targets,
        record_type: string("recordType")?,
        set_identifier: string("setIdentifier")?,
        ttl,
        provider_specific,
    })
}

/// The negotiated domain filter, reduced to what the kit uses: the first plain include, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    pub include: Vec<String>,
}

/// The domain filter answer of `GET /`: one of the two forms Go marshals, never both, no other keys.
pub(crate) fn decode_filter(body: &[u8]) -> Result<Filter, BodyError> {
    let value = parse(body)?;
    let Value::Object(m) = value else {
        return Err(BodyError::Kind {
            got: kind(&value),
            want: "an object",
        });
    };
    let field = |key: &str, got: &Value, want: &'static str| BodyError::FilterField {
        key: key.to_owned(),
        got: kind(got),
        want,
    };
    let mut filter = Filter::default();
    let mut plain = false;
    let mut regex = false;
    for (key, v) in &m {
        match key.as_str() {
            "include" | "exclude" => {
                plain = true;
                let list = match v {
                    Value::Null => Vec::new(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| {
                            i.as_str()
                                .map(str::to_owned)
                                .ok_or_else(|| field(key, i, "strings in the list"))
                        })
                        .collect::<Result<_, _>>()?,
                    other => return Err(field(key, other, "a list of strings")),
                };
                if key == "include" {
                    filter.include = list;
                }
            }
            "regexInclude" | "regexExclude" => {
                regex = true;
                if !(v.is_string() || v.is_null()) {
                    return Err(field(key, v, "a string"));
                }
            }
            other => return Err(BodyError::UnknownFilterKey(other.to_owned())),
        }
    }
    if plain && regex {
        return Err(BodyError::BothFilterForms);
    }
    Ok(filter)
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The start of a body, for messages.
pub(crate) fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    format!("{out:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_nulls_decode_as_empty() {
        let got = decode_endpoints(
            br#"[{"dnsName":"a.example.org","targets":null,"recordType":"A","setIdentifier":null,
                 "recordTTL":null,"labels":null,"providerSpecific":null}]"#,
        );
        let Ok(items) = got else { panic!("{got:?}") };
        assert_eq!(items.len(), 1);
        let rec = items[0].1.clone();
        assert_eq!(
            rec.map(|r| (r.dns_name, r.targets.len(), r.ttl)),
            Ok(("a.example.org".into(), 0, 0))
        );
    }

    #[test]
    fn provider_specific_as_a_map_is_named() {
        let Ok(items) =
            decode_endpoints(br#"[{"dnsName":"a.example.org","recordType":"A","providerSpecific":{"k":"v"}}]"#)
        else {
            panic!("array expected")
        };
        let Err(e) = &items[0].1 else { panic!("map accepted") };
        assert_eq!(e.field, "providerSpecific");
        assert!(e.to_string().contains("a.example.org"), "{e}");
    }

    #[test]
    fn filter_forms() {
        assert_eq!(decode_filter(b"{}").ok(), Some(Filter::default()));
        assert_eq!(
            decode_filter(br#"{"include":["example.org"],"exclude":null}"#)
                .ok()
                .map(|f| f.include),
            Some(vec!["example.org".to_owned()])
        );
        assert!(decode_filter(br#"{"regexInclude":"x$"}"#).is_ok());
        assert!(decode_filter(br#"{"include":["a"],"regexInclude":"x$"}"#).is_err());
        assert!(decode_filter(br#"{"filters":["a"]}"#).is_err_and(|e| e.to_string().contains("filters")));
        assert!(decode_filter(b"[]").is_err());
    }

    #[test]
    fn comparison_ignores_order_and_unasked_ttl() {
        let mut want = Record::new("a.example.org".into(), "A", &["192.0.2.1", "192.0.2.2"]);
        let mut got = Record::new("A.example.org.".into(), "A", &["192.0.2.2", "192.0.2.1"]);
        got.ttl = 300;
        assert!(want.same_key(&got));
        assert_eq!(want.differs_from(&got), None);
        want.ttl = 60;
        assert!(want.differs_from(&got).is_some_and(|d| d.contains("recordTTL")));
    }
}
