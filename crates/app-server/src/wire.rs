//! The message codec: one JSON-RPC 2.0 message per line, codex's way — the `"jsonrpc"` field is
//! left out of what the server writes and accepted (when it says `"2.0"`) in what it reads.
//!
//! Invariants: `decode` never panics, whatever the line; every failure it reports carries the
//! JSON-RPC error code to answer with and, when the line had one, the request id. `encode`
//! writes exactly one line without its newline.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::types::{RequestId, ServerNotification, ServerRequest};

/// The line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a request, notification or response.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed.
pub const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// For the person.
    pub message: String,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<Value>>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }
}

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, to be answered.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// The answer to a server request.
    Response {
        /// The server request's id.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error answer to a server request.
    Error {
        /// The server request's id.
        id: RequestId,
        /// The error.
        error: RpcError,
    },
}

/// A line that is not a message: what to answer, and to which id (`None`: `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The id, when the line had a usable one.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: RpcError,
}

/// Reads one line.
///
/// # Errors
/// `PARSE_ERROR` when it is not JSON; `INVALID_REQUEST` when it is not a JSON-RPC message.
pub fn decode(line: &str) -> Result<Incoming, DecodeError> {
    let invalid = |id: Option<RequestId>, message: &str| DecodeError {
        id,
        error: RpcError::invalid_request(message.to_owned()),
    };
    let value: Value = serde_json::from_str(line).map_err(|err| DecodeError {
        id: None,
        error: RpcError::new(PARSE_ERROR, format!("parse error: {err}")),
    })?;
    let Value::Object(mut object) = value else {
        return Err(invalid(None, "a message is a JSON object"));
    };
    let id = match object.remove("id") {
        None => None,
        Some(Value::String(s)) => Some(RequestId::String(s)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(RequestId::Integer(n)),
            None => return Err(invalid(None, "`id` must be a string or an integer")),
        },
        Some(_) => return Err(invalid(None, "`id` must be a string or an integer")),
    };
    match object.remove("jsonrpc") {
        None => {}
        Some(Value::String(version)) if version == "2.0" => {}
        Some(_) => return Err(invalid(id, "`jsonrpc` must be \"2.0\" when given")),
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), id) => Err(invalid(id, "`method` must be a string")),
        (None, Some(id)) => {
            if let Some(error) = object.remove("error") {
                return match serde_json::from_value::<RpcError>(error) {
                    Ok(error) => Ok(Incoming::Error { id, error }),
                    Err(_) => Err(invalid(Some(id), "`error` must have a code and a message")),
                };
            }
            match object.remove("result") {
                Some(result) => Ok(Incoming::Response { id, result }),
                None => Err(invalid(Some(id), "a message needs `method`, `result` or `error`")),
            }
        }
        (None, None) => Err(invalid(None, "a message needs `method`, or `id` with `result`")),
    }
}

/// One message from the server.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// A result.
    Response {
        /// The request's id.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error answer; `id` `None` when the request's id could not be read.
    Error {
        /// The request's id.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
    /// A notification.
    Notification(ServerNotification),
    /// A request to the client.
    Request {
        /// Its id.
        id: RequestId,
        /// The request.
        request: ServerRequest,
    },
}

/// The line of one message, without its newline.
pub fn encode(message: &Outgoing) -> String {
    let mut object = Map::new();
    match message {
        Outgoing::Response { id, result } => {
            object.insert("id".into(), id_value(Some(id)));
            object.insert("result".into(), result.clone());
        }
        Outgoing::Error { id, error } => {
            object.insert("id".into(), id_value(id.as_ref()));
            object.insert("error".into(), to_value(error));
        }
        Outgoing::Notification(notification) => {
            if let Value::Object(fields) = to_value(notification) {
                object.extend(fields);
            }
        }
        Outgoing::Request { id, request } => {
            object.insert("id".into(), id_value(Some(id)));
            if let Value::Object(fields) = to_value(request) {
                object.extend(fields);
            }
        }
    }
    Value::Object(object).to_string()
}

fn id_value(id: Option<&RequestId>) -> Value {
    match id {
        Some(RequestId::Integer(n)) => Value::from(*n),
        Some(RequestId::String(s)) => Value::from(s.clone()),
        None => Value::Null,
    }
}

/// Our own types always serialize; a failure would be a bug, shown as `null` rather than a panic.
pub(crate) fn to_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A method's params as its type; `null` counts as `{}`.
///
/// # Errors
/// `INVALID_PARAMS`, naming the field at fault.
pub fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = if params.is_null() { Value::Object(Map::new()) } else { params };
    if !params.is_object() {
        return Err(RpcError::invalid_params("invalid params: expected an object"));
    }
    // Pretty-printed, each top-level field starts on a line of its own with a two-space
    // indent, so the line serde stops at tells which field is wrong.
    let text = serde_json::to_string_pretty(&params).unwrap_or_default();
    serde_json::from_str::<T>(&text).map_err(|err| {
        let mut message = err.to_string();
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        let field = text
            .lines()
            .take(err.line())
            .filter_map(|line| {
                let rest = line.strip_prefix("  \"")?;
                if rest.starts_with(' ') {
                    return None;
                }
                rest.split_once("\":").map(|(key, _)| key.to_owned())
            })
            .last();
        if message.starts_with("missing field") || message.starts_with("unknown field") {
            return RpcError::invalid_params(format!("invalid params: {message}"));
        }
        match field {
            Some(field) => {
                RpcError::invalid_params(format!("invalid params: `{field}`: {message}"))
            }
            None => RpcError::invalid_params(format!("invalid params: {message}")),
        }
    })
}
