//! The three DynamoDB calls the registry makes (`DescribeTable`, `Scan`, `BatchExecuteStatement`), over
//! DynamoDB's JSON 1.0 API (`POST /`, `X-Amz-Target: DynamoDB_20120810.<Op>`), SigV4-signed with the AWS
//! credential chain (`extdns_aws`, the one the Route53 provider signs with), retried with backoff while
//! DynamoDB throttles or fails.

use std::time::Duration;

use extdns_aws::{AssumeRole, CredentialSource, Signed, Signer, SignerConfig, SignerError};
use extdns_provider::http::Observer;
use extdns_provider::{Backoff, HttpClient, Retry};
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

impl ApiError {
    /// Throttling, a 5xx or no answer: the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Transport { .. } => true,
            ApiError::Status { status, code, .. } => *status >= 500 || is_transient_code(code),
            _ => false,
        }
    }

    /// DynamoDB refused the credentials or the signature.
    pub fn is_auth(&self) -> bool {
        match self {
            ApiError::Status { status, code, .. } => {
                *status == 401
                    || *status == 403
                    || matches!(
                        code.as_str(),
                        "UnrecognizedClientException"
                            | "InvalidSignatureException"
                            | "AccessDeniedException"
                            | "ExpiredTokenException"
                            | "MissingAuthenticationTokenException"
                    )
            }
            ApiError::Sign { .. } => true,
            _ => false,
        }
    }
}

impl extdns_provider::CallError for ApiError {
    fn is_transient(&self) -> bool {
        self.is_retryable()
    }

    fn is_auth(&self) -> bool {
        ApiError::is_auth(self)
    }
}

/// Error types (of a call) and codes (of one statement in a batch) that ask to try again later.
fn is_transient_code(code: &str) -> bool {
    matches!(
        code,
        "ThrottlingException"
            | "ProvisionedThroughputExceededException"
            | "RequestLimitExceeded"
            | "InternalServerError"
            | "ServiceUnavailable"
            | "ProvisionedThroughputExceeded"
            | "ThrottlingError"
            | "TransactionConflict"
    )
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
                        if is_transient_code(&error.code) && attempt + 1 < self.backoff.max_attempts {
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
            .retry(
                name,
                || self.once(name, &body),
                |e: &ApiError| if e.is_retryable() { Retry::Backoff } else { Retry::No },
            )
            .await
    }

    async fn once(&self, name: &'static str, body: &str) -> Result<Value, ApiError> {
        let target = format!("DynamoDB_20120810.{name}");
        let headers = [
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", target.as_str()),
        ];
        let signed = self
            .signer
            .request(&self.http, Method::POST, &self.url, &headers, Some(body.to_string()))
            .await
            .map_err(|source| ApiError::Sign { call: name, source })?;
        let transport = |source| ApiError::Transport { call: name, source };
        let Signed { request, by } = signed;
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let text = response.text().await.map_err(transport)?;
        if !status.is_success() {
            let error: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let code = error["__type"]
                .as_str()
                .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_string());
            let message = error["message"]
                .as_str()
                .or_else(|| error["Message"].as_str())
                .map(str::to_string)
                .unwrap_or_else(|| text.chars().take(200).collect());
            self.signer.answered(&by, status.as_u16(), &code).await;
            return Err(ApiError::Status {
                call: name,
                status: status.as_u16(),
                code,
                message,
            });
        }
        serde_json::from_str(&text).map_err(|source| ApiError::Decode { call: name, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, code: &str) -> ApiError {
        ApiError::Status {
            call: "Scan",
            status,
            code: code.into(),
            message: String::new(),
        }
    }

    #[test]
    fn throttling_and_server_errors_are_retried_refusals_are_not() {
        assert!(status(400, "ThrottlingException").is_retryable());
        assert!(status(400, "ProvisionedThroughputExceededException").is_retryable());
        assert!(status(500, "InternalServerError").is_retryable());
        assert!(!status(400, "ResourceNotFoundException").is_retryable());
        assert!(!status(400, "ValidationException").is_retryable());
        assert!(status(400, "UnrecognizedClientException").is_auth());
    }
}
