//! What the tests read from a DNS server on 127.0.0.1, always with queries (never its files): answers with
//! `dig`, whole zones by AXFR (TTLs included), and A queries sent straight over UDP for latency figures.

use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::need;

/// The TSIG key name every test zone accepts (hmac-sha256).
pub const KEY_NAME: &str = "externaldns-key";
/// The base64 secret of [`KEY_NAME`].
pub const SECRET: &str = "c2VjcmV0LXRzaWcta2V5LWZvci1pbnRlZ3JhdGlvbi10ZXN0cw==";

/// `dig @127.0.0.1 -p PORT +time=2 +tries=1 +norec ARGS...`: its output, empty when it printed nothing.
pub fn dig(port: u16, args: &[&str]) -> String {
    let out = Command::new(need("dig"))
        .args(["@127.0.0.1", "-p", &port.to_string(), "+time=2", "+tries=1", "+norec"])
        .args(args)
        .output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => panic!("cannot run dig: {e}"),
    }
}

/// The answers to `name TYPE` over TCP, sorted (`dig +short` form: TXT values quoted).
pub fn short(port: u16, name: &str, rtype: &str) -> Vec<String> {
    short_lines(&dig(port, &["+tcp", "+short", name, rtype]))
}

/// [`short`] over UDP, as a resolver first asks (the built-in server's tests time the UDP answer).
pub fn short_udp(port: u16, name: &str, rtype: &str) -> Vec<String> {
    short_lines(&dig(port, &["+short", name, rtype]))
}

/// The answers to `name TYPE` (TLSA, SVCB or HTTPS) over TCP, each in the canonical text
/// (`extdns_endpoint::canonical_target`) of the server's own spelling, sorted: upper-case hex, quoted
/// `alpn` or a server's param order then compare equal to what a source wrote.
pub fn typed(port: u16, name: &str, rtype: &str) -> Vec<String> {
    let record_type = extdns_endpoint::RecordType::from(rtype);
    let mut v: Vec<String> = short(port, name, rtype)
        .iter()
        .map(|answer| match extdns_endpoint::canonical_target(&record_type, answer) {
            Ok(Some(canonical)) => canonical,
            Ok(None) => panic!("{rtype} has no typed record data"),
            Err(e) => panic!("the server's answer does not parse: {e}"),
        })
        .collect();
    v.sort();
    v
}

/// `dig +short` output as sorted answers, comments and blank lines dropped.
fn short_lines(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// The TTL of the `name TYPE` answer.
pub fn ttl(port: u16, name: &str, rtype: &str) -> Option<u32> {
    dig(port, &["+tcp", "+noall", "+answer", name, rtype])
        .lines()
        .find_map(|l| l.split_whitespace().nth(1).and_then(|t| t.parse().ok()))
}

/// The zone's SOA serial, read with a query.
pub fn serial(port: u16, zone: &str) -> u32 {
    let soa = short(port, zone, "SOA");
    soa.first()
        .and_then(|s| s.split_whitespace().nth(2))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no SOA for {zone} on port {port}: {soa:?}"))
}

/// One resource record of an AXFR, as `name ttl type rdata` (class IN dropped, names lower-case).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    /// Owner name, lower-case, no trailing dot.
    pub name: String,
    /// TTL in seconds.
    pub ttl: u32,
    /// Record type (`A`, `TXT`, ...).
    pub rtype: String,
    /// Record data as dig prints it.
    pub rdata: String,
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {} {}", self.name, self.ttl, self.rtype, self.rdata)
    }
}

/// `zone` from the server on `port` by AXFR signed with the test key ([`KEY_NAME`]),
/// sorted, without the SOA (its serial counts changes, not content).
pub fn axfr(port: u16, zone: &str) -> Result<Vec<Record>> {
    let key = format!("hmac-sha256:{KEY_NAME}:{SECRET}");
    let out = Command::new(need("dig"))
        .args(["@127.0.0.1", "-p", &port.to_string(), "+tcp", "+noall", "+answer"])
        .args(["-y", &key, zone, "AXFR"])
        .output()
        .context("running dig")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("Transfer failed") || !out.status.success() {
        bail!("AXFR of {zone} failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut records: Vec<Record> = text
        .lines()
        .filter_map(parse_record)
        .filter(|r| r.rtype != "SOA")
        .collect();
    records.sort();
    records.dedup();
    Ok(records)
}

fn parse_record(line: &str) -> Option<Record> {
    let mut words = line.split_whitespace();
    let name = words.next()?.to_ascii_lowercase();
    let ttl = words.next()?.parse().ok()?;
    let class = words.next()?;
    if class != "IN" {
        return None;
    }
    let rtype = words.next()?.to_string();
    let rdata = words.collect::<Vec<_>>().join(" ");
    Some(Record {
        name,
        ttl,
        rtype,
        rdata,
    })
}

/// The records of `name` (fully qualified, with or without the trailing dot) in a zone listing.
pub fn records_of<'a>(zone: &'a [Record], name: &str) -> Vec<&'a Record> {
    let fq = format!("{}.", name.trim_end_matches('.'));
    zone.iter().filter(|r| r.name == fq).collect()
}

/// The TXT records of a zone that carry `owner`'s ownership label.
pub fn owned_txt<'a>(zone: &'a [Record], owner: &str) -> Vec<&'a Record> {
    let label = format!("external-dns/owner={owner}");
    zone.iter()
        .filter(|r| {
            r.rtype == "TXT" && (r.rdata.contains(&format!("{label},")) || r.rdata.contains(&format!("{label}\"")))
        })
        .collect()
}

/// The names (without the trailing dot) of the TXT records carrying `owner`'s ownership label, sorted, each
/// once.
pub fn owned_names(zone: &[Record], owner: &str) -> Vec<String> {
    let mut names: Vec<String> = owned_txt(zone, owner)
        .into_iter()
        .map(|r| r.name.trim_end_matches('.').to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A DNS query sent straight over UDP (no process per query), for latency measurements: the number of
/// answer records for `name A`, or `None` when the server did not answer within `timeout`.
pub fn query_a_count(port: u16, name: &str, timeout: Duration) -> Result<Option<u16>> {
    Ok(query_a_raw(port, name, timeout)?.map(|r| u16::from_be_bytes([r[6], r[7]])))
}

/// The addresses of `name A` (none for NXDOMAIN or no data), sorted, or `None` when the server did not
/// answer within `timeout`.
pub fn query_a(port: u16, name: &str, timeout: Duration) -> Result<Option<Vec<Ipv4Addr>>> {
    match query_a_raw(port, name, timeout)? {
        Some(r) => Ok(Some(
            a_records(&r).with_context(|| format!("a malformed answer for {name} A"))?,
        )),
        None => Ok(None),
    }
}

/// Sends `name A IN` and returns the response (at least a header, with our id).
fn query_a_raw(port: u16, name: &str, timeout: Duration) -> Result<Option<Vec<u8>>> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.set_read_timeout(Some(timeout))?;
    let id: u16 = (std::process::id() as u16) ^ 0x5a5a;
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]); // no recursion, 1 question
    for label in name.trim_end_matches('.').split('.') {
        let len = u8::try_from(label.len()).context("label too long")?;
        q.push(len);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]); // root, type A, class IN
    socket.send_to(&q, ("127.0.0.1", port))?;
    let mut buf = [0u8; 4096];
    loop {
        let n = match socket.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        if n < 12 || buf[0..2] != id.to_be_bytes() {
            continue;
        }
        return Ok(Some(buf[..n].to_vec()));
    }
}

/// The A records in the answer section of a response, sorted.
fn a_records(r: &[u8]) -> Option<Vec<Ipv4Addr>> {
    /// The offset after the (possibly compressed) name starting at `at`.
    fn skip_name(r: &[u8], mut at: usize) -> Option<usize> {
        loop {
            let len = *r.get(at)?;
            match len {
                0 => return Some(at + 1),
                l if l & 0xc0 == 0xc0 => return Some(at + 2),
                l => at += 1 + usize::from(l),
            }
        }
    }
    let u16_at = |at: usize| Some(u16::from_be_bytes([*r.get(at)?, *r.get(at + 1)?]));
    let questions = u16_at(4)?;
    let answers = u16_at(6)?;
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(r, at)? + 4;
    }
    let mut found = Vec::new();
    for _ in 0..answers {
        at = skip_name(r, at)?;
        let (rtype, len) = (u16_at(at)?, usize::from(u16_at(at + 8)?));
        let rdata = r.get(at + 10..at + 10 + len)?;
        if rtype == 1 {
            found.push(Ipv4Addr::from(<[u8; 4]>::try_from(rdata).ok()?));
        }
        at += 10 + len;
    }
    found.sort();
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axfr_lines_become_records() -> Result<()> {
        let r = parse_record("web.example.org.\t300\tIN\tTXT\t\"heritage=external-dns,external-dns/owner=e2e\"")
            .context("not parsed")?;
        assert_eq!(r.name, "web.example.org.");
        assert_eq!(r.ttl, 300);
        assert_eq!(r.rtype, "TXT");
        assert_eq!(r.rdata, "\"heritage=external-dns,external-dns/owner=e2e\"");
        assert_eq!(
            parse_record("externaldns-key. 0 ANY TSIG hmac-sha256. 1 300 32 x= 1 NOERROR 0"),
            None
        );
        assert_eq!(parse_record(";; XFR size: 6 records"), None);
        Ok(())
    }

    #[test]
    fn a_records_are_read_from_the_answer_section() {
        // Header (id 1, 1 question, 3 answers), question `a.org A IN`, then an A answer by compression
        // pointer, a CNAME (skipped) and an A answer with a full name.
        let mut r = vec![0, 1, 0x84, 0, 0, 1, 0, 3, 0, 0, 0, 0];
        r.extend_from_slice(&[1, b'a', 3, b'o', b'r', b'g', 0, 0, 1, 0, 1]);
        r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]);
        r.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
        r.extend_from_slice(&[
            1, b'a', 3, b'o', b'r', b'g', 0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1,
        ]);
        assert_eq!(
            a_records(&r),
            Some(vec![Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(192, 0, 2, 7)])
        );
        // NXDOMAIN: no answers.
        let nx = [
            0, 1, 0x84, 3, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 3, b'o', b'r', b'g', 0, 0, 1, 0, 1,
        ];
        assert_eq!(a_records(&nx), Some(vec![]));
        // Cut short inside an answer.
        assert_eq!(a_records(&r[..r.len() - 2]), None);
    }

    #[test]
    fn owned_txt_matches_the_owner_label_only() {
        let zone: Vec<Record> = [
            "a-x.example.org. 0 IN TXT \"heritage=external-dns,external-dns/owner=e2e\"",
            "a-y.example.org. 0 IN TXT \"heritage=external-dns,external-dns/owner=other\"",
            "a-z.example.org. 0 IN TXT \"heritage=external-dns,external-dns/owner=e2e-2\"",
        ]
        .iter()
        .filter_map(|l| parse_record(l))
        .collect();
        assert_eq!(zone.len(), 3);
        assert_eq!(owned_txt(&zone, "e2e").len(), 1);
        assert_eq!(records_of(&zone, "a-y.example.org").len(), 1);
    }
}
