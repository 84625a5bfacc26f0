"""Every bound on an argument, in one place, for the pure client, the worker and the Spark source.

The Rust core has the same values (``src/protocol/validate.rs``, ``src/config.rs``, ``src/bindings/arrow.rs``);
a flat list of ``NAME = value`` lines, so it can be read from the core's table as it is.
"""

# Most messages (or entries) one call may claim, read, list or return.
MAX_COUNT = 10_000
# Longest lease, block, delay, min_idle or timeout, in seconds (7 days).
MAX_SECONDS = 604_800.0
# Shortest lease, in seconds.
MIN_LEASE = 0.001
# Most characters of a message id, a claim owner or a worker name.
MAX_ID_LENGTH = 128
# Largest connection pool a client may ask for.
MAX_POOL_SIZE = 64
# RSMQ's bound for vt and delay, in seconds.
MAX_RSMQ_SECONDS = 9_999_999
# Smallest RSMQ maxsize (bytes of one message), besides -1 for unlimited.
RSMQ_MIN_MAXSIZE = 1024
# Largest RSMQ maxsize (bytes of one message).
RSMQ_MAX_MAXSIZE = 65_536
# Most characters of a consumer group or consumer name.
MAX_GROUP_NAME = 128
# Most fields one stream entry may have (the publish script unpacks them in one call).
MAX_FIELDS = 1000
# Largest max_deliveries of a consumer group.
MAX_DELIVERIES = 1_000_000
# Most characters of an Arrow publish's dedup key.
MAX_DEDUP_KEY = 200
# Longest an Arrow publish's dedup marker is kept, in seconds (30 days).
MAX_DEDUP_TTL = 2_592_000.0
# Most messages one worker claim may prefetch (the clients' count limit).
MAX_PREFETCH = 10_000
# Most characters of the error text a worker records on a dead-lettered message.
MAX_ERROR_CHARS = 4096
# Most handler threads or tasks one worker may run.
MAX_CONCURRENCY = 10_000
