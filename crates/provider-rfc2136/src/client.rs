//! The two DNS conversations the provider has with its servers: a zone transfer (AXFR) to read and UPDATE
//! messages to write, each TSIG-signed unless `--rfc2136-insecure`, over connections kept open for a sync.

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name, Record, RecordType as WireType};

use crate::tls::TlsConnector;
use crate::transport::{Connection, ServerPicker, TransportError};
use extdns_dns_wire::tsig::{Key, TsigFailure, Verifier, unix_now};

/// How one exchange with the servers ended, when it did not end well.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExchangeError {
    /// No server could be reached (the last server's error).
    #[error(transparent)]
    Transport(TransportError),
    /// The server refused our TSIG key.
    #[error("{server} rejected the TSIG key: {detail}")]
    Auth { server: String, detail: String },
    /// The server answered with an error rcode.
    #[error("{server} answered {}", rcode_name(*.rcode))]
    Rcode { server: String, rcode: ResponseCode },
    /// The answer cannot be trusted or read.
    #[error("cannot trust the answer from {server}: {detail}")]
    BadAnswer { server: String, detail: String },
}

/// The short rcode mnemonic users see in server logs and `dig` output.
pub fn rcode_name(rcode: ResponseCode) -> String {
    match u16::from(rcode) {
        0 => "NOERROR".into(),
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        3 => "NXDOMAIN".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        6 => "YXDOMAIN".into(),
        7 => "YXRRSET".into(),
        8 => "NXRRSET".into(),
        9 => "NOTAUTH".into(),
        10 => "NOTZONE".into(),
        n => format!("RCODE{n}"),
    }
}

/// Connections to the servers for the duration of one operation, opened on first use.
pub struct Session<'a> {
    picker: &'a ServerPicker,
    tls: Option<&'a TlsConnector>,
    key: Option<&'a Key>,
    timeout: std::time::Duration,
    conns: Vec<Option<Connection>>,
}

impl<'a> Session<'a> {
    pub fn new(
        picker: &'a ServerPicker,
        tls: Option<&'a TlsConnector>,
        key: Option<&'a Key>,
        timeout: std::time::Duration,
    ) -> Self {
        Session {
            picker,
            tls,
            key,
            timeout,
            conns: (0..picker.len()).map(|_| None).collect(),
        }
    }

    async fn connection(&mut self, index: usize) -> Result<&mut Connection, TransportError> {
        if self.conns[index].is_none() {
            let conn = Connection::open(self.picker.server(index), self.tls, self.timeout).await?;
            self.conns[index] = Some(conn);
        }
        match self.conns[index].as_mut() {
            Some(c) => Ok(c),
            None => Err(TransportError::Io {
                server: self.picker.server(index).into(),
                source: std::io::ErrorKind::NotConnected.into(),
            }),
        }
    }

    /// Send one UPDATE and wait for its answer, failing over between servers on transport errors.
    /// Updates are idempotent (adding an existing record or deleting a missing one changes nothing), so a
    /// message whose answer was lost can be sent again.
    pub async fn update(&mut self, zone: &Name, updates: &[Record]) -> Result<(), ExchangeError> {
        let mut last = None;
        for index in self.picker.order() {
            // A kept-open connection the server has closed in the meantime gets one fresh retry.
            for attempt in 0..2 {
                let reused = self.conns[index].is_some();
                let mut msg = update_message(zone, updates);
                match self.exchange_one(index, &mut msg).await {
                    Ok(()) => return Ok(()),
                    Err(ExchangeError::Transport(e)) => {
                        self.conns[index] = None;
                        last = Some(e);
                        if !(reused && attempt == 0) {
                            break;
                        }
                    }
                    Err(other) => return Err(other),
                }
            }
            self.picker.failed(index);
        }
        Err(ExchangeError::Transport(last.unwrap_or(TransportError::NoServer)))
    }

    async fn exchange_one(&mut self, index: usize, msg: &mut Message) -> Result<(), ExchangeError> {
        let server = self.picker.server(index).to_string();
        let now = unix_now();
        let (wire, request_mac) = sign(self.key, msg, now, &server)?;
        let key = self.key;
        let conn = self.connection(index).await.map_err(ExchangeError::Transport)?;
        conn.send(&wire).await.map_err(ExchangeError::Transport)?;
        let answer = conn.receive().await.map_err(ExchangeError::Transport)?;
        let response = decode(&answer, msg.metadata.id, &server)?;
        if let Some(key) = key {
            let mut verifier = Verifier::new(key, request_mac, now);
            match verifier.check(&answer) {
                Ok(_) => {}
                Err(TsigFailure::Rejected(detail)) => return Err(ExchangeError::Auth { server, detail }),
                // An unsigned REFUSED/NOTAUTH answer is the server's verdict; report the rcode.
                Err(TsigFailure::BadResponse(_)) if response.metadata.response_code != ResponseCode::NoError => {}
                Err(TsigFailure::BadResponse(detail)) => return Err(ExchangeError::BadAnswer { server, detail }),
            }
        }
        match response.metadata.response_code {
            ResponseCode::NoError => Ok(()),
            rcode => Err(ExchangeError::Rcode { server, rcode }),
        }
    }

    /// Transfer a whole zone, each record folded into a fresh `start()` by `add` as it arrives, in the
    /// order the server sent them (the SOA first), so the zone is never held as wire records. A server that
    /// fails mid-transfer leaves nothing behind: the next one starts from `start()` again.
    pub async fn axfr<T>(
        &mut self,
        zone: &Name,
        start: impl Fn() -> T,
        mut add: impl FnMut(&mut T, Record),
    ) -> Result<T, ExchangeError> {
        let mut last = None;
        for index in self.picker.order() {
            match self.axfr_from(index, zone, start(), &mut add).await {
                Ok(records) => return Ok(records),
                Err(ExchangeError::Transport(e)) => {
                    self.conns[index] = None;
                    self.picker.failed(index);
                    last = Some(e);
                }
                Err(other) => {
                    self.conns[index] = None;
                    return Err(other);
                }
            }
        }
        Err(ExchangeError::Transport(last.unwrap_or(TransportError::NoServer)))
    }

    async fn axfr_from<T>(
        &mut self,
        index: usize,
        zone: &Name,
        mut into: T,
        add: &mut impl FnMut(&mut T, Record),
    ) -> Result<T, ExchangeError> {
        let server = self.picker.server(index).to_string();
        let mut msg = Message::new(random_id(), MessageType::Query, OpCode::Query);
        let mut q = Query::query(zone.clone(), WireType::AXFR);
        q.set_query_class(DNSClass::IN);
        msg.add_query(q);
        let now = unix_now();
        let (wire, request_mac) = sign(self.key, &mut msg, now, &server)?;
        let key = self.key;
        let id = msg.metadata.id;
        // A transfer gets its own connection: some servers close it when the transfer ends.
        self.conns[index] = None;
        let conn = self.connection(index).await.map_err(ExchangeError::Transport)?;
        conn.send(&wire).await.map_err(ExchangeError::Transport)?;
        let mut verifier = key.map(|k| Verifier::new(k, request_mac, now));
        let mut first = true;
        let mut soa_seen = 0;
        let mut last_signed = true;
        loop {
            let answer = conn.receive().await.map_err(ExchangeError::Transport)?;
            let response = decode(&answer, id, &server)?;
            if let Some(v) = verifier.as_mut() {
                match v.check(&answer) {
                    Ok(signed) => last_signed = signed,
                    Err(TsigFailure::Rejected(detail)) => return Err(ExchangeError::Auth { server, detail }),
                    Err(TsigFailure::BadResponse(_)) if response.metadata.response_code != ResponseCode::NoError => {}
                    Err(TsigFailure::BadResponse(detail)) => return Err(ExchangeError::BadAnswer { server, detail }),
                }
            }
            if response.metadata.response_code != ResponseCode::NoError {
                return Err(ExchangeError::Rcode {
                    server,
                    rcode: response.metadata.response_code,
                });
            }
            if response.answers.is_empty() {
                return Err(ExchangeError::BadAnswer {
                    server,
                    detail: "empty zone transfer message".into(),
                });
            }
            for r in response.answers {
                if r.record_type() == WireType::SOA {
                    soa_seen += 1;
                    if soa_seen == 2 {
                        break;
                    }
                }
                if first && r.record_type() != WireType::SOA {
                    return Err(ExchangeError::BadAnswer {
                        server,
                        detail: "the zone transfer does not start with the SOA".into(),
                    });
                }
                first = false;
                add(&mut into, r);
            }
            if soa_seen >= 2 {
                break;
            }
        }
        if !last_signed {
            return Err(ExchangeError::BadAnswer {
                server,
                detail: "the last transfer message is not signed".into(),
            });
        }
        self.conns[index] = None;
        Ok(into)
    }
}

fn sign(key: Option<&Key>, msg: &mut Message, now: u64, server: &str) -> Result<(Vec<u8>, Vec<u8>), ExchangeError> {
    match key {
        Some(k) => k.sign(msg, now).map_err(|e| ExchangeError::BadAnswer {
            server: server.into(),
            detail: e.to_string(),
        }),
        None => msg
            .to_vec()
            .map(|w| (w, Vec::new()))
            .map_err(|e| ExchangeError::BadAnswer {
                server: server.into(),
                detail: e.to_string(),
            }),
    }
}

fn decode(answer: &[u8], id: u16, server: &str) -> Result<Message, ExchangeError> {
    let msg = Message::from_vec(answer).map_err(|e| ExchangeError::BadAnswer {
        server: server.into(),
        detail: format!("undecodable answer: {e}"),
    })?;
    if msg.metadata.id != id || msg.metadata.message_type != MessageType::Response {
        return Err(ExchangeError::BadAnswer {
            server: server.into(),
            detail: format!("answer id {} does not match request id {id}", msg.metadata.id),
        });
    }
    Ok(msg)
}

fn random_id() -> u16 {
    getrandom::u32()
        .map(|r| r as u16)
        .unwrap_or_else(|_| (unix_now() & 0xffff) as u16)
}

/// An RFC 2136 UPDATE for `zone` carrying `updates` (adds with class IN, single-record deletes with class
/// NONE). No prerequisites: extdns writes what the plan decided, and the TXT registry guards ownership.
pub fn update_message(zone: &Name, updates: &[Record]) -> Message {
    let mut msg = Message::new(random_id(), MessageType::Query, OpCode::Update);
    let mut q = Query::query(zone.clone(), WireType::SOA);
    q.set_query_class(DNSClass::IN);
    msg.add_query(q);
    msg.add_authorities(updates.iter().cloned());
    msg
}
