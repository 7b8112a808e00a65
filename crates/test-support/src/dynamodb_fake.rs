//! A strict DynamoDB of our own, for the DynamoDB registry: moto's PartiQL cannot run the parameterised
//! `INSERT` and `DELETE` statements external-dns sends (its parser serialises the `?` placeholder and
//! asserts on it), so both controllers are pointed here (`AWS_ENDPOINT_URL_DYNAMODB`). Written from
//! DynamoDB's API reference (JSON 1.0, `X-Amz-Target: DynamoDB_20120810.<Op>`) and the PartiQL reference:
//! `DescribeTable`; `Scan` with an `a = :v` filter, a projection, pages and `LastEvaluatedKey`;
//! `BatchExecuteStatement` of at most 25 statements, none on the same item twice, whose `INSERT` refuses an
//! existing key (`DuplicateItem`), whose `UPDATE` needs the item and its conditions (`ConditionalCheckFailed`)
//! and whose `DELETE` of a missing item succeeds but refuses a false condition. Anything else is refused
//! with a `ValidationException`, never guessed. On the [`crate::fake`] skeleton: throttled as DynamoDB
//! throttles (400 `ThrottlingException`), a statement on a refused item key failed alone in the batch's
//! answer (`ValidationError`) while the others run.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::fake::{self, Api, FakeServer, Faults, Locked, Purpose};

/// An item: attribute name → attribute value in DynamoDB's JSON (`{"S": "..."}`, `{"M": {...}}`).
pub type Item = Map<String, Value>;

/// One table: its key schema and items by hash key value.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// `AttributeDefinitions`: (name, type `S`/`N`/`B`).
    pub attributes: Vec<(String, String)>,
    /// `KeySchema`: (name, `HASH`/`RANGE`).
    pub key_schema: Vec<(String, String)>,
    /// Items by the text of their hash key (tables with a range key get none: the registry refuses them).
    pub items: BTreeMap<String, Item>,
}

impl Table {
    fn hash_key(&self) -> Option<&str> {
        self.key_schema
            .iter()
            .find(|(_, t)| t == "HASH")
            .map(|(n, _)| n.as_str())
    }
}

/// Everything the fake holds and counts; inspect it through [`FakeServer::lock`].
#[derive(Debug)]
pub struct Inner {
    /// Tables by name.
    pub tables: BTreeMap<String, Table>,
    /// Answer the next this many statements of a batch (each alone) with `ProvisionedThroughputExceeded`, as
    /// DynamoDB does when a batch's statements exceed the table's throughput: the others run.
    pub throttle_statements_next: usize,
    /// Every statement of every `BatchExecuteStatement`, as sent.
    pub statements: Vec<String>,
    /// The credential scope of the last request's signature (`<date>/<region>/<service>/aws4_request`).
    pub last_scope: String,
    /// Most items a `Scan` page examines.
    pub scan_page: usize,
}

/// No tables; scan pages of 1,000 items.
impl Default for Inner {
    fn default() -> Inner {
        Inner {
            tables: BTreeMap::new(),
            throttle_statements_next: 0,
            statements: Vec::new(),
            last_scope: String::new(),
            scan_page: 1000,
        }
    }
}

impl Api for Inner {
    fn routes(_: &str) -> Router<Shared> {
        Router::new().fallback(handle)
    }

    fn purpose(_: &Method, _: &Uri, headers: &HeaderMap) -> Purpose {
        let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok());
        match target.and_then(|t| t.strip_prefix("DynamoDB_20120810.")) {
            Some("DescribeTable") => Purpose::read("DescribeTable"),
            Some("Scan") => Purpose::read("Scan"),
            Some("BatchExecuteStatement") => Purpose::write("BatchExecuteStatement"),
            _ => Purpose::read("other"),
        }
    }

    fn throttled(_: Duration) -> Response {
        error(
            "ThrottlingException",
            "Rate of requests exceeds the allowed throughput.",
        )
    }

    fn unavailable(status: StatusCode) -> Response {
        json_response(
            status,
            json!({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "Internal server error"}),
        )
    }
}

type Shared = fake::Shared<Inner>;

/// A running fake: its `url` the endpoint, [`FakeServer::lock`] its state, log and faults; clones share it,
/// and it stops when the last is dropped.
pub type Fake = FakeServer<Inner>;

impl Fake {
    /// Creates a table as external-dns documents it: hash key `k` of type `S`, no range key.
    pub fn table(&self, name: &str) {
        self.create_table(name, &[("k", "S")], &[("k", "HASH")]);
    }

    /// Creates a table with these attribute definitions and key schema.
    pub fn create_table(&self, name: &str, attributes: &[(&str, &str)], key_schema: &[(&str, &str)]) {
        let own = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        self.lock().tables.insert(
            name.to_string(),
            Table {
                attributes: own(attributes),
                key_schema: own(key_schema),
                items: BTreeMap::new(),
            },
        );
    }

    /// Puts an item in place directly (someone else's, or an older writer's); `item` is a JSON object.
    pub fn put(&self, table: &str, item: Value) {
        let mut s = self.lock();
        let t = s.tables.get_mut(table).expect("the table exists");
        let Value::Object(item) = item else {
            panic!("an item is a JSON object")
        };
        let key = t
            .hash_key()
            .and_then(|k| item.get(k))
            .map(scalar_text)
            .expect("the item has the hash key");
        t.items.insert(key, item);
    }

    /// The items of a table in key order.
    pub fn items(&self, table: &str) -> Vec<Value> {
        self.lock()
            .tables
            .get(table)
            .map(|t| t.items.values().cloned().map(Value::Object).collect())
            .unwrap_or_default()
    }
}

/// The text of a scalar attribute value (`{"S": "x"}` → `x`), for keying items.
fn scalar_text(v: &Value) -> String {
    match v.as_object().and_then(|o| o.iter().next()) {
        Some((_, Value::String(s))) => s.clone(),
        _ => v.to_string(),
    }
}

fn error(code: &str, message: &str) -> Response {
    let status = if code == "InternalServerError" {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::BAD_REQUEST
    };
    json_response(
        status,
        json!({"__type": format!("com.amazonaws.dynamodb.v20120810#{code}"), "message": message}),
    )
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

fn validation(message: impl Into<String>) -> Response {
    error("ValidationException", &message.into())
}

async fn handle(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let mut s = fake::lock(&state);
    let header = |h: &str| headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("");
    let Some(op) = header("x-amz-target").strip_prefix("DynamoDB_20120810.") else {
        return error("UnknownOperationException", "no DynamoDB_20120810 X-Amz-Target");
    };
    let op = op.to_string();
    let Some(scope) = header("authorization")
        .split("Credential=")
        .nth(1)
        .and_then(|c| c.split(',').next())
        .and_then(|c| c.split_once('/'))
        .map(|(_, scope)| scope.to_string())
    else {
        return error(
            "MissingAuthenticationTokenException",
            "Request is missing Authentication Token",
        );
    };
    if scope.split('/').nth(2) != Some("dynamodb") {
        return error(
            "InvalidSignatureException",
            &format!("Credential should be scoped to service dynamodb: {scope}"),
        );
    }
    s.last_scope = scope;
    if !header("content-type").starts_with("application/x-amz-json-1.0") {
        return error(
            "SerializationException",
            "content type must be application/x-amz-json-1.0",
        );
    }
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&body) else {
        return error("SerializationException", "the body is not a JSON object");
    };
    match op.as_str() {
        "DescribeTable" => describe_table(&s, &request),
        "Scan" => scan(&s, &request),
        "BatchExecuteStatement" => batch_execute_statement(&mut s, &request),
        other => error(
            "UnknownOperationException",
            &format!("{other} is not served by this fake"),
        ),
    }
}

fn table_name(request: &Item) -> Option<&str> {
    request.get("TableName").and_then(Value::as_str)
}

fn describe_table(s: &Inner, request: &Item) -> Response {
    let Some(name) = table_name(request) else {
        return validation("TableName is required");
    };
    let Some(t) = s.tables.get(name) else {
        return error(
            "ResourceNotFoundException",
            &format!("Requested resource not found: Table: {name} not found"),
        );
    };
    let attributes: Vec<Value> = t
        .attributes
        .iter()
        .map(|(n, ty)| json!({"AttributeName": n, "AttributeType": ty}))
        .collect();
    let keys: Vec<Value> = t
        .key_schema
        .iter()
        .map(|(n, ty)| json!({"AttributeName": n, "KeyType": ty}))
        .collect();
    json_response(
        StatusCode::OK,
        json!({"Table": {
            "TableName": name,
            "TableStatus": "ACTIVE",
            "AttributeDefinitions": attributes,
            "KeySchema": keys,
            "ItemCount": t.items.len(),
            "TableArn": format!("arn:aws:dynamodb:us-east-1:123456789012:table/{name}"),
        }}),
    )
}

fn scan(s: &Inner, request: &Item) -> Response {
    let Some(name) = table_name(request) else {
        return validation("TableName is required");
    };
    let Some(t) = s.tables.get(name) else {
        return error("ResourceNotFoundException", "Requested resource not found");
    };
    let values = request.get("ExpressionAttributeValues").and_then(Value::as_object);
    // The one filter shape the registry sends: `<attribute> = <:placeholder>`.
    let filter = match request.get("FilterExpression").and_then(Value::as_str) {
        None => None,
        Some(f) => {
            let Some((attr, placeholder)) = f.split_once('=').map(|(a, p)| (a.trim(), p.trim())) else {
                return validation(format!("unsupported FilterExpression {f:?}"));
            };
            let Some(value) = values.and_then(|v| v.get(placeholder)) else {
                return validation(format!(
                    "Value provided in ExpressionAttributeValues unused in expressions or undefined: {placeholder}"
                ));
            };
            if !attr.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return validation(format!("unsupported FilterExpression {f:?}"));
            }
            Some((attr.to_string(), value.clone()))
        }
    };
    let projection: Option<Vec<&str>> = request
        .get("ProjectionExpression")
        .and_then(Value::as_str)
        .map(|p| p.split(',').map(str::trim).collect());
    let limit = request
        .get("Limit")
        .and_then(Value::as_u64)
        .map_or(s.scan_page, |l| (l as usize).min(s.scan_page));
    let start = request
        .get("ExclusiveStartKey")
        .and_then(|k| t.hash_key().and_then(|h| k.get(h)))
        .map(scalar_text);
    let mut examined = t
        .items
        .range::<String, _>((
            start
                .as_ref()
                .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
            std::ops::Bound::Unbounded,
        ))
        .take(limit + 1)
        .peekable();
    let mut items = Vec::new();
    let mut scanned = 0;
    let mut last = None;
    while let Some((key, item)) = examined.next() {
        if scanned == limit {
            break;
        }
        scanned += 1;
        if examined.peek().is_some() && scanned == limit {
            last = Some(key.clone());
        }
        if let Some((attr, value)) = &filter
            && item.get(attr) != Some(value)
        {
            continue;
        }
        let projected: Item = match &projection {
            Some(names) => item
                .iter()
                .filter(|(k, _)| names.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            None => item.clone(),
        };
        items.push(Value::Object(projected));
    }
    let mut answer = json!({"Items": items, "Count": items.len(), "ScannedCount": scanned});
    if let (Some(key), Some(hash)) = (last, t.hash_key()) {
        answer["LastEvaluatedKey"] = json!({hash: {"S": key}});
    }
    json_response(StatusCode::OK, answer)
}

/// A statement as parsed: its verb, table, the attributes it sets and the equalities of its WHERE clause,
/// each with the index of the parameter that gives its value.
struct Statement {
    verb: Verb,
    table: String,
    set: Vec<(String, usize)>,
    conditions: Vec<(String, usize)>,
    parameters: usize,
}

#[derive(PartialEq)]
enum Verb {
    Insert,
    Update,
    Delete,
}

/// Splits a statement into tokens: quoted identifiers (`"x"`), quoted names (`'x'`), words, `?` and the
/// punctuation `{ } : , =`.
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '"' | '\'' => {
                let mut t = String::from(c);
                loop {
                    match chars.next() {
                        Some(x) if x == c => break,
                        Some(x) => t.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
                out.push(t);
            }
            '{' | '}' | ':' | ',' | '=' | '?' => out.push(c.to_string()),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' => {
                let mut t = String::from(c);
                while let Some(&x) = chars.peek() {
                    if x.is_ascii_alphanumeric() || x == '_' || x == '-' || x == '.' {
                        t.push(x);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(t);
            }
            other => return Err(format!("unexpected character {other:?}")),
        }
    }
    Ok(out)
}

/// An identifier: `"name"` or a bare word.
fn identifier(t: &str) -> Result<String, String> {
    match t.strip_prefix('"') {
        Some(name) => Ok(name.to_string()),
        None if t.starts_with('\'') => Err(format!("{t}' is a string, not an identifier")),
        None => Ok(t.to_string()),
    }
}

fn parse(text: &str) -> Result<Statement, String> {
    let t = tokens(text)?;
    let mut at = 0;
    let mut parameters = 0;
    let mut next = |want: Option<&str>| -> Result<String, String> {
        let tok = t
            .get(at)
            .cloned()
            .ok_or_else(|| "unexpected end of statement".to_string())?;
        at += 1;
        match want {
            Some(w) if !tok.eq_ignore_ascii_case(w) => Err(format!("expected {w}, found {tok}")),
            _ => Ok(tok),
        }
    };
    let mut placeholder = |tok: String| -> Result<usize, String> {
        if tok != "?" {
            return Err(format!("only ? parameters are supported here, found {tok}"));
        }
        parameters += 1;
        Ok(parameters - 1)
    };
    let verb = next(None)?.to_ascii_uppercase();
    let mut statement = Statement {
        verb: Verb::Insert,
        table: String::new(),
        set: Vec::new(),
        conditions: Vec::new(),
        parameters: 0,
    };
    match verb.as_str() {
        "INSERT" => {
            next(Some("INTO"))?;
            statement.table = identifier(&next(None)?)?;
            next(Some("VALUE"))?;
            next(Some("{"))?;
            loop {
                let name = next(None)?;
                let Some(name) = name.strip_prefix('\'') else {
                    return Err(format!("an attribute name in VALUE is a 'string', found {name}"));
                };
                next(Some(":"))?;
                let p = placeholder(next(None)?)?;
                statement.set.push((name.to_string(), p));
                match next(None)?.as_str() {
                    "," => continue,
                    "}" => break,
                    other => return Err(format!("expected , or }}, found {other}")),
                }
            }
        }
        "UPDATE" => {
            statement.verb = Verb::Update;
            statement.table = identifier(&next(None)?)?;
            next(Some("SET"))?;
            loop {
                let name = identifier(&next(None)?)?;
                next(Some("="))?;
                let p = placeholder(next(None)?)?;
                statement.set.push((name, p));
                match next(None)?.to_ascii_uppercase().as_str() {
                    // DynamoDB's PartiQL sets several attributes with one `SET` clause each.
                    "," | "SET" => continue,
                    "WHERE" => break,
                    other => return Err(format!("expected , SET or WHERE, found {other}")),
                }
            }
        }
        "DELETE" => {
            statement.verb = Verb::Delete;
            next(Some("FROM"))?;
            statement.table = identifier(&next(None)?)?;
            next(Some("WHERE"))?;
        }
        other => return Err(format!("unsupported statement {other}")),
    }
    if statement.verb != Verb::Insert {
        loop {
            let name = identifier(&next(None)?)?;
            next(Some("="))?;
            let p = placeholder(next(None)?)?;
            statement.conditions.push((name, p));
            match next(None) {
                Err(_) => break,
                Ok(and) if and.eq_ignore_ascii_case("AND") => continue,
                Ok(other) => return Err(format!("expected AND, found {other}")),
            }
        }
    } else if next(None).is_ok() {
        return Err("unexpected text after VALUE {...}".into());
    }
    statement.parameters = parameters;
    Ok(statement)
}

fn batch_execute_statement(locked: &mut Locked<Inner>, request: &Item) -> Response {
    let Locked { api: s, faults, .. } = locked;
    let Some(statements) = request.get("Statements").and_then(Value::as_array) else {
        return validation("Statements is required");
    };
    if statements.is_empty() || statements.len() > 25 {
        return validation(format!(
            "1 validation error detected: Value at 'statements' failed to satisfy constraint: Member must have length less than or equal to 25 and greater than or equal to 1 (got {})",
            statements.len()
        ));
    }
    // Parse and validate all first: an invalid request changes nothing.
    let mut parsed = Vec::with_capacity(statements.len());
    let mut keys = HashSet::new();
    for st in statements {
        let text = st.get("Statement").and_then(Value::as_str).unwrap_or("");
        s.statements.push(text.to_string());
        let params: Vec<Value> = st
            .get("Parameters")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let statement = match parse(text) {
            Ok(p) => p,
            Err(e) => return validation(format!("Statement wasn't well formed, can't be processed: {e}: {text}")),
        };
        if statement.parameters != params.len() {
            return validation(format!(
                "Number of parameters in request and statement don't match ({} and {})",
                params.len(),
                statement.parameters
            ));
        }
        if let Some(t) = s.tables.get(&statement.table) {
            let hash = t.hash_key().unwrap_or("");
            let key = match statement.verb {
                Verb::Insert => statement.set.iter().find(|(n, _)| n == hash),
                _ => statement.conditions.iter().find(|(n, _)| n == hash),
            };
            let Some((_, at)) = key else {
                return validation(format!(
                    "Where clause does not contain a mandatory equality on all key attributes: {text}"
                ));
            };
            let key_value = &params[*at];
            let key_type = t
                .attributes
                .iter()
                .find(|(n, _)| n == hash)
                .map_or("S", |(_, ty)| ty.as_str());
            if key_value.get(key_type).is_none() {
                return validation("One or more parameter values were invalid: Type mismatch for key");
            }
            if statement.verb == Verb::Update && statement.set.iter().any(|(n, _)| n == hash) {
                return validation("Cannot update attribute k. This attribute is part of the key");
            }
            if !keys.insert((statement.table.clone(), scalar_text(key_value))) {
                return validation("Provided list of item keys contains duplicates");
            }
        }
        parsed.push((statement, params));
    }
    let responses: Vec<Value> = parsed
        .into_iter()
        .map(|(statement, params)| {
            if s.throttle_statements_next > 0 {
                s.throttle_statements_next -= 1;
                return json!({"Error": {
                    "Code": "ProvisionedThroughputExceeded",
                    "Message": "The level of configured provisioned throughput for the table was exceeded."
                }});
            }
            execute(s, faults, &statement, &params)
        })
        .collect();
    json_response(StatusCode::OK, json!({"Responses": responses}))
}

/// One statement of a batch; one on an item whose key a test refused fails alone, as an invalid one does.
fn execute(s: &mut Inner, faults: &Faults, st: &Statement, params: &[Value]) -> Value {
    let failed = |code: &str, message: &str| json!({"Error": {"Code": code, "Message": message}});
    let Some(t) = s.tables.get_mut(&st.table) else {
        return failed("ResourceNotFound", "Requested resource not found");
    };
    let hash = t.hash_key().unwrap_or("").to_string();
    let value_of = |at: usize| params[at].clone();
    let key_of = |pairs: &[(String, usize)]| {
        pairs
            .iter()
            .find(|(n, _)| *n == hash)
            .map(|(_, at)| scalar_text(&params[*at]))
            .unwrap_or_default()
    };
    let ok = json!({"TableName": st.table});
    let key = key_of(if st.verb == Verb::Insert {
        &st.set
    } else {
        &st.conditions
    });
    if faults.refuses(&key) {
        return failed("ValidationError", &format!("The item {key} is refused by this test"));
    }
    match st.verb {
        Verb::Insert => {
            if t.items.contains_key(&key) {
                return failed("DuplicateItem", "Duplicate primary key exists in table");
            }
            let item: Item = st.set.iter().map(|(n, at)| (n.clone(), value_of(*at))).collect();
            t.items.insert(key, item);
            ok
        }
        Verb::Update | Verb::Delete => {
            let Some(item) = t.items.get_mut(&key) else {
                return if st.verb == Verb::Delete {
                    ok
                } else {
                    failed("ConditionalCheckFailed", "The conditional request failed")
                };
            };
            let holds = st.conditions.iter().all(|(n, at)| item.get(n) == Some(&params[*at]));
            if !holds {
                return failed("ConditionalCheckFailed", "The conditional request failed");
            }
            if st.verb == Verb::Delete {
                t.items.remove(&key);
            } else {
                for (n, at) in &st.set {
                    item.insert(n.clone(), value_of(*at));
                }
            }
            ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_dns_statements_parse() {
        let insert = parse("INSERT INTO \"external-dns\" VALUE {'k':?, 'o':?, 'l':?}").expect("parses");
        assert!(insert.verb == Verb::Insert && insert.table == "external-dns" && insert.parameters == 3);
        let update = parse("UPDATE \"external-dns\" SET \"l\"=? WHERE \"k\"=?").expect("parses");
        assert_eq!(update.set, vec![("l".to_string(), 0)]);
        assert_eq!(update.conditions, vec![("k".to_string(), 1)]);
        let take = parse("UPDATE \"t\" SET \"o\"=? SET \"l\"=? WHERE \"k\"=? AND \"o\"=?").expect("parses");
        assert_eq!(take.set, vec![("o".to_string(), 0), ("l".to_string(), 1)]);
        assert_eq!(take.conditions, vec![("k".to_string(), 2), ("o".to_string(), 3)]);
        let delete = parse("DELETE FROM \"external-dns\" WHERE \"k\"=? AND \"o\"=?").expect("parses");
        assert_eq!(delete.conditions.len(), 2);
        assert!(
            parse("DELETE FROM \"t\" WHERE \"k\"='x'").is_err(),
            "literals are refused"
        );
        assert!(parse("SELECT * FROM \"t\"").is_err());
    }
}
