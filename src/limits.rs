//! Every limit the core checks, defined once, and exported to Python as `ferroq._ferroq.LIMITS` (a read-only
//! mapping of these names to their values), which the pure client and the worker read instead of copying.

/// Defines each limit as a `pub const` and lists them all in [`ALL`], by name.
macro_rules! limits {
    ($($(#[doc = $doc:literal])* $name:ident: $ty:ty = $value:expr => $kind:ident;)*) => {
        $($(#[doc = $doc])* pub const $name: $ty = $value;)*

        /// Every limit by name, as exported in `LIMITS`.
        #[allow(clippy::unnecessary_cast)]
        pub const ALL: &[(&str, Limit)] = &[$((stringify!($name), limit!($kind, $name))),*];
    };
}

macro_rules! limit {
    (Int, $name:ident) => {
        Limit::Int($name as i64)
    };
    (Float, $name:ident) => {
        Limit::Float($name)
    };
}

/// The value of a limit: an int or a float, as Python sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    Int(i64),
    Float(f64),
}

limits! {
    /// Most connections of one client's pool (`pool_size`).
    MAX_POOL_SIZE: i64 = 64 => Int;
    /// Most messages sent in one script call or transaction (`chunk_size`).
    MAX_CHUNK_SIZE: i64 = 10_000 => Int;
    /// Most messages one call claims, reads or lists (`count`).
    MAX_COUNT: i64 = 10_000 => Int;
    /// The longest lease, block, delay, timeout or `min_idle`, in seconds (7 days).
    MAX_SECONDS: f64 = 604_800.0 => Float;
    /// The shortest lease, in seconds.
    MIN_LEASE: f64 = 0.001 => Float;
    /// Most characters of a topic or stream name.
    MAX_NAME_LENGTH: usize = 128 => Int;
    /// Most characters of a message id or a worker name (owner).
    MAX_ID_LENGTH: usize = 128 => Int;
    /// Most characters of a consumer group or consumer name.
    MAX_GROUP_NAME_LENGTH: usize = 128 => Int;
    /// Most fields of one stream message.
    MAX_FIELDS: usize = 1000 => Int;
    /// Highest `max_deliveries` of a consumer group.
    MAX_DELIVERIES: i64 = 1_000_000 => Int;
    /// Most characters of a `dedup_key`.
    MAX_DEDUP_KEY: usize = 200 => Int;
    /// The longest `dedup_ttl`, in seconds (30 days).
    MAX_DEDUP_TTL: f64 = 2_592_000.0 => Float;
    /// Most characters of an RSMQ queue name.
    MAX_RSMQ_QNAME_LENGTH: usize = 160 => Int;
    /// Most characters of an RSMQ namespace.
    MAX_RSMQ_NS_LENGTH: usize = 64 => Int;
    /// The longest RSMQ `vt` or `delay`, in seconds (Node RSMQ's rule).
    MAX_RSMQ_SECONDS: i64 = 9_999_999 => Int;
    /// The smallest RSMQ `maxsize` (-1 means unlimited).
    MIN_RSMQ_MAXSIZE: i64 = 1024 => Int;
    /// The largest RSMQ `maxsize`.
    MAX_RSMQ_MAXSIZE: i64 = 65_536 => Int;
    /// Most messages a worker holds at once (`prefetch`).
    MAX_PREFETCH: i64 = 10_000 => Int;
    /// Most characters of the error text a worker records with a dead letter.
    MAX_ERROR_CHARS: usize = 4096 => Int;
    /// Most handler threads or tasks one worker runs (`concurrency`).
    MAX_CONCURRENCY: i64 = 10_000 => Int;
    /// Most characters of a value that an error message shows (its repr; a longer one is cut, ending in
    /// `...`), so a list passed for one id does not make an error of many kilobytes; a value just over a
    /// length limit (names, ids, dedup keys) is still shown whole.
    MAX_SHOWN_CHARS: usize = 300 => Int;
    /// Fewest messages a receive asks for (`count`, not a pop) for the client to read their bodies itself,
    /// with one `HMGET` right after the receive script, rather than have the script return them: a body that
    /// passes through Lua costs the server about 1.5 µs more per message (a sixth of a receive and its
    /// delete), which outweighs the extra round trip from about this many messages.
    MIN_RSMQ_COUNT_FOR_CALLER_BODIES: usize = 100 => Int;
    /// Most keys (publish records) a client keeps for a later request to delete; beyond this
    /// many (callers on many threads at once) the newest are left to expire.
    MAX_DELETE_LATER: usize = 1024 => Int;
    /// Fewest publish records a single publish deletes on its way (one `DEL` of them all, ahead of its
    /// script call): they gather until this many wait. Any other request of the client, and its `close()`,
    /// takes however many wait; one missed expires. A `DEL` riding with every single publish cost it 5-10%
    /// of its time; gathered, a command per 64 calls.
    MIN_DELETE_LATER: usize = 64 => Int;
}

/// The oldest supported server (`redis_version` of `INFO server`; Valkey reports 7.2.4): Redis 6.2 brought
/// BLMOVE and XAUTOCLAIM, which the scripts use. Checked by `server_version`; not in [`ALL`] (not a number).
pub const MINIMUM_SERVER: (u32, u32, u32) = (6, 2, 0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_and_floats_keep_their_kind() {
        let get = |name: &str| ALL.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        assert_eq!(get("MAX_COUNT"), Some(Limit::Int(10_000)));
        assert_eq!(get("MAX_SECONDS"), Some(Limit::Float(604_800.0)));
        assert_eq!(get("MIN_LEASE"), Some(Limit::Float(0.001)));
        assert_eq!(get("MAX_RSMQ_SECONDS"), Some(Limit::Int(9_999_999)));
        assert_eq!(ALL.len(), 24);
    }
}
