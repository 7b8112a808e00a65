//! The checks, in the order a controller would exercise a server: negotiate, read, adjust, write, read back,
//! change, delete, misuse, clean up. Every check runs even when an earlier one failed (a report that stops
//! at the first failure hides the others), and the records written are removed at the end whatever happened.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::http::{Answer, CallError, Client};
use crate::wire::{self, BodyError, Decoded, Record, ShapeError};
use crate::{Check, Config, DEFAULT_ZONE, Error, Outcome, Report};

/// The first label of every name the kit writes, followed by the run id: cleanup deletes what carries it.
const NAME_PREFIX: &str = "conformance-";

/// The TTL every test record asks for: within every provider's range.
const TTL: i64 = 300;

/// Why a check failed; its text is the report line.
struct Failure(String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        Failure(e.to_string())
    }
}

fn fail<T>(why: impl Into<String>) -> Result<T, Failure> {
    Err(Failure(why.into()))
}

/// A record the kit writes, and the check that reports whether it came back intact.
struct Fixture {
    check: &'static str,
    record: Record,
}

fn fixtures(names: &Names, zone: &str) -> Vec<Fixture> {
    let mk = |check, what: &str, record_type, targets: &[&str]| {
        let mut record = Record::new(names.name(what), record_type, targets);
        record.ttl = TTL;
        Fixture { check, record }
    };
    let cname = format!("target.{zone}");
    let srv = format!("10 5 5060 sip.{zone}");
    let mx = format!("10 mail.{zone}");
    let ns = format!("ns1.{zone}");
    let ptr = format!("host.{zone}");
    let naptr = format!(r#"100 10 "U" "E2U+sip" "!^.*$!sip:info@{zone}!" ."#);
    let mut set_identifier = mk("roundtrip.set-identifier", "si", "A", &["192.0.2.4"]);
    set_identifier.record.set_identifier = "conformance".to_owned();
    let mut provider_specific = mk("roundtrip.provider-specific", "ps", "A", &["192.0.2.5"]);
    provider_specific.record.provider_specific = vec![
        ("webhook/conformance-a".to_owned(), "1".to_owned()),
        ("webhook/conformance-b".to_owned(), "two words".to_owned()),
    ];
    vec![
        mk("roundtrip.a", "a", "A", &["192.0.2.1"]),
        mk("roundtrip.aaaa", "aaaa", "AAAA", &["2001:db8::1"]),
        mk("roundtrip.cname", "cname", "CNAME", &[&cname]),
        // Quoted, as the TXT registry writes its values.
        mk("roundtrip.txt", "txt", "TXT", &["\"extdns conformance\""]),
        mk("roundtrip.srv", "srv", "SRV", &[&srv]),
        mk("roundtrip.mx", "mx", "MX", &[&mx]),
        mk("roundtrip.ns", "ns", "NS", &[&ns]),
        mk("roundtrip.ptr", "ptr", "PTR", &[&ptr]),
        mk("roundtrip.naptr", "naptr", "NAPTR", &[&naptr]),
        set_identifier,
        provider_specific,
    ]
}

/// The names of one run: `conformance-<run id>-<what>.<zone>`.
struct Names {
    stem: String,
    zone: String,
}

impl Names {
    fn new(zone: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or_default();
        Names {
            stem: format!("{NAME_PREFIX}{:08x}-", nanos ^ std::process::id().rotate_left(16)),
            zone: zone.to_owned(),
        }
    }

    fn name(&self, what: &str) -> String {
        format!("{}{what}.{}", self.stem, self.zone)
    }

    fn ours(&self, dns_name: &str) -> bool {
        dns_name.to_ascii_lowercase().starts_with(&self.stem)
    }
}

struct Suite {
    client: Client,
    checks: Vec<Check>,
}

impl Suite {
    fn record(&mut self, name: &'static str, result: Result<(), Failure>) {
        let outcome = match result {
            Ok(()) => Outcome::Pass,
            Err(Failure(why)) => Outcome::Fail(why),
        };
        let check = Check { name, outcome };
        tracing::debug!(%check, "webhook conformance check");
        self.checks.push(check);
    }

    /// `GET /records`, decoded endpoint by endpoint.
    async fn read(&self) -> Result<Vec<Decoded>, Failure> {
        let answer = self.client.get("/records").await?;
        if answer.status != 200 {
            return fail(format!("GET /records answered {}, want 200", answer.status));
        }
        wire::decode_endpoints(&answer.body).map_err(|e| Failure(format!("GET /records: {e}")))
    }

    async fn apply(&self, changes: &Value) -> Result<Answer, Failure> {
        Ok(self.client.post("/records", changes.to_string().into_bytes()).await?)
    }

    /// Applies `changes` (described as `call`), wants 204, then `want` in what the server reads back.
    async fn apply_then_find(&self, changes: &Value, call: &str, want: &Record) -> Result<(), Failure> {
        let answer = self.apply(changes).await?;
        status_is(&answer, call, 204)?;
        find(&self.read().await?, want).map(drop)
    }
}

/// The one endpoint of `read` with `want`'s key, or why there is not exactly one.
fn find(read: &[Decoded], want: &Record) -> Result<Record, Failure> {
    let mut found = Vec::new();
    for (name, decoded) in read {
        match decoded {
            Ok(rec) if rec.same_key(want) => found.push(rec),
            Err(e) if name.as_deref().is_some_and(|n| wire::same_name(n, &want.dns_name)) => {
                return fail(format!("GET /records: {e}"));
            }
            _ => {}
        }
    }
    match found.as_slice() {
        [] => fail(format!(
            "GET /records does not return {} {}{}",
            want.record_type,
            want.dns_name,
            set_id_text(want)
        )),
        [one] => match want.differs_from(one) {
            None => Ok((*one).clone()),
            Some(diff) => fail(format!("{} {} came back with {diff}", want.record_type, want.dns_name)),
        },
        many => fail(format!(
            "GET /records returns {} {} {} times, want once",
            want.record_type,
            want.dns_name,
            many.len()
        )),
    }
}

fn absent(read: &[Decoded], gone: &Record) -> Result<(), Failure> {
    if read.iter().any(|(_, d)| d.as_ref().is_ok_and(|r| r.same_key(gone))) {
        return fail(format!(
            "GET /records still returns {} {} after its delete",
            gone.record_type, gone.dns_name
        ));
    }
    Ok(())
}

fn set_id_text(r: &Record) -> String {
    if r.set_identifier.is_empty() {
        String::new()
    } else {
        format!(" (setIdentifier {:?})", r.set_identifier)
    }
}

fn status_is(answer: &Answer, call: &str, want: u16) -> Result<(), Failure> {
    if answer.status == want {
        Ok(())
    } else {
        fail(format!("{call} answered {}, want {want}", answer.status))
    }
}

/// A repeated change may succeed again or fail softly (the client retries 500–510 on its next loop);
/// external-dns's in-memory provider answers 500 to a second create, update or delete of the same record.
fn repeat_status(answer: &Answer, what: &str) -> Result<(), Failure> {
    match answer.status {
        204 | 500..=510 => Ok(()),
        other => fail(format!(
            "repeating the {what} answered {other}; want 204, or 500-510 (a soft error the client retries)"
        )),
    }
}

fn media_type(answer: &Answer, call: &str) -> Result<(), Failure> {
    match answer.media_type_problem() {
        None => Ok(()),
        Some(problem) => fail(format!("{call}: {problem}")),
    }
}

/// Every endpoint of an answer decodes as the client decodes it.
fn shape(answer: &Answer, call: &str) -> Result<Vec<Decoded>, Failure> {
    let decoded = wire::decode_endpoints(&answer.body).map_err(|e: BodyError| Failure(format!("{call}: {e}")))?;
    let bad: Vec<&ShapeError> = decoded.iter().filter_map(|(_, d)| d.as_ref().err()).collect();
    match bad.as_slice() {
        [] => Ok(decoded),
        [first, ..] => fail(format!(
            "{call}: {} of {} endpoints do not decode; first: {first}",
            bad.len(),
            decoded.len()
        )),
    }
}

fn changes(create: &[&Record], update_old: &[&Record], update_new: &[&Record], delete: &[&Record]) -> Value {
    let list = |records: &[&Record]| Value::Array(records.iter().map(|r| r.to_json()).collect());
    json!({
        "create": list(create),
        "updateOld": list(update_old),
        "updateNew": list(update_new),
        "delete": list(delete),
    })
}

pub(crate) async fn run(config: &Config) -> Result<Report, Error> {
    let mut s = Suite {
        client: Client::new(config)?,
        checks: Vec::new(),
    };

    // Negotiation. Without an answer nothing else can run.
    let answer = match s.client.negotiate().await {
        Ok(answer) => answer,
        Err(e) => {
            s.record("negotiate.status-200", Err(e.into()));
            return Ok(Report {
                zone: config.zone.clone().unwrap_or_else(|| DEFAULT_ZONE.to_owned()),
                checks: s.checks,
            });
        }
    };
    s.record("negotiate.status-200", status_is(&answer, "GET /", 200));
    s.record("negotiate.content-type", media_type(&answer, "GET /"));
    let filter = wire::decode_filter(&answer.body);
    let derived = filter
        .as_ref()
        .ok()
        .and_then(|f| f.include.first())
        .map(|z| z.trim_start_matches('.').trim_end_matches('.').to_ascii_lowercase())
        .filter(|z| !z.is_empty());
    s.record(
        "negotiate.domain-filter",
        filter
            .map(drop)
            .map_err(|e| Failure(format!("GET / domain filter: {e}"))),
    );
    let zone = config
        .zone
        .clone()
        .or(derived)
        .unwrap_or_else(|| DEFAULT_ZONE.to_owned());
    let names = Names::new(&zone);
    let fixtures = fixtures(&names, &zone);

    // The records call before anything is written.
    match s.client.get("/records").await {
        Ok(answer) => {
            s.record("records.status-200", status_is(&answer, "GET /records", 200));
            s.record("records.content-type", media_type(&answer, "GET /records"));
            s.record("records.shape", shape(&answer, "GET /records").map(drop));
        }
        Err(e) => {
            let why = e.to_string();
            for name in ["records.status-200", "records.content-type", "records.shape"] {
                s.record(name, fail(why.clone()));
            }
        }
    }

    // adjustendpoints sees the endpoints first; what it returns is what the client writes and expects back.
    let body = Value::Array(fixtures.iter().map(|f| f.record.to_json()).collect());
    let adjusted: Vec<Decoded> = match s.client.post("/adjustendpoints", body.to_string().into_bytes()).await {
        Ok(answer) => {
            s.record("adjust.status-200", status_is(&answer, "POST /adjustendpoints", 200));
            s.record("adjust.content-type", media_type(&answer, "POST /adjustendpoints"));
            let decoded = shape(&answer, "POST /adjustendpoints");
            let usable = match &decoded {
                Ok(d) if answer.status == 200 => d.clone(),
                _ => Vec::new(),
            };
            s.record("adjust.shape", decoded.map(drop));
            usable
        }
        Err(e) => {
            let why = e.to_string();
            for name in ["adjust.status-200", "adjust.content-type", "adjust.shape"] {
                s.record(name, fail(why.clone()));
            }
            Vec::new()
        }
    };
    let desired: Vec<Record> = fixtures
        .iter()
        .map(|f| {
            adjusted
                .iter()
                .find_map(|(_, d)| d.as_ref().ok().filter(|r| r.same_key(&f.record)))
                .cloned()
                .unwrap_or_else(|| f.record.clone())
        })
        .collect();

    // The A record alone: the one write every server must take (protocol). Then every other fixture in a
    // request of its own, so a provider that refuses one type (or a whole batch for it) reports that
    // capability alone, and the protocol checks do not depend on what it can store.
    let mut landed: Vec<Result<(), Failure>> = Vec::new();
    for (i, record) in desired.iter().enumerate() {
        let answer = s.apply(&changes(&[record], &[], &[], &[])).await;
        let what = format!("POST /records (create {} {})", record.record_type, record.dns_name);
        let status = answer.and_then(|a| status_is(&a, &what, 204));
        if i == 0 {
            s.record(
                "apply.status-204",
                status.as_ref().map(|_| ()).map_err(|Failure(w)| Failure(w.clone())),
            );
        }
        landed.push(status);
    }
    let read = s.read().await;
    // Accepted writes, which cleanup deletes even when GET /records does not show them: a provider may store
    // types it does not read back (external-dns's rfc2136 writes SRV and NAPTR, and lists neither).
    let accepted: Vec<Record> = desired
        .iter()
        .zip(&landed)
        .filter(|(_, status)| status.is_ok())
        .map(|(r, _)| r.clone())
        .collect();
    for ((fixture, want), status) in fixtures.iter().zip(&desired).zip(landed) {
        // What came back decides: a server may store a record and still answer the wrong status, which
        // apply.status-204 reports.
        let result = match (&read, status) {
            (Ok(read), status) => find(read, want).map(drop).map_err(|Failure(why)| match status {
                Err(Failure(refused)) => Failure(format!("{refused}; {why}")),
                Ok(()) => Failure(why),
            }),
            (Err(Failure(why)), _) => fail(why.clone()),
        };
        s.record(fixture.check, result);
    }

    // Go's client sends null for empty lists and maps; a server must take them.
    let null_record = Record::new(names.name("null"), "A", &["192.0.2.6"]);
    let null_body = json!({
        "create": [{
            "dnsName": null_record.dns_name,
            "targets": null_record.targets,
            "recordType": "A",
            "setIdentifier": "",
            "recordTTL": null,
            "labels": null,
            "providerSpecific": null,
        }],
        "updateOld": null,
        "updateNew": null,
        "delete": null,
    });
    let call = "POST /records with null lists and fields";
    let result = s.apply_then_find(&null_body, call, &null_record).await;
    s.record("apply.accepts-null", result);

    // Every key of the changes object is optional.
    let result = async {
        let answer = s.apply(&json!({})).await?;
        status_is(&answer, "POST /records with {}", 204)
    }
    .await;
    s.record("apply.empty", result);

    // Reading twice gives the same records.
    let result = async {
        let canonical = |read: Vec<Decoded>| {
            let mut ours: Vec<String> = read
                .into_iter()
                .filter(|(name, _)| name.as_deref().is_some_and(|n| names.ours(n)))
                .map(|(_, d)| match d {
                    Ok(mut r) => {
                        r.targets.sort();
                        r.provider_specific.sort();
                        format!("{r:?}")
                    }
                    Err(e) => e.to_string(),
                })
                .collect();
            ours.sort();
            ours
        };
        let first = canonical(s.read().await?);
        let second = canonical(s.read().await?);
        if first == second {
            Ok(())
        } else {
            fail(format!(
                "two reads with no write between differ: first {first:?}, then {second:?}"
            ))
        }
    }
    .await;
    s.record("records.read-twice", result);

    // The same create again must not duplicate the record.
    let a = &desired[0];
    let result = async {
        let answer = s.apply(&changes(&[a], &[], &[], &[])).await?;
        repeat_status(&answer, "create")?;
        find(&s.read().await?, a).map(drop)
    }
    .await;
    s.record("apply.create-twice", result);

    // Update: the old side is the record as the server returned it, as the client's plan would send it.
    let mut new = a.clone();
    new.targets = vec!["192.0.2.2".to_owned(), "192.0.2.3".to_owned()];
    new.ttl = 600;
    let old = match s.read().await {
        Ok(read) => find(&read, a).unwrap_or_else(|_| a.clone()),
        Err(_) => a.clone(),
    };
    let update = changes(&[], &[&old], &[&new], &[]);
    let result = s.apply_then_find(&update, "POST /records (update)", &new).await;
    s.record("apply.update", result);
    let result = async {
        let answer = s.apply(&update).await?;
        repeat_status(&answer, "update")?;
        find(&s.read().await?, &new).map(drop)
    }
    .await;
    s.record("apply.update-twice", result);

    // Delete what the server holds now.
    let current = match s.read().await {
        Ok(read) => find(&read, &new).unwrap_or_else(|_| new.clone()),
        Err(_) => new.clone(),
    };
    let delete = changes(&[], &[], &[], &[&current]);
    let result = async {
        let answer = s.apply(&delete).await?;
        status_is(&answer, "POST /records (delete)", 204)?;
        absent(&s.read().await?, &current)
    }
    .await;
    s.record("apply.delete", result);
    let result = async {
        let answer = s.apply(&delete).await?;
        repeat_status(&answer, "delete")?;
        absent(&s.read().await?, &current)
    }
    .await;
    s.record("apply.delete-twice", result);

    // Malformed requests are the client's fault: 4xx, never a success and never a retryable 5xx.
    for (check, path, body) in [
        ("errors.bad-json-records", "/records", &br#"{"create":["#[..]),
        ("errors.bad-json-adjust", "/adjustendpoints", &br#"[{"dnsName":"#[..]),
    ] {
        let result = async {
            let answer = s.client.post(path, body.to_vec()).await?;
            if (400..500).contains(&answer.status) {
                Ok(())
            } else {
                fail(format!(
                    "POST {path} with truncated JSON answered {}, want 4xx",
                    answer.status
                ))
            }
        }
        .await;
        s.record(check, result);
    }

    let mut written = desired.clone();
    written.extend([null_record, new]);
    let result = cleanup(&s, &names, &written, &accepted).await;
    s.record("cleanup", result);
    Ok(Report { zone, checks: s.checks })
}

/// Deletes every record of this run the server still returns, exactly as returned (or, when it does not
/// decode, as written), and checks none is left. A server may return TXT values quoted differently from how
/// it matches them on delete (external-dns's rfc2136 provider does), so what is left after the first delete
/// is deleted again with the values as written, quoted and unquoted.
async fn cleanup(s: &Suite, names: &Names, written: &[Record], accepted: &[Record]) -> Result<(), Failure> {
    let ours = |read: Vec<Decoded>| -> Vec<(String, Result<Record, ShapeError>)> {
        read.into_iter()
            .filter_map(|(name, d)| name.filter(|n| names.ours(n)).map(|n| (n, d)))
            .collect()
    };
    let mut left = ours(s.read().await?);
    // Accepted but never listed: deleted as written, one request each, whatever the answer (a server may
    // refuse to delete what it does not list).
    for record in accepted {
        let listed = left.iter().any(|(name, d)| {
            wire::same_name(name, &record.dns_name) && d.as_ref().map_or(true, |r| r.same_key(record))
        });
        if !listed {
            let _ = s.apply(&changes(&[], &[], &[], &[record])).await;
        }
    }
    for attempt in 0..4 {
        if left.is_empty() {
            return Ok(());
        }
        let mut delete = Vec::new();
        for (name, decoded) in &left {
            let as_written = written
                .iter()
                .find(|w| wire::same_name(&w.dns_name, name) && decoded.as_ref().map_or(true, |r| r.same_key(w)));
            let record = match (decoded, attempt) {
                (Ok(record), 0) => record.clone(),
                (Err(e), 0) if as_written.is_none() => {
                    return fail(format!("cannot delete what GET /records returns: {e}"));
                }
                (decoded, _) => {
                    let Some(w) = as_written.or(decoded.as_ref().ok()) else {
                        continue;
                    };
                    let mut r = w.clone();
                    if let Ok(got) = decoded {
                        r.ttl = got.ttl;
                    }
                    r.targets = r.targets.iter().map(|t| respell(t, attempt)).collect();
                    r
                }
            };
            delete.push(record);
        }
        // The answer is not judged (apply.delete does that): a delete whose TXT spelling the server does not
        // match may be refused, and the next attempt spells it another way.
        let refs: Vec<&Record> = delete.iter().collect();
        s.apply(&changes(&[], &[], &[], &refs)).await?;
        left = ours(s.read().await?);
    }
    if left.is_empty() {
        Ok(())
    } else {
        let still: Vec<String> = left.into_iter().map(|(n, _)| n).collect();
        fail(format!("records left behind after the cleanup delete: {still:?}"))
    }
}

/// A TXT value as written (attempt 1), without its outer quotes (2), or quoted (3).
fn respell(value: &str, attempt: usize) -> String {
    let bare = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    match attempt {
        2 => bare.to_owned(),
        3 => format!("\"{bare}\""),
        _ => value.to_owned(),
    }
}
