//! The server under load: bursts of UDP queries from several sockets at once (read and answered a batch
//! per system call on Linux, by a worker thread per socket), each answered once and right.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use common::{Served, ep};
use extdns_dns_server::{DnsServer, ServerConfig, Zones};
use extdns_endpoint::{Change, RecordType};
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData};

/// Names `h0` to `h{NAMES-1}` in the test zone, each with its own address.
const NAMES: usize = 64;

fn address_of(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 1, (i / 250) as u8, (i % 250) as u8 + 1)
}

/// The server as `config` says, on a free port of loopback, with the names.
fn served_with_names(config: ServerConfig) -> Served {
    let served = Served::with(config);
    let changes: Vec<Change> = (0..NAMES)
        .map(|i| {
            Change::Create(ep(
                &format!("h{i}.example.org"),
                RecordType::A,
                &[&address_of(i).to_string()],
            ))
        })
        .collect();
    served.apply(&changes);
    served
}

/// The test zone on a free port of 127.0.0.1.
fn loopback() -> ServerConfig {
    ServerConfig::new(
        vec!["127.0.0.1:0".parse().expect("address")],
        vec![common::zone_config()],
    )
}

fn query(id: u16, name: usize) -> Vec<u8> {
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(
        Name::from_ascii(format!("h{name}.example.org.")).expect("name"),
        hickory_proto::rr::RecordType::A,
    ));
    m.to_vec().expect("encodes")
}

/// The name a query id asks for, so an answer can be checked against its id alone.
fn name_of(id: u16) -> usize {
    usize::from(id) % NAMES
}

/// Sends `rounds` windows of `window` queries at once from one socket, reading each window's answers
/// before the next; the answers, checked: the id, NOERROR and the address of the name asked.
fn client(server: SocketAddr, first_id: u16, rounds: u16, window: u16) -> Vec<u16> {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("binds");
    socket.connect(server).expect("connects");
    socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answered = Vec::new();
    let mut buf = [0u8; 2048];
    for round in 0..rounds {
        let ids: Vec<u16> = (0..window).map(|k| first_id + round * window + k).collect();
        for &id in &ids {
            socket.send(&query(id, name_of(id))).expect("sends");
        }
        for _ in &ids {
            let len = socket.recv(&mut buf).expect("every query of the window is answered");
            let answer = Message::from_vec(&buf[..len]).expect("the answer decodes");
            let id = answer.metadata.id;
            assert!(ids.contains(&id), "an answer to a query of this window: {id}");
            assert_eq!(answer.metadata.response_code, ResponseCode::NoError);
            let data: Vec<&RData> = answer.answers.iter().map(|r| &r.data).collect();
            assert_eq!(
                data,
                [&RData::A(address_of(name_of(id)).into())],
                "the address of h{}",
                name_of(id)
            );
            answered.push(id);
        }
    }
    answered
}

#[test]
fn a_burst_from_several_sockets_is_answered_once_each_and_right() {
    let served = served_with_names(loopback());
    let (sockets, rounds, window) = (8u16, 25u16, 8u16);
    let per_socket = rounds * window;
    let clients: Vec<_> = (0..sockets)
        .map(|s| {
            let server = SocketAddr::from((Ipv4Addr::LOCALHOST, served.port()));
            std::thread::spawn(move || client(server, s * per_socket, rounds, window))
        })
        .collect();
    let mut answered: Vec<u16> = clients
        .into_iter()
        .flat_map(|c| c.join().expect("the client finishes"))
        .collect();
    answered.sort_unstable();
    let sent: Vec<u16> = (0..sockets * per_socket).collect();
    assert_eq!(answered, sent, "every query answered exactly once");
}

#[test]
fn several_workers_with_a_socket_each_answer_every_client() {
    let served = served_with_names(ServerConfig {
        udp_workers: 4,
        ..loopback()
    });
    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, served.port()));
    // 32 clients, each on its own port: the kernel spreads them over the four sockets.
    let clients: Vec<_> = (0..32u16)
        .map(|s| std::thread::spawn(move || client(server, s * 16, 2, 8)))
        .collect();
    let answered: usize = clients
        .into_iter()
        .map(|c| c.join().expect("the client finishes").len())
        .sum();
    assert_eq!(answered, 32 * 16);
}

#[test]
fn a_second_server_on_the_same_port_fails_to_start() {
    let served = Served::with(loopback());
    let config = ServerConfig::new(vec![served.address], vec![common::zone_config()]);
    let zones = Arc::new(Zones::new(&config.zones, 1, config.limits));
    // The UDP sockets share the port by SO_REUSEPORT; TCP's listener does not, and fails the second.
    let second = DnsServer::bind(Arc::new(config), zones, Default::default());
    let e = second.expect_err("the port is taken");
    assert!(e.to_string().contains(&served.address.to_string()), "{e}");
}
