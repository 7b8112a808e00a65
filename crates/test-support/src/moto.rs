//! moto's Route53 and DynamoDB (`moto_server`) on 127.0.0.1, one per test: the happy paths against a
//! second implementation of the API. Tests check [`crate::Server::Moto`] first.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::proc::OwnedChild;

/// moto's server routes a request to a service by the credential scope of its signature.
const AUTH: &str =
    "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/route53/aws4_request, SignedHeaders=host, Signature=0";

/// The command that installs moto, named when it is missing.
pub const INSTALL: &str =
    "install it with `pip install 'moto[server]'` (or run `cargo xtask test`, which installs it into target/moto-venv)";

/// Where moto_server is: `EXTDNS_TEST_MOTO_SERVER`, the venv `cargo xtask test` makes, or PATH.
pub fn moto_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("EXTDNS_TEST_MOTO_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for ancestor in root.ancestors() {
        let venv = ancestor.join("target/moto-venv/bin/moto_server");
        if venv.is_file() {
            return Some(venv);
        }
    }
    crate::program("moto_server")
}

/// A running moto server (the AWS API fake); killed when dropped.
pub struct Moto {
    /// Held to be killed when dropped.
    _child: OwnedChild,
    /// Its endpoint URL, `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Moto {
    /// Start moto_server on a free port and wait until it answers.
    pub fn start() -> Moto {
        let port = crate::free_port();
        let program = moto_server().unwrap_or_else(|| panic!("the Route53 tests need moto's server: {INSTALL}"));
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} ({e}): {INSTALL}", program.display()));
        let moto = Moto {
            _child: OwnedChild(child),
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    async fn post(&self, path: &str, body: String) -> String {
        let request = crate::loopback_client()
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/xml")
            .body(body);
        answer(request, path).await
    }

    /// The record sets of a zone as moto lists them (`ListResourceRecordSets`, up to 300), its XML as
    /// sent: two reads compare equal exactly when nothing changed.
    pub async fn record_sets(&self, zone_id: &str) -> String {
        let path = format!("/2013-04-01/hostedzone/{zone_id}/rrset");
        answer(crate::loopback_client().get(format!("{}{path}", self.url)), &path).await
    }

    /// Create a hosted zone (private ones in a made-up VPC) with tags; returns its id.
    pub async fn zone(&self, name: &str, private: bool, tags: &[(&str, &str)]) -> String {
        let vpc = if private {
            "<VPC><VPCRegion>us-east-1</VPCRegion><VPCId>vpc-12345678</VPCId></VPC><HostedZoneConfig><PrivateZone>true</PrivateZone></HostedZoneConfig>"
        } else {
            ""
        };
        let text = self
            .post(
                "/2013-04-01/hostedzone",
                format!(
                    "<CreateHostedZoneRequest xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><Name>{name}.</Name><VPC></VPC><CallerReference>{name}-{private}</CallerReference>{vpc}</CreateHostedZoneRequest>"
                )
                .replace("<VPC></VPC>", ""),
            )
            .await;
        let id = text
            .split("<Id>/hostedzone/")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .expect("a zone id in moto's answer")
            .to_string();
        if !tags.is_empty() {
            let tags: String = tags
                .iter()
                .map(|(k, v)| format!("<Tag><Key>{k}</Key><Value>{v}</Value></Tag>"))
                .collect();
            self.post(
                &format!("/2013-04-01/tags/hostedzone/{id}"),
                format!(
                    "<ChangeTagsForResourceRequest xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><AddTags>{tags}</AddTags></ChangeTagsForResourceRequest>"
                ),
            )
            .await;
        }
        id
    }
}

/// moto's DynamoDB, through the JSON API the registry speaks, for the registry's reads against a second
/// implementation (its writes are PartiQL statements moto cannot run: those are tested on the strict fake).
impl Moto {
    /// One DynamoDB call (`target`, such as `CreateTable`) with `body`; the answer's text.
    pub async fn dynamodb(&self, target: &str, body: serde_json::Value) -> String {
        let request = crate::loopback_client()
            .post(&self.url)
            .header("x-amz-target", format!("DynamoDB_20120810.{target}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(body.to_string());
        answer_as(request, target, DYNAMODB_AUTH).await
    }

    /// Creates `table` as external-dns needs it: hash key `k` of type `S`, no range key.
    pub async fn dynamodb_table(&self, table: &str) {
        let body = serde_json::json!({
            "TableName": table,
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        });
        self.dynamodb("CreateTable", body).await;
    }
}

/// The region of the tables [`Moto::dynamodb_table`] makes (moto keeps each region's apart).
pub const REGION: &str = "us-east-1";

/// moto routes a DynamoDB call by its credential scope too (region [`REGION`]).
const DYNAMODB_AUTH: &str =
    "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0";

/// The text of moto's answer to `request`, sent with the `authorization` header `AUTH`; the answer must be
/// a success, and `path` names the call when it is not.
async fn answer(request: reqwest::RequestBuilder, path: &str) -> String {
    answer_as(request, path, AUTH).await
}

/// [`answer`] with another `authorization` header.
async fn answer_as(request: reqwest::RequestBuilder, path: &str, auth: &str) -> String {
    let response = request
        .header("authorization", auth)
        .send()
        .await
        .expect("moto answers");
    let status = response.status();
    let text = response.text().await.expect("moto's answer");
    assert!(status.is_success(), "moto refused {path}: {status} {text}");
    text
}
