//! external-dns's `connector` source (`--source=connector --connector-source-server=HOST:PORT`): each sync
//! it connects to a TCP server and reads the endpoints, gob-encoded. Serving it runs external-dns with
//! exactly the records a test chooses, sync after sync, and no Kubernetes API server (`--source=fake`
//! invents new random names every sync; `service` or `crd` need a whole control plane).

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// An endpoint as the connector source receives it.
#[derive(Debug, Clone)]
pub struct GobEndpoint {
    /// `DNSName`.
    pub dns_name: &'static str,
    /// `Targets`.
    pub targets: Vec<String>,
    /// `RecordType`.
    pub record_type: &'static str,
    /// `RecordTTL`; 0 is unset.
    pub ttl: i64,
}

impl GobEndpoint {
    /// `dns_name` of `record_type` with `targets` at `ttl` (0: unset).
    pub fn new(dns_name: &'static str, record_type: &'static str, targets: &[&str], ttl: i64) -> GobEndpoint {
        GobEndpoint {
            dns_name,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            record_type,
            ttl,
        }
    }
}

/// Go's gob encoding of `[]*endpoint.Endpoint`, the connector source's wire format, for the fields these
/// tests use. Gob matches struct fields by name, so a struct of four fields decodes into external-dns's
/// `Endpoint`.
pub mod gob {
    use super::GobEndpoint;

    fn uint(out: &mut Vec<u8>, v: u64) {
        if v < 128 {
            out.push(v as u8);
            return;
        }
        let bytes = v.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push((256 - (8 - skip)) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }

    fn int(out: &mut Vec<u8>, v: i64) {
        let u = if v < 0 { ((!v as u64) << 1) | 1 } else { (v as u64) << 1 };
        uint(out, u);
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        uint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }

    /// One message: its length, then the (negative for a type definition) type id and the body.
    fn message(out: &mut Vec<u8>, id: i64, body: &[u8]) {
        let mut m = Vec::new();
        int(&mut m, id);
        m.extend_from_slice(body);
        uint(out, m.len() as u64);
        out.extend_from_slice(&m);
    }

    const STRING: i64 = 6;
    const INT: i64 = 2;
    const STRINGS: i64 = 65;
    const ENDPOINT: i64 = 66;
    const ENDPOINTS: i64 = 67;

    /// wireType{SliceT: &sliceType{CommonType{name, id}, elem}}.
    fn slice_type(name: &str, id: i64, elem: i64) -> Vec<u8> {
        let mut b = vec![2, 1, 1];
        string(&mut b, name);
        b.push(1);
        int(&mut b, id);
        b.push(0); // end CommonType
        b.push(1);
        int(&mut b, elem);
        b.extend_from_slice(&[0, 0]); // end sliceType, end wireType
        b
    }

    /// wireType{StructT: &structType{CommonType{"Endpoint", id}, fields}}.
    fn endpoint_type() -> Vec<u8> {
        let mut b = vec![3, 1, 1];
        string(&mut b, "Endpoint");
        b.push(1);
        int(&mut b, ENDPOINT);
        b.push(0);
        let fields = [
            ("DNSName", STRING),
            ("Targets", STRINGS),
            ("RecordType", STRING),
            ("RecordTTL", INT),
        ];
        b.push(1);
        uint(&mut b, fields.len() as u64);
        for (name, id) in fields {
            b.push(1);
            string(&mut b, name);
            b.push(1);
            int(&mut b, id);
            b.push(0);
        }
        b.extend_from_slice(&[0, 0]);
        b
    }

    /// The gob stream of `endpoints` as one `[]*endpoint.Endpoint` value.
    pub fn encode(endpoints: &[GobEndpoint]) -> Vec<u8> {
        let mut out = Vec::new();
        message(&mut out, -STRINGS, &slice_type("[]string", STRINGS, STRING));
        message(&mut out, -ENDPOINT, &endpoint_type());
        message(
            &mut out,
            -ENDPOINTS,
            &slice_type("[]*endpoint.Endpoint", ENDPOINTS, ENDPOINT),
        );
        // A top-level value that is not a struct is sent as field 0 of a struct: a zero delta first.
        let mut v = vec![0];
        uint(&mut v, endpoints.len() as u64);
        for e in endpoints {
            v.push(1);
            string(&mut v, e.dns_name);
            v.push(1);
            uint(&mut v, e.targets.len() as u64);
            for t in &e.targets {
                string(&mut v, t);
            }
            v.push(1);
            string(&mut v, e.record_type);
            if e.ttl != 0 {
                v.push(1);
                int(&mut v, e.ttl);
            }
            v.push(0);
        }
        message(&mut out, ENDPOINTS, &v);
        out
    }

    #[test]
    fn gob_encodes_go_s_documented_example_shapes() {
        // From the encoding/gob documentation: 22 and 33 as signed ints, -65 as a type id.
        let mut b = Vec::new();
        int(&mut b, 22);
        int(&mut b, 33);
        int(&mut b, -65);
        uint(&mut b, 256);
        assert_eq!(b, [0x2c, 0x42, 0xff, 0x81, 0xfe, 0x01, 0x00]);
    }
}

/// A connector-source server on a free port of 127.0.0.1 (returned): every connection gets the current
/// endpoints, gob-encoded, then is closed.
pub fn serve(endpoints: Arc<Mutex<Vec<GobEndpoint>>>) -> u16 {
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => panic!("{e}"),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let bytes = endpoints.lock().map(|e| gob::encode(&e)).unwrap_or_default();
            let _ = conn.write_all(&bytes);
        }
    });
    port
}
