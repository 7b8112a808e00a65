//! The three DynamoDB calls the registry makes (`DescribeTable`, `Scan`, `BatchExecuteStatement`), over
//! DynamoDB's JSON 1.0 API (`POST /`, `X-Amz-Target: DynamoDB_20120810.<Op>`), SigV4-signed with the AWS
//! credential chain (`extdns_aws`, the one the Route53 provider signs with), retried with backoff while
//! DynamoDB throttles or fails.

use std::time::Duration;

use extdns_aws::{AssumeRole, Call, CredentialSource, Pacing, Signer, SignerConfig, SignerError};
use extdns_provider::failure::{self, FailureKind, HttpAnswer};
use extdns_provider::http::{Observer, Reply};
use extdns_provider::pace::Pacer;
use extdns_provider::{Backoff, CallError, HttpClient};
use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

/// DynamoDB takes at most 25 statements per `BatchExecuteStatement`.
pub const MAX_BATCH: usize = 25;

/// Why a call failed, after its retries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The request got no answer (connection, timeout).
    #[error("DynamoDB {call}: {source}")]
    Transport {
        /// The API call.
        call: &'static str,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// DynamoDB answered with an error.
    #[error("DynamoDB {call}: HTTP {status} {code}: {message}")]
    Status {
        /// The API call.
        call: &'static str,
        /// The HTTP status.
        status: u16,
        /// The error type without its namespace (`ResourceNotFoundException`, `ThrottlingException`, ...).
        code: String,
        /// DynamoDB's explanation.
        message: String,
        /// The failure's kind, from the status and the code ([`kind_of`]); it decides retries.
        kind: FailureKind,
    },
    /// The answer is not the document asked for.
    #[error("DynamoDB {call}: unreadable answer: {source}")]
    Decode {
        /// The API call.
        call: &'static str,
        /// The JSON decoder's reason.
        #[source]
        source: serde_json::Error,
    },
    /// The request could not be signed (no credentials, a bad URL).
    #[error("DynamoDB {call}: {source}")]
    Sign {
        /// The API call.
        call: &'static str,
        /// The signer's reason.
        #[source]
        source: SignerError,
    },
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Transport { source, .. } => failure::unanswered(source),
            ApiError::Status { kind, .. } => *kind,
            ApiError::Sign { source, .. } => source.kind(),
            ApiError::Decode { .. } => FailureKind::Fatal,
        }
    }
}

/// DynamoDB's codes for going too fast, of a call's error type or of one statement in a batch.
const THROTTLE_CODES: [&str; 5] = [
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ProvisionedThroughputExceeded",
    "ThrottlingError",
];

/// Codes of a failure that may pass if tried again.
const TRANSIENT_CODES: [&str; 3] = ["InternalServerError", "ServiceUnavailable", "TransactionConflict"];

/// Codes of refused credentials or signatures.
const AUTH_CODES: [&str; 5] = [
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "AccessDeniedException",
    "ExpiredTokenException",
    "MissingAuthenticationTokenException",
];

/// The kind a DynamoDB code names on its own, when it names one; `retry_after` is kept for throttling.
fn code_kind(code: &str, retry_after: Option<Duration>) -> Option<FailureKind> {
    if THROTTLE_CODES.contains(&code) {
        Some(FailureKind::Throttled { retry_after })
    } else if TRANSIENT_CODES.contains(&code) {
        Some(FailureKind::Transient)
    } else if AUTH_CODES.contains(&code) {
        Some(FailureKind::Auth)
    } else {
        None
    }
}

/// The kind of a failed call: DynamoDB answers throttling and refused credentials with a 400 and a code;
/// any other 400 (a missing table, a malformed request) is final.
pub fn kind_of(answer: &HttpAnswer, code: &str) -> FailureKind {
    failure::classify(answer, |a| {
        code_kind(code, a.retry_after).or((a.status == reqwest::StatusCode::BAD_REQUEST).then_some(FailureKind::Fatal))
    })
}

/// The kind of one statement's error in a batch: throttling or a transient code as for a call, anything
/// else (a condition that failed, an invalid value) a refusal of that one record.
pub fn statement_kind(code: &str) -> FailureKind {
    code_kind(code, None).unwrap_or(FailureKind::Refused)
}

/// A table's key as `DescribeTable` states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// `AttributeDefinitions`: (name, type).
    pub attributes: Vec<(String, String)>,
    /// `KeySchema`: (name, key type), hash key first.
    pub keys: Vec<(String, String)>,
}

/// One PartiQL statement with its parameters (attribute values in DynamoDB's JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The statement, `?` for each parameter.
    pub text: String,
    /// The parameters, in order.
    pub parameters: Vec<Value>,
}

/// A statement DynamoDB refused: its error code (`DuplicateItem`, `ConditionalCheckFailed`, ...) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementError {
    /// The `BatchStatementErrorCodeEnum` value.
    pub code: String,
    /// DynamoDB's explanation.
    pub message: String,
}

impl std::fmt::Display for StatementError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// How the client reaches DynamoDB.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `https://dynamodb.<region>.amazonaws.com`, or the endpoint of the environment.
    pub endpoint: Url,
    /// The region requests are signed for.
    pub region: String,
    /// Where the signing keys come from.
    pub credentials: CredentialSource,
    /// `--aws-assume-role`.
    pub assume_role: Option<AssumeRole>,
    /// How throttled or failed calls (and statements) are retried; its attempts include the first.
    pub backoff: Backoff,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
    /// Told about every HTTP request (the request-duration metric).
    pub observer: Observer,
}

/// A DynamoDB client bound to one endpoint, region and set of credentials.
pub struct Client {
    http: HttpClient,
    url: String,
    signer: Signer,
    backoff: Backoff,
    /// Unlimited, but held while DynamoDB's `Retry-After` asks every call to wait.
    pacer: Pacer,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("url", &self.url).finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `config`.
    pub fn new(config: &ClientConfig) -> Result<Client, extdns_provider::http::HttpError> {
        let http = HttpClient::builder()
            .observed_by(&config.observer)
            .timeout(config.request_timeout)
            .build()?;
        let mut signing = SignerConfig::new(config.credentials.clone(), config.region.clone(), "dynamodb");
        signing.assume_role = config.assume_role.clone();
        signing.timeout = config.request_timeout;
        let signer = Signer::new(signing, &config.observer)?;
        Ok(Client {
            http,
            url: config.endpoint.as_str().to_string(),
            signer,
            backoff: config.backoff.clone(),
            pacer: Pacer::unlimited(),
        })
    }

    /// The table's attribute definitions and key schema.
    pub async fn describe_table(&self, table: &str) -> Result<TableSchema, ApiError> {
        const CALL: &str = "DescribeTable";
        let answer = self.call(CALL, &json!({"TableName": table})).await?;
        let pairs = |list: &str, value: &str| -> Vec<(String, String)> {
            answer["Table"][list]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|d| {
                            let text = |k: &str| d[k].as_str().unwrap_or_default().to_string();
                            (text("AttributeName"), text(value))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(TableSchema {
            attributes: pairs("AttributeDefinitions", "AttributeType"),
            keys: pairs("KeySchema", "KeyType"),
        })
    }

    /// Every item of `table` whose attribute `attribute` is the string `value`, projected to `projection`,
    /// read consistently, all pages.
    pub async fn scan_where(
        &self,
        table: &str,
        attribute: &str,
        value: &str,
        projection: &str,
    ) -> Result<Vec<serde_json::Map<String, Value>>, ApiError> {
        const CALL: &str = "Scan";
        let mut items = Vec::new();
        let mut start: Option<Value> = None;
        loop {
            let mut request = json!({
                "TableName": table,
                "FilterExpression": format!("{attribute} = :v"),
                "ExpressionAttributeValues": {":v": {"S": value}},
                "ProjectionExpression": projection,
                "ConsistentRead": true,
            });
            if let Some(key) = start.take() {
                request["ExclusiveStartKey"] = key;
            }
            let mut answer = self.call(CALL, &request).await?;
            if let Some(Value::Array(page)) = answer.get_mut("Items").map(Value::take) {
                items.extend(page.into_iter().filter_map(|i| match i {
                    Value::Object(o) => Some(o),
                    _ => None,
                }));
            }
            match answer.get_mut("LastEvaluatedKey").map(Value::take) {
                Some(key @ Value::Object(_)) => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// Runs the statements in batches of [`MAX_BATCH`]; one result per statement, in order. A statement
    /// DynamoDB throttled or failed transiently is sent again (with the backoff) on its own terms; one it
    /// refused comes back as its [`StatementError`]. A call that fails after its retries ends the run: the
    /// statements of earlier batches were applied, none after.
    pub async fn execute(&self, statements: &[Statement]) -> Result<Vec<Result<(), StatementError>>, ApiError> {
        let mut results = Vec::with_capacity(statements.len());
        for chunk in statements.chunks(MAX_BATCH) {
            results.extend(self.execute_batch(chunk).await?);
        }
        Ok(results)
    }

    async fn execute_batch(&self, chunk: &[Statement]) -> Result<Vec<Result<(), StatementError>>, ApiError> {
        const CALL: &str = "BatchExecuteStatement";
        let mut results: Vec<Option<Result<(), StatementError>>> = vec![None; chunk.len()];
        let mut attempt = 0;
        loop {
            let pending: Vec<usize> = (0..chunk.len()).filter(|&i| results[i].is_none()).collect();
            let request = json!({
                "Statements": pending.iter().map(|&i| json!({
                    "Statement": chunk[i].text,
                    "Parameters": chunk[i].parameters,
                })).collect::<Vec<_>>(),
            });
            let answer = self.call(CALL, &request).await?;
            let responses = answer["Responses"].as_array().cloned().unwrap_or_default();
            let mut again = false;
            for (n, &i) in pending.iter().enumerate() {
                let Some(response) = responses.get(n) else {
                    // DynamoDB answers every statement; a missing answer is not proof of anything.
                    results[i] = Some(Err(StatementError {
                        code: "NoResponse".into(),
                        message: "DynamoDB's answer has no response for this statement".into(),
                    }));
                    continue;
                };
                match response.get("Error") {
                    None | Some(Value::Null) => results[i] = Some(Ok(())),
                    Some(error) => {
                        let error = StatementError {
                            code: error["Code"].as_str().unwrap_or("Unknown").to_string(),
                            message: error["Message"].as_str().unwrap_or_default().to_string(),
                        };
                        let transient = statement_kind(&error.code).is_transient();
                        if transient && attempt + 1 < self.backoff.max_attempts {
                            again = true;
                        } else {
                            results[i] = Some(Err(error));
                        }
                    }
                }
            }
            if !again {
                return Ok(results.into_iter().map(|r| r.unwrap_or(Ok(()))).collect());
            }
            tokio::time::sleep(self.backoff.delay(attempt)).await;
            attempt += 1;
        }
    }

    /// One call, retried with backoff while DynamoDB throttles or fails transiently.
    async fn call(&self, name: &'static str, body: &Value) -> Result<Value, ApiError> {
        let body = body.to_string();
        self.backoff
            .retry(name, || self.once(name, &body), ApiError::kind)
            .await
    }

    async fn once(&self, name: &'static str, body: &str) -> Result<Value, ApiError> {
        let target = format!("DynamoDB_20120810.{name}");
        let headers = [
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", target.as_str()),
        ];
        let call = Call {
            method: &Method::POST,
            url: &self.url,
            headers: &headers,
            body: Some(body),
            // The registry has no write rate: the pacer only holds calls while DynamoDB asks.
            write: false,
        };
        let reply = self
            .signer
            .send(&self.http, Pacing::account(&self.pacer), call, |r| error_of(r).0)
            .await
            .map_err(|e| match e {
                SignerError::Unanswered(source) => ApiError::Transport { call: name, source },
                other => ApiError::Sign {
                    call: name,
                    source: other,
                },
            })?;
        let text = String::from_utf8_lossy(&reply.body);
        if !reply.is_success() {
            let (code, message) = error_of(&reply);
            let kind = kind_of(&reply.answer, &code);
            // A throttled answer holds this table's every call as long as DynamoDB asked.
            self.pacer.hold_off(kind).await;
            return Err(ApiError::Status {
                call: name,
                status: reply.status(),
                kind,
                code,
                message,
            });
        }
        serde_json::from_str(&text).map_err(|source| ApiError::Decode { call: name, source })
    }
}

/// DynamoDB's error code (`__type` after its `#`) and message in a failed answer, or the status's reason
/// and the body's first characters when the body is not its JSON.
fn error_of(reply: &Reply) -> (String, String) {
    let text = String::from_utf8_lossy(&reply.body);
    let error: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let code = error["__type"]
        .as_str()
        .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| reply.answer.status.canonical_reason().unwrap_or("error").to_string());
    let message = error["message"]
        .as_str()
        .or_else(|| error["Message"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| text.chars().take(200).collect());
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_test_support::canned::{self, Answer};

    /// A throttled answer's `Retry-After` holds the client's next call, whichever it is, as the other HTTP
    /// clients do.
    #[tokio::test]
    async fn a_throttled_answer_holds_the_next_call_as_long_as_dynamodb_asked() {
        let server = canned::serve(Answer {
            status: reqwest::StatusCode::BAD_REQUEST,
            headers: vec![("retry-after", "30".into())],
            body: r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}"#.into(),
        });
        let endpoint = Url::parse(&server.url).unwrap_or_else(|e| panic!("{e}"));
        assert!(extdns_test_support::is_loopback(&endpoint), "{endpoint}");
        let client = Client::new(&ClientConfig {
            endpoint,
            region: "eu-west-1".into(),
            credentials: CredentialSource::Static(extdns_aws::Credentials::new("AKIDTEST", "secret")),
            assume_role: None,
            // A throttle is no attempt: waiting out the 30 s asked would pass the 10 s it may, so it gives up.
            backoff: Backoff {
                max_attempts: 1,
                throttled_for: Duration::from_secs(10),
                ..Backoff::default()
            },
            request_timeout: Duration::from_secs(30),
            observer: Observer::default(),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let err = client.describe_table("t").await.err();
        assert!(
            err.as_ref()
                .is_some_and(|e| matches!(e.kind(), FailureKind::Throttled { .. })),
            "{err:?}"
        );
        let next = tokio::time::timeout(Duration::from_secs(1), client.pacer.request()).await;
        assert!(next.is_err(), "the next call may leave at once");
    }

    fn kind(status: u16, code: &str) -> FailureKind {
        let status = reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::IM_A_TEAPOT);
        kind_of(&HttpAnswer::with_status(status), code)
    }

    #[test]
    fn dynamodb_codes_refine_the_status() {
        let throttled = FailureKind::Throttled { retry_after: None };
        assert_eq!(kind(400, "ThrottlingException"), throttled);
        assert_eq!(kind(400, "ProvisionedThroughputExceededException"), throttled);
        assert_eq!(kind(500, "InternalServerError"), FailureKind::Transient);
        assert_eq!(kind(400, "ResourceNotFoundException"), FailureKind::Fatal);
        assert_eq!(kind(400, "ValidationException"), FailureKind::Fatal);
        assert_eq!(kind(400, "UnrecognizedClientException"), FailureKind::Auth);
        assert_eq!(kind(403, "Whatever"), FailureKind::Auth);
    }

    #[test]
    fn a_statement_error_is_retried_or_refuses_its_record() {
        assert_eq!(
            statement_kind("ProvisionedThroughputExceeded"),
            FailureKind::Throttled { retry_after: None }
        );
        assert_eq!(statement_kind("TransactionConflict"), FailureKind::Transient);
        assert_eq!(statement_kind("ConditionalCheckFailed"), FailureKind::Refused);
        assert_eq!(statement_kind("DuplicateItem"), FailureKind::Refused);
    }
}
