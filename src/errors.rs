//! One error type for the whole core. `bindings::exceptions` maps each kind to a class of `ferroq.exceptions`.

use std::fmt;

use redis::{ErrorKind as RedisKind, RedisError, ServerErrorKind};

/// Redis's words when a script calls a command its ACL user may not run (`ferroq.pure._ops` has the twin).
const SCRIPT_NOPERM: &str = "user executing the script can't run this command";

/// What went wrong; decides the Python exception class.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// Redis unreachable, or the connection dropped during a call (outcome unknown).
    Connection,
    /// The TLS handshake failed: the server's certificate is not trusted, expired or for another host, or
    /// the server wants a client certificate (a `Connection` error that retrying does not fix).
    Tls,
    /// No reply within the command timeout.
    Timeout,
    /// The client was closed by the caller.
    Closed,
    /// No URL configured and the embedded server cannot start (raised by the Python side only).
    ServerUnavailable,
    InvalidArgument,
    InvalidName,
    InvalidMessage,
    MessageTooLarge,
    /// The RSMQ queue does not exist (its attributes are missing), or a stream's consumer group does not
    /// (Redis's NOGROUP).
    QueueNotFound,
    /// An RSMQ queue of that name exists already, or a stream's consumer group does (Redis's BUSYGROUP).
    QueueExists,
    /// Some items of a batch are invalid: `(index, error)` for each, in input order.
    Batch(Vec<(usize, Error)>),
    OutOfMemory,
    PermissionDenied,
    /// The server is older than the oldest version ferroq supports (`limits::MINIMUM_SERVER`).
    UnsupportedServer,
    /// Redis returned data that does not follow the protocol.
    Protocol,
    /// Redis is loading its dataset (retried for a while before it surfaces as `Connection`).
    Loading,
    /// The script cache does not hold a script (handled by loading it; never surfaces).
    NoScript,
    /// Any other error reply; `code` is its first word (`ERR`, `WRONGTYPE`, ...).
    Server {
        code: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol, message)
    }

    pub fn closed() -> Self {
        Self::new(ErrorKind::Closed, "client is closed")
    }

    /// The connection broke while a call was in flight: reconnect, and repeat only idempotent calls.
    pub fn is_connection_dropped(&self) -> bool {
        self.kind == ErrorKind::Connection
    }

    /// Repeating the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Loading
        )
    }

    /// Redis refused a stream command because its key does not exist (`ERR no such key` from XINFO,
    /// `ERR The XGROUP subcommand requires the key to exist` from XGROUP), or named a missing group (NOGROUP,
    /// also when a script met it: see [`Error::server`]).
    pub fn is_missing_stream_or_group(&self) -> bool {
        match &self.kind {
            ErrorKind::QueueNotFound => true,
            ErrorKind::Server { code } if code == "ERR" => {
                let m = &self.message;
                m.contains("no such key") || m.contains("requires the key to exist")
            }
            _ => false,
        }
    }

    /// Maps a redis-rs error. `url` must already be redacted: it is put in connection messages.
    pub fn from_redis(err: &RedisError, url: &str) -> Self {
        let detail = err.detail().unwrap_or("").trim().to_string();
        let with_detail = |head: String| {
            if detail.is_empty() {
                head
            } else {
                format!("{head}: {detail}")
            }
        };
        match err.kind() {
            RedisKind::Server(ServerErrorKind::BusyLoading) => {
                Self::new(ErrorKind::Loading, format!("Redis at {url} is loading its dataset"))
            }
            RedisKind::Server(ServerErrorKind::NoScript) => {
                Self::new(ErrorKind::NoScript, with_detail("NOSCRIPT".into()))
            }
            RedisKind::Server(ServerErrorKind::NoPerm) => {
                Self::new(ErrorKind::PermissionDenied, with_detail("NOPERM".into()))
            }
            RedisKind::AuthenticationFailed => Self::new(
                ErrorKind::PermissionDenied,
                format!("authentication to Redis at {url} failed (wrong user or password)"),
            ),
            RedisKind::Io if tls_failure(err).is_some() => Self::new(
                ErrorKind::Tls,
                format!(
                    "TLS handshake with Redis at {url} failed: {}",
                    tls_failure(err).unwrap_or_default()
                ),
            ),
            RedisKind::Io if err.is_timeout() => {
                Self::new(ErrorKind::Timeout, format!("Redis at {url} did not answer in time"))
            }
            RedisKind::Io => Self::new(
                ErrorKind::Connection,
                format!("connection to Redis at {url} failed: {err}"),
            ),
            RedisKind::Parse => Self::new(
                ErrorKind::Protocol,
                format!("unreadable reply from Redis at {url}: {err}"),
            ),
            RedisKind::RESP3NotSupported => Self::unsupported_server(url, "older than Redis 6 (no HELLO)"),
            RedisKind::InvalidClientConfig => Self::invalid(format!("invalid Redis URL \"{url}\": {}", err.category())),
            RedisKind::Server(_) | RedisKind::Extension => {
                let code = err.code().unwrap_or("ERR").to_string();
                Self::server(&code, &detail)
            }
            _ => Self::new(ErrorKind::Connection, format!("Redis at {url}: {err}")),
        }
    }

    /// A server at `url` that is too old; `what` says what it is (`Redis 5.0.7`, or why it is known to be
    /// too old).
    pub fn unsupported_server(url: &str, what: &str) -> Self {
        let (major, minor, _) = crate::limits::MINIMUM_SERVER;
        Self::new(
            ErrorKind::UnsupportedServer,
            format!("Redis at {url} is {what}: ferroq needs Redis {major}.{minor} or later, or Valkey 7.2 or later"),
        )
    }

    /// A server at `url` answered with something that is not RESP (an HTTP or SSH server, a wrong port).
    /// The pure client words it the same (`ferroq.pure._ops.map_error`).
    pub fn not_redis(url: &str) -> Self {
        Self::new(
            ErrorKind::Connection,
            format!("the server at {url} does not speak the Redis protocol (not a Redis server?)"),
        )
    }

    /// An error reply `code detail`, classified by its code. Redis 6.2 wraps an error raised inside a
    /// script in an `ERR Error running script ...`; the error inside decides (as on Redis 7 and Valkey).
    pub fn server(code: &str, detail: &str) -> Self {
        let (code, detail) = match code {
            "ERR" => unwrap_script_error(detail).unwrap_or((code, detail)),
            _ => (code, detail),
        };
        let message = if detail.is_empty() {
            code.to_string()
        } else {
            format!("{code} {detail}")
        };
        let kind = match code {
            // A command inside a script that the ACL user may not run (the script stops there).
            "ERR" if detail.contains(SCRIPT_NOPERM) => ErrorKind::PermissionDenied,
            "OOM" => ErrorKind::OutOfMemory,
            "NOPERM" | "NOAUTH" | "WRONGPASS" => ErrorKind::PermissionDenied,
            "LOADING" => ErrorKind::Loading,
            "NOSCRIPT" => ErrorKind::NoScript,
            "NOGROUP" => ErrorKind::QueueNotFound,
            "BUSYGROUP" => ErrorKind::QueueExists,
            _ => ErrorKind::Server { code: code.to_string() },
        };
        Self::new(kind, message)
    }
}

/// What went wrong in a TLS handshake, in words that say what to fix (the twin of
/// `ferroq.pure._ops.tls_failure`); None when `err` is not a TLS error. redis-rs keeps only rustls's text.
fn tls_failure(err: &RedisError) -> Option<String> {
    let text = err.to_string();
    let has = |s: &str| text.contains(s);
    let what = if has("invalid peer certificate") {
        if has("UnknownIssuer") {
            "the server's certificate is not signed by a trusted CA (give the CA with tls_ca_file)"
        } else if has("expired") || has("Expired") {
            "the server's certificate has expired"
        } else if has("not valid for name") || has("NotValidForName") {
            "the server's certificate is not valid for this host name"
        } else if has("not valid yet") || has("NotValidYet") {
            "the server's certificate is not valid yet"
        } else {
            "the server's certificate was refused"
        }
    } else if has("received fatal alert") {
        if has("CertificateRequired") || has("HandshakeFailure") {
            "the server requires a client certificate (give tls_cert_file and tls_key_file)"
        } else {
            "the server refused the handshake (is the client certificate signed by a CA it trusts?)"
        }
    } else {
        return None;
    };
    Some(format!("{what} ({text})"))
}

/// The error inside Redis 6.2's `Error running script (call to f_<sha1>): @user_script:<line>: <error>`, as
/// `(code, detail)`: `<error>` is `CODE detail` for an error reply of `redis.call`, or `@user_script: <line>:
/// -CODE detail` for one Redis raised before running the command (OOM, NOPERM). `None` when the script failed
/// without an error code (a Lua error) or `detail` is not a script error. The pure client does the same
/// (`ferroq.pure._ops.unwrap_script_error`).
fn unwrap_script_error(detail: &str) -> Option<(&str, &str)> {
    let mut rest = detail.strip_prefix("Error running script")?;
    rest = rest.split_once("): ").map_or(rest, |(_, after)| after);
    loop {
        let trimmed = rest.trim_start();
        let Some(after) = trimmed.strip_prefix("@user_script:") else {
            rest = trimmed;
            break;
        };
        let line = after.trim_start().trim_start_matches(|c: char| c.is_ascii_digit());
        rest = line.strip_prefix(':')?;
    }
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let (code, detail) = rest.split_once(' ').unwrap_or((rest, ""));
    let is_code = !code.is_empty() && code.bytes().all(|b| b.is_ascii_uppercase());
    is_code.then_some((code, detail))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_codes_are_classified() {
        assert_eq!(Error::server("OOM", "command not allowed").kind, ErrorKind::OutOfMemory);
        assert_eq!(Error::server("WRONGPASS", "x").kind, ErrorKind::PermissionDenied);
        assert_eq!(Error::server("NOAUTH", "x").kind, ErrorKind::PermissionDenied);
        let in_script =
            "The user executing the script can't run this command or subcommand script: 1f, on @user_script:1.";
        assert_eq!(Error::server("ERR", in_script).kind, ErrorKind::PermissionDenied);
        assert_eq!(
            Error::server("WRONGTYPE", "x").kind,
            ErrorKind::Server {
                code: "WRONGTYPE".into()
            }
        );
        assert_eq!(Error::server("ERR", "boom").message, "ERR boom");
        assert_eq!(
            Error::server("NOGROUP", "No such key 'k' or consumer group 'g'").kind,
            ErrorKind::QueueNotFound
        );
        assert_eq!(
            Error::server("BUSYGROUP", "Consumer Group name already exists").kind,
            ErrorKind::QueueExists
        );
        assert!(Error::server("NOGROUP", "x").is_missing_stream_or_group());
        assert!(Error::server("ERR", "no such key").is_missing_stream_or_group());
        assert!(Error::server("ERR", "The XGROUP subcommand requires the key to exist.").is_missing_stream_or_group());
        assert!(Error::server(
            "ERR",
            "Error running script (call to f_1): @user_script:3: NOGROUP No such key"
        )
        .is_missing_stream_or_group());
        assert!(!Error::server("ERR", "boom").is_missing_stream_or_group());
    }

    #[test]
    fn script_errors_of_redis_6_2_are_unwrapped() {
        let call = "Error running script (call to f_aa19): @user_script:1: WRONGTYPE Operation against a key \
                    holding the wrong kind of value";
        let err = Error::server("ERR", call);
        assert_eq!(
            err.kind,
            ErrorKind::Server {
                code: "WRONGTYPE".into()
            }
        );
        assert_eq!(
            err.message,
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
        let oom = "Error running script (call to f_ee5b): @user_script:12: @user_script: 12: -OOM command not \
                   allowed when used memory > 'maxmemory'.";
        let err = Error::server("ERR", oom);
        assert_eq!(err.kind, ErrorKind::OutOfMemory);
        assert_eq!(err.message, "OOM command not allowed when used memory > 'maxmemory'.");
        let noperm = "Error running script (call to f_1): @user_script:3: @user_script: 3: -NOPERM this user has \
                      no permissions to access one of the keys used as arguments";
        assert_eq!(Error::server("ERR", noperm).kind, ErrorKind::PermissionDenied);
        // A Lua error or an unknown command carries no code: it stays ERR, with the whole text.
        for plain in [
            "Error running script (call to f_8290): @user_script:1: user_script:1: boom",
            "Error running script (call to f_4f59): @user_script:1: @user_script: 1: Unknown Redis command called \
             from Lua script",
            "Error running script",
            "wrong number of arguments",
        ] {
            let err = Error::server("ERR", plain);
            assert_eq!(err.kind, ErrorKind::Server { code: "ERR".into() }, "{plain}");
            assert_eq!(err.message, format!("ERR {plain}"));
        }
    }

    #[test]
    fn predicates() {
        assert!(Error::new(ErrorKind::Connection, "x").is_connection_dropped());
        assert!(Error::new(ErrorKind::Timeout, "x").is_retryable());
        assert!(!Error::invalid("x").is_retryable());
    }

    #[test]
    fn a_server_without_resp3_is_unsupported() {
        let err = RedisError::from((RedisKind::RESP3NotSupported, "no HELLO"));
        let mapped = Error::from_redis(&err, "redis://h:1");
        assert_eq!(mapped.kind, ErrorKind::UnsupportedServer);
        assert!(mapped
            .message
            .starts_with("Redis at redis://h:1 is older than Redis 6 (no HELLO): ferroq needs"));
    }

    #[test]
    fn io_errors_map_to_connection_or_timeout() {
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(Error::from_redis(&refused, "redis://h:1").kind, ErrorKind::Connection);
        let timeout = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(Error::from_redis(&timeout, "redis://h:1").kind, ErrorKind::Timeout);
    }
}
