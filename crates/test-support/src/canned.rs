//! A server on 127.0.0.1 that gives every request one answer a test sets, on the [`crate::fake`] skeleton
//! (so its requests are logged and counted): for how a client treats an answer no stateful fake gives on
//! demand, such as a throttling code under a 400 or a `Retry-After` from a protocol that has no throttling.

use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::fake::{self, Api, FakeServer, Purpose};

/// The answer every request gets: a status, headers and a body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// Headers, as (name, value).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: String,
}

impl Default for Answer {
    /// `200 OK` with no headers and no body.
    fn default() -> Self {
        Answer {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: String::new(),
        }
    }
}

/// A running server answering `answer` to everything; stops when dropped.
pub type Canned = FakeServer<Answer>;

/// Starts a server giving every request `answer` (on its own thread and runtime).
pub fn serve(answer: Answer) -> Canned {
    FakeServer::serve(answer)
}

impl Api for Answer {
    fn routes(_: &str) -> Router<fake::Shared<Answer>> {
        Router::new().fallback(answer)
    }

    fn purpose(_: &Method, _: &Uri, _: &HeaderMap) -> Purpose {
        Purpose::read("any")
    }

    fn throttled(retry_after: Duration) -> Response {
        (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", fake::retry_after_seconds(retry_after))],
        )
            .into_response()
    }

    fn unavailable(status: StatusCode) -> Response {
        status.into_response()
    }
}

async fn answer(State(shared): State<fake::Shared<Answer>>) -> Response {
    let answer = fake::lock(&shared).api.clone();
    let mut response = (answer.status, answer.body).into_response();
    for (name, value) in answer.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(HeaderName::from_static(name), value);
        }
    }
    response
}
