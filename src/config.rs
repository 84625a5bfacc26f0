//! Client options, their validation, and URL redaction.

use std::time::Duration;

use crate::errors::{Error, Result};
use crate::limits::{MAX_CHUNK_SIZE, MAX_POOL_SIZE, MAX_SECONDS};
use crate::pyrepr::{py_float, py_repr};

/// Validated client options. `url` holds the secret; show only `redacted`.
#[derive(Clone)]
pub struct Options {
    pub url: String,
    pub redacted: String,
    pub pool_size: usize,
    pub connect_timeout: Duration,
    pub command_timeout: Duration,
    pub max_message_bytes: usize,
    pub chunk_size: usize,
    pub client_name: Option<String>,
    /// Credentials and TLS settings from outside the URL (`ferroq.connection.resolve`).
    pub endpoint: Endpoint,
}

/// What `ferroq.connection.resolve` found besides the URL: credentials that did not come in the URL, and
/// the TLS files (PEM paths) and switches of a `rediss://` URL. `password` is a secret: never shown.
#[derive(Clone, Default)]
pub struct Endpoint {
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls_ca_file: Option<String>,
    pub tls_cert_file: Option<String>,
    pub tls_key_file: Option<String>,
    pub tls_insecure_skip_verify: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_key_file", &self.tls_key_file)
            .field("tls_insecure_skip_verify", &self.tls_insecure_skip_verify)
            .finish()
    }
}

impl Endpoint {
    /// The PEM files for redis-rs, or None when no CA or client certificate is given (the system's roots,
    /// no client certificate). Unreadable files are an `InvalidArgument` naming the option and the path.
    pub fn certificates(&self) -> Result<Option<redis::TlsCertificates>> {
        fn read(name: &str, path: &str) -> Result<Vec<u8>> {
            std::fs::read(path).map_err(|e| Error::invalid(format!("{name} {path:?} cannot be read: {e}")))
        }
        if self.tls_ca_file.is_none() && self.tls_cert_file.is_none() {
            return Ok(None);
        }
        let root_cert = match &self.tls_ca_file {
            Some(path) => Some(read("tls_ca_file", path)?),
            None => None,
        };
        let client_tls = match &self.tls_cert_file {
            Some(cert) => Some(redis::ClientTlsConfig {
                client_cert: read("tls_cert_file", cert)?,
                // The key may sit in the certificate's file.
                client_key: read("tls_key_file", self.tls_key_file.as_deref().unwrap_or(cert.as_str()))?,
            }),
            None => None,
        };
        Ok(Some(redis::TlsCertificates { client_tls, root_cert }))
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("url", &self.redacted)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("chunk_size", &self.chunk_size)
            .field("client_name", &self.client_name)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

/// Raw option values as given by the caller, before validation.
#[derive(Debug, Clone)]
pub struct RawOptions {
    pub pool_size: i64,
    pub connect_timeout: f64,
    pub command_timeout: f64,
    pub max_message_bytes: i64,
    pub chunk_size: i64,
    pub client_name: Option<String>,
}

impl Default for RawOptions {
    fn default() -> Self {
        Self {
            pool_size: 2,
            connect_timeout: 5.0,
            command_timeout: 10.0,
            max_message_bytes: 1_048_576,
            chunk_size: 1000,
            client_name: None,
        }
    }
}

fn int_in(name: &str, value: i64, lo: i64, hi: i64) -> Result<usize> {
    if value < lo || value > hi {
        return Err(Error::invalid(format!(
            "{name} must be an int from {lo} to {hi}, got {value}"
        )));
    }
    Ok(value as usize)
}

/// A timeout in seconds: `value` is None when it is not a finite int or float; `repr` is how Python shows it.
pub fn timeout(name: &str, value: Option<f64>, repr: &str) -> Result<Duration> {
    match value {
        // NaN fails both comparisons, so it is refused too.
        Some(v) if v > 0.0 && v <= MAX_SECONDS => Ok(Duration::from_secs_f64(v)),
        _ => Err(Error::invalid(format!(
            "{name} must be a number of seconds > 0 and <= {MAX_SECONDS:.0}, got {repr}"
        ))),
    }
}

/// Validates option values (no I/O). The URL is checked later by [`Options::new`].
pub fn validate(raw: &RawOptions) -> Result<()> {
    int_in("pool_size", raw.pool_size, 1, MAX_POOL_SIZE)?;
    timeout(
        "connect_timeout",
        Some(raw.connect_timeout),
        &py_float(raw.connect_timeout),
    )?;
    timeout(
        "command_timeout",
        Some(raw.command_timeout),
        &py_float(raw.command_timeout),
    )?;
    if raw.max_message_bytes < 1 {
        return Err(Error::invalid(format!(
            "max_message_bytes must be an int >= 1, got {}",
            raw.max_message_bytes
        )));
    }
    int_in("chunk_size", raw.chunk_size, 1, MAX_CHUNK_SIZE)?;
    if let Some(name) = &raw.client_name {
        // Printable ASCII without spaces, as CLIENT SETNAME requires.
        if name.is_empty() || !name.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
            return Err(Error::invalid(format!(
                "client_name must be a non-empty str without spaces, got {}",
                py_repr(name)
            )));
        }
    }
    Ok(())
}

impl Options {
    /// Validates everything and checks that redis-rs can parse the URL.
    pub fn new(url: &str, raw: &RawOptions) -> Result<Self> {
        validate(raw)?;
        let redacted = redact_url(url);
        check_url(url, &redacted)?;
        Ok(Self {
            url: url.to_string(),
            redacted,
            pool_size: raw.pool_size as usize,
            connect_timeout: Duration::from_secs_f64(raw.connect_timeout),
            command_timeout: Duration::from_secs_f64(raw.command_timeout),
            max_message_bytes: raw.max_message_bytes as usize,
            chunk_size: raw.chunk_size as usize,
            client_name: raw.client_name.clone(),
            endpoint: Endpoint::default(),
        })
    }

    /// These options with the credentials and TLS settings of `endpoint`.
    pub fn with_endpoint(self, endpoint: Endpoint) -> Self {
        Self { endpoint, ..self }
    }
}

/// Refuses URLs redis-rs cannot use, with a message that never holds the password.
pub fn check_url(url: &str, redacted: &str) -> Result<redis::ConnectionInfo> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("redis" | "rediss" | "unix" | "redis+unix") => {}
        _ => {
            return Err(Error::invalid(format!(
                "invalid Redis URL \"{redacted}\": use redis://host:port/db or unix:///path/to/redis.sock"
            )))
        }
    }
    redis::IntoConnectionInfo::into_connection_info(url)
        .map_err(|e| Error::invalid(format!("invalid Redis URL \"{redacted}\": {}", e.category())))
}

/// `url` with any password replaced by `***` (the twin of `ferroq.server.redact_url`).
///
/// `redis://user:secret@host` -> `redis://user:***@host`, `redis://:secret@host` -> `redis://:***@host`,
/// `redis://secret@host` -> `redis://***@host` (a lone user-info part may be a password),
/// and the values of `password=` / `pass=` query parameters become `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // The user-info ends at the last '@' before the path.
    let authority_end = before_query.find('/').unwrap_or(before_query.len());
    let authority = &before_query[..authority_end];
    let path = &before_query[authority_end..];
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = (&authority[..at], &authority[at + 1..]);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***@{host}"),
                None if userinfo.is_empty() => format!("@{host}"),
                None => format!("***@{host}"),
            }
        }
        None => authority.to_string(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(query) = query {
        let parts: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if matches!(k.to_ascii_lowercase().as_str(), "password" | "pass") => format!("{k}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&parts.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact_url("redis://user:secret@host:6379/0"),
            "redis://user:***@host:6379/0"
        );
        assert_eq!(redact_url("redis://:secret@host:6379"), "redis://:***@host:6379");
        assert_eq!(redact_url("redis://secret@host"), "redis://***@host");
        assert_eq!(redact_url("redis://host:6379/0"), "redis://host:6379/0");
        assert_eq!(redact_url("unix:///tmp/r.sock"), "unix:///tmp/r.sock");
        assert_eq!(
            redact_url("unix:///tmp/r.sock?db=1&pass=secret"),
            "unix:///tmp/r.sock?db=1&pass=***"
        );
        assert_eq!(redact_url("redis://u:p@ss@host/0"), "redis://u:***@host/0");
        assert_eq!(redact_url("not a url"), "not a url");
        assert!(!redact_url("redis://a:b%40c@h").contains("b%40c"));
    }

    #[test]
    fn validates_options() {
        let ok = RawOptions::default();
        assert!(validate(&ok).is_ok());
        for bad in [
            RawOptions {
                pool_size: 0,
                ..ok.clone()
            },
            RawOptions {
                pool_size: 65,
                ..ok.clone()
            },
            RawOptions {
                connect_timeout: 0.0,
                ..ok.clone()
            },
            RawOptions {
                command_timeout: f64::NAN,
                ..ok.clone()
            },
            RawOptions {
                max_message_bytes: 0,
                ..ok.clone()
            },
            RawOptions {
                chunk_size: 10_001,
                ..ok.clone()
            },
            RawOptions {
                client_name: Some("a b".into()),
                ..ok.clone()
            },
        ] {
            assert!(validate(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn checks_urls() {
        let raw = RawOptions::default();
        assert!(Options::new("redis://127.0.0.1:7000/0", &raw).is_ok());
        assert!(Options::new("unix:///tmp/x.sock", &raw).is_ok());
        let err = Options::new("http://user:pw@host", &raw).unwrap_err();
        assert!(!err.message.contains("pw"), "{}", err.message);
        let err = Options::new("redis://user:pw@host:notaport", &raw).unwrap_err();
        assert!(!err.message.contains("pw"), "{}", err.message);
    }

    #[test]
    fn debug_never_shows_the_password() {
        let opts = Options::new("redis://user:url-secret@127.0.0.1:7000/0", &RawOptions::default())
            .unwrap()
            .with_endpoint(Endpoint {
                username: Some("user".into()),
                password: Some("endpoint-secret".into()),
                tls_ca_file: Some("/ca.pem".into()),
                ..Endpoint::default()
            });
        let shown = format!("{opts:?}");
        assert!(
            !shown.contains("url-secret") && !shown.contains("endpoint-secret"),
            "{shown}"
        );
        assert!(shown.contains("/ca.pem") && shown.contains("***"), "{shown}");
    }

    #[test]
    fn unreadable_tls_files_are_invalid_arguments() {
        let endpoint = Endpoint {
            tls_ca_file: Some("/nonexistent/ca.pem".into()),
            ..Endpoint::default()
        };
        let err = endpoint.certificates().unwrap_err();
        assert_eq!(err.kind, crate::errors::ErrorKind::InvalidArgument);
        assert!(err.message.contains("tls_ca_file") && err.message.contains("/nonexistent/ca.pem"));
        assert!(Endpoint::default().certificates().unwrap().is_none());
    }
}
