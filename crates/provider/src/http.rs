//! The one HTTP client every HTTP provider builds (Route53, Cloudflare, etcd's gateway, PowerDNS, webhook,
//! the webhook conformance kit): timeouts, TLS files, extdns's user agent, and a proxy from the
//! environment as external-dns's Go clients read it (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` with ports and
//! ranges, loopback never proxied: extdns-proxy), not as reqwest alone would (curl's rules).
//!
//! Every request leaves through [`Request::send`], which times it and hands method, URL, status and
//! duration to the client's [`Observe`] hook: the one place a request-duration metric attaches to all
//! providers at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{IntoUrl, Method, Response, StatusCode, Url};

use extdns_proxy::ProxyEnv;

use crate::failure::HttpAnswer;
pub use crate::failure::error_chain;
use crate::tls::{TlsError, TlsOptions};

/// What every request carries as `User-Agent`.
pub const USER_AGENT: &str = concat!("extdns/", env!("CARGO_PKG_VERSION"));

/// Told about every request a client sends, once its answer's headers arrived or it failed.
pub trait Observe: Send + Sync {
    /// `status` is `None` when no answer came (connection refused, timeout, TLS failure).
    fn observe(&self, method: &Method, url: &Url, status: Option<StatusCode>, elapsed: Duration);
}

/// An optional [`Observe`] hook that provider configurations can carry: they derive `Debug` and `Clone`,
/// which a bare trait object does not. The binary fills it with the request metric; tests leave it empty.
#[derive(Clone, Default)]
pub struct Observer(pub Option<Arc<dyn Observe>>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = if self.0.is_some() { "set" } else { "none" };
        write!(f, "Observer({held})")
    }
}

/// Why a client cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The TLS files of [`HttpClientBuilder::tls`] cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The HTTP library refused the configuration (its TLS backend could not start, say).
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// An endpoint the client is to call is not a URL.
    #[error("{what} {url:?} is not a URL: {source}")]
    Url {
        /// Which endpoint (`the authority host`).
        what: &'static str,
        /// As given.
        url: String,
        /// The parser's reason.
        #[source]
        source: url::ParseError,
    },
}

/// `url` read as a URL, or the error that names it as `what`: a provider checks the endpoints it was given
/// when it is built, so a mistyped one fails at startup rather than on the first sync.
pub fn parse_url(what: &'static str, url: &str) -> Result<Url, HttpError> {
    Url::parse(url).map_err(|source| HttpError::Url {
        what,
        url: url.to_string(),
        source,
    })
}

/// An HTTP client. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
    observer: Option<Arc<dyn Observe>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("observed", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A builder with extdns's user agent, no timeout, no TLS files and the proxy of the environment.
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder {
            inner: environment_proxy(
                reqwest::Client::builder().user_agent(USER_AGENT),
                ProxyEnv::from_process(),
            ),
            tls: TlsOptions::default(),
            observer: None,
        }
    }

    /// The builder a cloud API's client starts from: the configuration's request hook, its whole-request
    /// time limit, and 10 s to open a connection (what a slow TLS handshake to a distant API needs, and
    /// no more: an unreachable API shows within a sync).
    pub fn api_builder(observer: &Observer, timeout: Duration) -> HttpClientBuilder {
        HttpClient::builder()
            .observed_by(observer)
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(10))
    }

    /// The builder for a cloud's instance metadata service (EC2's, GCE's), at the instance's own link-local
    /// address: never asked through a proxy of the environment, and a second to connect, as the SDKs give
    /// it, since off that cloud the address answers nothing; each request at most `timeout`.
    pub fn metadata_builder(observer: &Observer, timeout: Duration) -> HttpClientBuilder {
        HttpClient::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(1))
            .timeout(timeout)
            .observed_by(observer)
    }

    /// A request with any method; sent by [`Request::send`].
    pub fn request(&self, method: Method, url: impl IntoUrl) -> Request<'_> {
        Request {
            client: self,
            inner: self.inner.request(method, url),
        }
    }

    /// A GET request.
    pub fn get(&self, url: impl IntoUrl) -> Request<'_> {
        self.request(Method::GET, url)
    }

    /// A POST request.
    pub fn post(&self, url: impl IntoUrl) -> Request<'_> {
        self.request(Method::POST, url)
    }

    /// A PATCH request.
    pub fn patch(&self, url: impl IntoUrl) -> Request<'_> {
        self.request(Method::PATCH, url)
    }
}

/// Builds an [`HttpClient`]; the TLS files are read by [`HttpClientBuilder::build`].
#[must_use]
pub struct HttpClientBuilder {
    inner: reqwest::ClientBuilder,
    tls: TlsOptions,
    observer: Option<Arc<dyn Observe>>,
}

impl HttpClientBuilder {
    /// The time limit of a whole request: connecting, sending and reading the answer.
    pub fn timeout(self, limit: Duration) -> Self {
        self.with(|b| b.timeout(limit))
    }

    /// The time limit of opening a connection.
    pub fn connect_timeout(self, limit: Duration) -> Self {
        self.with(|b| b.connect_timeout(limit))
    }

    /// Trust the CA file (beside the system's roots), present the client certificate, or skip
    /// verification, as `tls` says.
    pub fn tls(mut self, tls: &TlsOptions) -> Self {
        self.tls = tls.clone();
        self
    }

    /// Headers every request carries (credentials, say).
    pub fn default_headers(self, headers: HeaderMap) -> Self {
        self.with(|b| b.default_headers(headers))
    }

    /// How many idle connections to keep per host; 0 opens a new connection for every request.
    pub fn pool_max_idle_per_host(self, connections: usize) -> Self {
        self.with(|b| b.pool_max_idle_per_host(connections))
    }

    /// Never use a proxy, whatever the environment says (Google's metadata server, which its own client
    /// never reaches through one).
    pub fn no_proxy(self) -> Self {
        self.with(reqwest::ClientBuilder::no_proxy)
    }

    /// Connect to `addrs` for requests to host `name` (a certificate's name that does not resolve).
    pub fn resolve_to_addrs(self, name: &str, addrs: &[SocketAddr]) -> Self {
        self.with(|b| b.resolve_to_addrs(name, addrs))
    }

    fn with(mut self, set: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder) -> Self {
        self.inner = set(self.inner);
        self
    }

    /// Tell `observer` about every request.
    pub fn observer(mut self, observer: Arc<dyn Observe>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The hook a provider configuration carries, if any.
    pub fn observed_by(mut self, observer: &Observer) -> Self {
        if let Some(o) = &observer.0 {
            self.observer = Some(o.clone());
        }
        self
    }

    /// Read the TLS files and build the client.
    pub fn build(self) -> Result<HttpClient, HttpError> {
        let files = self.tls.load()?;
        let mut inner = self.inner.danger_accept_invalid_certs(self.tls.skip_verify);
        for root in &files.roots {
            let cert = reqwest::Certificate::from_der(root.as_ref()).map_err(HttpError::Client)?;
            inner = inner.add_root_certificate(cert);
        }
        if let Some(identity) = files.identity {
            let parsed = reqwest::Identity::from_pem(&identity.pem).map_err(|source| TlsError::Identity {
                cert: identity.cert_path,
                key: identity.key_path,
                source: source.into(),
            })?;
            inner = inner.identity(parsed);
        }
        Ok(HttpClient {
            inner: inner.build().map_err(HttpError::Client)?,
            observer: self.observer,
        })
    }
}

/// A request being built; [`Request::send`] is the only way out.
#[must_use]
pub struct Request<'c> {
    client: &'c HttpClient,
    inner: reqwest::RequestBuilder,
}

impl Request<'_> {
    /// Adds a header; an invalid name or value fails the request when it is sent.
    pub fn header<K, V>(self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.with(|r| r.header(name, value))
    }

    /// Appends URL query parameters, serialised form-style.
    pub fn query<T: serde::Serialize + ?Sized>(self, query: &T) -> Self {
        self.with(|r| r.query(query))
    }

    /// A JSON body, with `Content-Type: application/json`.
    pub fn json<T: serde::Serialize + ?Sized>(self, body: &T) -> Self {
        self.with(|r| r.json(body))
    }

    /// A JSON body when there is one: a call whose method may or may not carry a body.
    pub fn json_if<T: serde::Serialize + ?Sized>(self, body: Option<&T>) -> Self {
        match body {
            Some(b) => self.json(b),
            None => self,
        }
    }

    /// A raw body; set any content type with [`Request::header`].
    pub fn body(self, body: impl Into<reqwest::Body>) -> Self {
        self.with(|r| r.body(body))
    }

    /// An `Authorization: Bearer` header.
    pub fn bearer_auth(self, token: impl std::fmt::Display) -> Self {
        self.with(|r| r.bearer_auth(token))
    }

    fn with(mut self, set: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder) -> Self {
        self.inner = set(self.inner);
        self
    }

    /// Send the request and wait for the answer's headers, telling the client's observer.
    pub async fn send(self) -> Result<Response, reqwest::Error> {
        let request = self.inner.build()?;
        let Some(observer) = &self.client.observer else {
            return self.client.inner.execute(request).await;
        };
        let (method, url) = (request.method().clone(), request.url().clone());
        let start = std::time::Instant::now();
        let result = self.client.inner.execute(request).await;
        observer.observe(
            &method,
            &url,
            result.as_ref().ok().map(Response::status),
            start.elapsed(),
        );
        result
    }

    /// Send the request and read the whole answer. An error means no whole answer came (connection
    /// refused, timeout, a body broken off); any status, success or not, is a [`Reply`] to classify.
    pub async fn exchange(self) -> Result<Reply, reqwest::Error> {
        let response = self.send().await?;
        let answer = answer_of(&response);
        let headers = response.headers().clone();
        let body = response.bytes().await?.into();
        Ok(Reply { answer, headers, body })
    }
}

/// A whole answer, as [`Request::exchange`] reads it.
#[derive(Debug)]
pub struct Reply {
    /// Its status and how long it asks to wait, for [`crate::failure::classify`].
    pub answer: HttpAnswer,
    /// Its headers (an API's error code may travel in one).
    pub headers: HeaderMap,
    /// Its body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The HTTP status as a number.
    pub fn status(&self) -> u16 {
        self.answer.status.as_u16()
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        self.answer.status.is_success()
    }
}

/// What the HTTP layer knows of a failed answer, for [`crate::failure::classify`]: its status and how
/// long it asks to wait ([`crate::failure::retry_after`]).
pub fn answer_of(response: &Response) -> HttpAnswer {
    HttpAnswer::new(response.status(), response.headers())
}

/// `text` with every byte but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`) percent-encoded:
/// one URL path segment (Go's `url.PathEscape` for the characters extdns sends), and a query value as
/// SigV4 canonicalises it, so the URL sent is the URL signed.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `builder` going through the proxy `proxies` name for each request's URL, by Go's rules; with no proxy
/// named, through none (reqwest would otherwise read the environment itself, `ALL_PROXY` included).
fn environment_proxy(builder: reqwest::ClientBuilder, proxies: ProxyEnv) -> reqwest::ClientBuilder {
    if proxies.is_empty() {
        return builder.no_proxy();
    }
    builder.proxy(reqwest::Proxy::custom(move |url| {
        proxies
            .proxy_for(url.scheme(), url.host_str()?, url.port_or_known_default())
            .map(str::to_string)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::tls::TlsFile;

    /// A server that answers each connection's first request with `answer` and hands back the request's
    /// head.
    async fn server(answer: &'static str) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let mut buf = vec![0u8; 8192];
                let mut len = 0;
                while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => len += n,
                    }
                }
                let _ = tx.send(String::from_utf8_lossy(&buf[..len]).into_owned());
                let _ = conn.write_all(answer.as_bytes()).await;
            }
        });
        (format!("http://{addr}"), rx)
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<(Method, String, Option<u16>)>>);

    impl Observe for Seen {
        fn observe(&self, method: &Method, url: &Url, status: Option<StatusCode>, _: Duration) {
            let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
            seen.push((method.clone(), url.path().to_string(), status.map(|s| s.as_u16())));
        }
    }

    #[tokio::test]
    async fn requests_carry_the_user_agent_and_are_observed() {
        let (base, mut heads) = server(
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await;
        let seen = Arc::new(Seen::default());
        let client = HttpClient::builder()
            .timeout(Duration::from_secs(5))
            .observer(seen.clone())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let response = client
            .post(format!("{base}/zones"))
            .body("x")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(answer_of(&response).retry_after, Some(Duration::from_secs(7)));
        let head = heads.recv().await.unwrap_or_default().to_ascii_lowercase();
        assert!(
            head.contains(&format!("user-agent: {}", USER_AGENT.to_ascii_lowercase())),
            "{head}"
        );

        // Nothing listens on port 1: the failure is observed without a status.
        let _ = client.get("http://127.0.0.1:1/down").send().await;
        let seen = seen.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(
            seen,
            [
                (Method::POST, "/zones".to_string(), Some(429)),
                (Method::GET, "/down".to_string(), None)
            ]
        );
    }

    #[test]
    fn an_endpoint_that_is_not_a_url_is_named_with_the_parser_s_reason() {
        assert!(parse_url("the API URL", "https://dns.example/v1").is_ok());
        let e = parse_url("the authority host", "login.example").err();
        let text = e.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            text.starts_with("the authority host \"login.example\" is not a URL: "),
            "{text}"
        );
        let source = e.as_ref().and_then(std::error::Error::source);
        assert!(source.is_some(), "the parser's error is kept as the cause");
    }

    #[test]
    fn only_unreserved_characters_are_left_as_they_are() {
        assert_eq!(
            percent_encode("192.0.2.1 web.example.org"),
            "192.0.2.1%20web.example.org"
        );
        assert_eq!(percent_encode("a,b+c/d~e_f"), "a%2Cb%2Bc%2Fd~e_f");
        assert_eq!(percent_encode("\\052.example.com."), "%5C052.example.com.");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }

    #[test]
    fn the_builder_loads_tls_files_and_names_a_bad_one() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let mut tls = TlsOptions {
            ca_file: Some(dir.join("cert.pem")),
            client_cert: Some(dir.join("cert.pem")),
            client_key: Some(dir.join("key.pem")),
            ..TlsOptions::default()
        };
        assert!(HttpClient::builder().tls(&tls).build().is_ok());

        tls.client_key = Some(dir.join("nonexistent-key.pem"));
        let e = HttpClient::builder().tls(&tls).build().err();
        assert!(
            matches!(&e, Some(HttpError::Tls(t)) if t.file() == Some(TlsFile::ClientKey)),
            "{e:?}"
        );
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("client key") && text.contains("nonexistent-key.pem"),
            "{text}"
        );
    }

    /// A refused write's answer is read whole: status, headers and body.
    #[tokio::test]
    async fn an_exchange_reads_a_refusal_whole() {
        let (base, mut heads) = server(
            "HTTP/1.1 412 Precondition Failed\r\nx-ms-error-code: PreconditionFailed\r\n\
             Content-Length: 4\r\nConnection: close\r\n\r\nstop",
        )
        .await;
        let client = HttpClient::builder().build().unwrap_or_else(|e| panic!("{e}"));
        let reply = client
            .request(Method::PUT, format!("{base}/set"))
            .json_if(Some(&serde_json::json!({"ttl": 60})))
            .exchange()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((reply.status(), reply.is_success()), (412, false));
        assert_eq!(
            reply.headers.get("x-ms-error-code").map(|v| v.as_bytes()),
            Some(&b"PreconditionFailed"[..])
        );
        assert_eq!(reply.body, b"stop");
        let head = heads.recv().await.unwrap_or_default().to_ascii_lowercase();
        assert!(head.contains("content-type: application/json"), "{head}");

        let (base, mut heads) = server("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        let none: Option<&serde_json::Value> = None;
        let reply = client
            .get(format!("{base}/list"))
            .json_if(none)
            .exchange()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(reply.is_success() && reply.body.is_empty());
        let head = heads.recv().await.unwrap_or_default().to_ascii_lowercase();
        assert!(!head.contains("content-type"), "no body, no content type: {head}");
    }

    /// The proxy comes from the environment. The environment of this process is not changed (other tests
    /// run in it): the test runs itself again as a child with `HTTP_PROXY` set, and the child's request
    /// must reach the proxy.
    #[tokio::test]
    async fn the_proxy_comes_from_the_environment() {
        if std::env::var_os("EXTDNS_PROXY_CHILD").is_some() {
            let client = HttpClient::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let answer = client.get("http://upstream.invalid/path").send().await;
            let status = answer.map(|a| a.status().as_u16()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(status, 299, "the answer comes from the proxy");
            return;
        }
        let (proxy, mut heads) = server("HTTP/1.1 299 Proxied\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let child = tokio::process::Command::new(exe)
            .args(["--exact", "http::tests::the_proxy_comes_from_the_environment"])
            .env("EXTDNS_PROXY_CHILD", "1")
            .env("HTTP_PROXY", &proxy)
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let out = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success() && out.contains("1 passed"), "{out}");
        let head = heads.recv().await.unwrap_or_default();
        assert!(head.starts_with("GET http://upstream.invalid/path HTTP/1.1"), "{head}");
    }

    /// Go's rules, not curl's: a host `NO_PROXY` names with its port, and loopback, are reached directly;
    /// another host goes through the proxy. The variables are handed in, not set on this process.
    #[tokio::test]
    async fn no_proxy_and_loopback_are_reached_directly_as_go_reaches_them() {
        let (direct, _) = server("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        let (proxy, mut proxied) =
            server("HTTP/1.1 299 Proxied\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        let addr: SocketAddr = direct
            .trim_start_matches("http://")
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        let port = addr.port();
        let no_proxy = format!("upstream.invalid:{port}");
        let vars = [("HTTP_PROXY", proxy.as_str()), ("NO_PROXY", no_proxy.as_str())];
        let proxies = ProxyEnv::from_vars(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string()));
        let inner = environment_proxy(reqwest::Client::builder(), proxies)
            .resolve("upstream.invalid", addr)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let client = HttpClient { inner, observer: None };
        let status = |url: String| {
            let client = client.clone();
            async move {
                client
                    .get(url)
                    .send()
                    .await
                    .map(|a| a.status().as_u16())
                    .unwrap_or_else(|e| panic!("{e}"))
            }
        };
        assert_eq!(
            status(format!("http://upstream.invalid:{port}/")).await,
            200,
            "named with its port"
        );
        assert_eq!(status(format!("{direct}/")).await, 200, "loopback");
        assert_eq!(status(format!("http://other.invalid:{port}/")).await, 299, "not named");
        let head = proxied.recv().await.unwrap_or_default();
        assert!(
            head.starts_with(&format!("GET http://other.invalid:{port}/ HTTP/1.1")),
            "{head}"
        );
        assert!(proxied.try_recv().is_err(), "only one request went through the proxy");
    }
}
