//! The oldest server ferroq supports, checked once per pool on its first connection.
//!
//! Redis 6.2 is the oldest version the test suites pass on (the claim scripts use BLMOVE, the Streams ones
//! XAUTOCLAIM, both new in 6.2). Valkey reports the Redis version it is compatible with as `redis_version`
//! (7.2.4 for every Valkey 8), so the same check covers it. The pure client does the same
//! (`ferroq.pure._ops.check_server_version`).

use crate::errors::Error;
use crate::limits::MINIMUM_SERVER;

/// `redis_version` and the server's name (`redis`, `valkey`) and own version from the text of `INFO server`.
fn parse_info(info: &str) -> Option<((u32, u32, u32), String)> {
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let version = field("redis_version")?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let parsed = (parts.next()??, parts.next()??, parts.next().flatten().unwrap_or(0));
    let shown = match (field("server_name"), field("valkey_version")) {
        (Some(name), Some(own)) => format!("{name} {own}"),
        _ => format!("Redis {version}"),
    };
    Some((parsed, shown))
}

/// The error for a server older than [`MINIMUM_SERVER`], from its `INFO server` text; `Ok` when it is recent
/// enough or the text has no version (a proxy that hides it: then the scripts decide).
pub fn check(url: &str, info: &str) -> Result<(), Error> {
    match parse_info(info) {
        Some((version, shown)) if version < MINIMUM_SERVER => Err(Error::unsupported_server(url, &shown)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;

    #[test]
    fn old_servers_are_refused() {
        let err = check(
            "redis://h:1",
            "# Server\r\nredis_version:5.0.7\r\nredis_mode:standalone\r\n",
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedServer);
        assert_eq!(
            err.message,
            "Redis at redis://h:1 is Redis 5.0.7: ferroq needs Redis 6.2 or later, or Valkey 7.2 or later"
        );
        assert!(check("u", "redis_version:6.0.16\r\n").is_err());
        assert!(check("u", "redis_version:6.1.9\r\n").is_err());
    }

    #[test]
    fn supported_servers_pass() {
        for info in [
            "redis_version:6.2.0\r\n",
            "redis_version:6.2.14\r\n",
            "redis_version:7.0.15\r\n",
            "redis_version:10.0.0\r\n",
            "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.8\r\n",
            "redis_version:7.2\r\n",
            "", // no version: nothing to judge by
            "redis_version:unknown\r\n",
        ] {
            assert!(check("u", info).is_ok(), "{info}");
        }
    }

    #[test]
    fn valkey_is_named_by_its_own_version() {
        let info = "redis_version:6.0.0\r\nserver_name:valkey\r\nvalkey_version:7.0.0\r\n";
        assert!(check("u", info).unwrap_err().message.contains("is valkey 7.0.0:"));
    }
}
