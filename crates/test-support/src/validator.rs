//! A validating resolver for the DNSSEC tests: BIND 9 (`named`) on a free port of 127.0.0.1 with one
//! zone's DS as its only trust anchor, forwarding every query to the server under test, so each answer it
//! gives is one it checked: `ad` when it validated, SERVFAIL when the signatures do not hold (bogus).

use std::ops::Deref;
use std::process::Command;

use crate::loopback::{LoopbackServer, nonce, server_dir, started};
use crate::{dig, free_port, need};

/// A running validating BIND; killed when dropped. Its port and log are the [`LoopbackServer`]'s.
pub struct Validator {
    server: LoopbackServer,
}

impl Deref for Validator {
    type Target = LoopbackServer;

    fn deref(&self) -> &LoopbackServer {
        &self.server
    }
}

/// What the resolver said to one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// The response code as dig prints it (`NOERROR`, `NXDOMAIN`, `SERVFAIL`).
    pub status: String,
    /// AD: every record of the answer validated from the trust anchor.
    pub authenticated: bool,
    /// The answer section's records as `dig +noall +answer` prints them, RRSIGs left out.
    pub answers: Vec<String>,
}

impl Validator {
    /// BIND validating `zone` (no trailing dot) from `ds` (`KEYTAG ALGORITHM DIGESTTYPE HEX`, as a parent
    /// holds it), forwarding everything to the server on 127.0.0.1:`upstream`; panics with its log if it
    /// does not come up.
    pub fn start(zone: &str, ds: &str, upstream: u16) -> Validator {
        let server = started("the validating BIND", || Self::try_start(zone, ds, upstream));
        Validator { server }
    }

    fn try_start(zone: &str, ds: &str, upstream: u16) -> Result<LoopbackServer, String> {
        let dir = server_dir("validator")?;
        let port = free_port();
        let nonce = nonce(port);
        let dp = dir.path().display().to_string();
        let mut fields = ds.split_whitespace();
        let (Some(tag), Some(alg), Some(digest_type), Some(digest)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("not a DS: {ds}"));
        };
        // Every name goes to the server under test (a global forwarder: nothing leaves loopback); the
        // zone's DS is the only trust anchor, so the zone is validated and every other name is insecure.
        let conf = format!(
            "options {{\n directory \"{dp}\";\n pid-file \"{dp}/named.pid\";\n session-keyfile \"{dp}/session.key\";\n \
             managed-keys-directory \"{dp}\";\n listen-on port {port} {{ 127.0.0.1; }};\n listen-on-v6 {{ none; }};\n \
             recursion yes;\n allow-query {{ any; }};\n allow-recursion {{ any; }};\n dnssec-validation yes;\n \
             forward only;\n forwarders {{ 127.0.0.1 port {upstream}; }};\n qname-minimization off;\n \
             max-cache-ttl 1;\n max-ncache-ttl 1;\n version \"{nonce}\";\n}};\ncontrols {{ }};\n\
             trust-anchors {{ {zone}. static-ds {tag} {alg} {digest_type} \"{digest}\"; }};\n"
        );
        let path = dir.path().join("named.conf");
        std::fs::write(&path, conf).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(need("named"));
        cmd.arg("-g").arg("-c").arg(&path);
        let mut server = LoopbackServer::spawn(&mut cmd, port, dir)?;
        server.wait_ready(&nonce, || true)?;
        Ok(server)
    }

    /// Asks the resolver for `name TYPE` (recursion desired, DO set) and reads what it validated.
    pub fn ask(&self, name: &str, rtype: &str) -> Validated {
        ask(self.port, name, rtype)
    }
}

/// Asks the validating resolver `resolver` (a [`Validator`] or a [`crate::unbound::Unbound`], both
/// dereferencing to their server) for `name TYPE` and asserts it validated the answer with `status` (the
/// AD flag set), panicking with the resolver's log otherwise; the answers. The DNSSEC suites' one check
/// of a secure answer, whichever resolver they run.
pub fn secure(resolver: &LoopbackServer, name: &str, rtype: &str, status: &str) -> Vec<String> {
    let v = ask(resolver.port, name, rtype);
    assert_eq!(v.status, status, "{name} {rtype}: {v:?}\n{}", resolver.log());
    assert!(
        v.authenticated,
        "{name} {rtype} not validated: {v:?}\n{}",
        resolver.log()
    );
    v.answers
}

/// Asks the validating resolver on 127.0.0.1:`port` for `name TYPE` (recursion desired, DO set) and reads
/// what it validated: what BIND's and Unbound's helpers ([`crate::unbound`]) both answer.
pub fn ask(port: u16, name: &str, rtype: &str) -> Validated {
    let out = dig::dig(port, &["+rec", "+dnssec", "+time=5", name, rtype]);
    let status = out
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .and_then(|s| s.split(',').next())
        .unwrap_or("NO ANSWER")
        .to_owned();
    let authenticated = out
        .lines()
        .find_map(|l| l.split(";; flags: ").nth(1))
        .and_then(|s| s.split(';').next())
        .is_some_and(|flags| flags.split_whitespace().any(|f| f == "ad"));
    let answers = answer_section(&out);
    Validated {
        status,
        authenticated,
        answers,
    }
}

/// The records of dig's ANSWER SECTION, RRSIGs left out, whitespace made single spaces.
fn answer_section(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.starts_with(";; ANSWER SECTION:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.contains(" RRSIG "))
        .collect()
}

/// What BIND's `delv` says of `name TYPE` asked of the server on 127.0.0.1:`port` (no resolver between):
/// it validates the answer itself, with `ds` (`ZONE. DS KEYTAG ALGORITHM DIGESTTYPE HEX`) as its only trust
/// anchor. Its whole output: `; fully validated` (or `; negative response, fully validated`) when the
/// answer or its denial validated, `resolution failed` when it did not.
pub fn delv(port: u16, ds: &str, name: &str, rtype: &str) -> String {
    let fields: Vec<&str> = ds.split_whitespace().collect();
    let [zone, "DS", tag, alg, digest_type, digest] = fields.as_slice() else {
        panic!("not a DS: {ds}");
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    let anchors = dir.path().join("anchors");
    let text = format!("trust-anchors {{ {zone} static-ds {tag} {alg} {digest_type} \"{digest}\"; }};\n");
    std::fs::write(&anchors, text).unwrap_or_else(|e| panic!("{}: {e}", anchors.display()));
    let out = std::process::Command::new(need("delv"))
        .arg("@127.0.0.1")
        .args(["-p", &port.to_string(), "-a"])
        .arg(&anchors)
        .arg(format!("+root={}", zone.trim_end_matches('.')))
        .args(["+nomtrace", "+norrcomments", name, rtype])
        .output()
        .unwrap_or_else(|e| panic!("cannot run delv: {e}"));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
