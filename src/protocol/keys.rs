//! Key layout: the Rust twin of `python/ferroq/protocol/keys.py` (checked by the parity tests).

pub const RFQ_PREFIX: &str = "rfq:";

pub fn rfq_backlog(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:backlog")
}

pub fn rfq_nextlog(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:nextlog")
}

pub fn rfq_message_prefix(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:message:")
}

pub fn rfq_message(topic: &str, id: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:message:{id}")
}

pub fn rfq_leases(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:leases")
}

pub fn rfq_deliveries(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:deliveries")
}

pub fn rfq_delayed(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:delayed")
}

/// ferroq side key, a HASH: `<claim>` -> `<claimed_at_ms> <owner or -> <id> <id> ...` (the open ids of one claim,
/// in claim order) and `<claim>:d` -> those of its ids claimed before (see docs/protocol.md).
pub fn rfq_claims(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:claims")
}

/// ferroq side key, a ZSET: `<claim>` -> the claim's lease deadline in epoch ms (Redis TIME).
pub fn rfq_claim_leases(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:claim_leases")
}

/// ferroq side key, a SET of the ids held by open claims: how a claim finds an id that rfq's blind harvest
/// requeued while a claim still held it.
pub fn rfq_inflight(topic: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:inflight")
}

/// `rfq:{topic}:published:{token}`: the STRING recording that one publish chunk (its token) was written.
pub fn rfq_published(topic: &str, token: &str) -> String {
    format!("{RFQ_PREFIX}{topic}:published:{token}")
}

/// The marker token of chunk `chunk` of an idempotent publish with `dedup_key`: the 32-hex SHA1 of
/// `<dedup_key>:<chunk>`, so a repeated call (a Spark task retried) names the same markers.
pub fn dedup_token(dedup_key: &str, chunk: usize) -> String {
    let mut t = sha1_smol::Sha1::from(format!("{dedup_key}:{chunk}"))
        .digest()
        .to_string();
    t.truncate(32);
    t
}

/// Every key of one topic, built once per `Topic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicKeys {
    pub name: String,
    pub backlog: String,
    pub nextlog: String,
    pub leases: String,
    pub deliveries: String,
    pub delayed: String,
    pub message_prefix: String,
    pub claims: String,
    pub claim_leases: String,
    pub inflight: String,
}

impl TopicKeys {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            backlog: rfq_backlog(name),
            nextlog: rfq_nextlog(name),
            leases: rfq_leases(name),
            deliveries: rfq_deliveries(name),
            delayed: rfq_delayed(name),
            message_prefix: rfq_message_prefix(name),
            claims: rfq_claims(name),
            claim_leases: rfq_claim_leases(name),
            inflight: rfq_inflight(name),
        }
    }

    /// The four keys every topic script takes first: backlog, nextlog, leases, deliveries.
    pub fn topic_keys(&self) -> [&str; 4] {
        [&self.backlog, &self.nextlog, &self.leases, &self.deliveries]
    }

    /// The claims HASH, the claims' leases and the in-flight SET.
    pub fn claim_keys(&self) -> [&str; 3] {
        [&self.claims, &self.claim_leases, &self.inflight]
    }

    /// Every side key: what claim, release, harvest and stats take.
    pub fn eight(&self) -> [&str; 8] {
        [
            &self.backlog,
            &self.nextlog,
            &self.leases,
            &self.deliveries,
            &self.delayed,
            &self.claims,
            &self.claim_leases,
            &self.inflight,
        ]
    }

    /// The four topic keys and the delayed ZSET.
    pub fn five(&self) -> [&str; 5] {
        [
            &self.backlog,
            &self.nextlog,
            &self.leases,
            &self.deliveries,
            &self.delayed,
        ]
    }

    /// The record of one publish chunk (see [`rfq_published`]).
    pub fn published(&self, token: &str) -> String {
        rfq_published(&self.name, token)
    }

    pub fn message(&self, id: &str) -> String {
        let mut key = String::with_capacity(self.message_prefix.len() + id.len());
        key.push_str(&self.message_prefix);
        key.push_str(id);
        key
    }

    /// The message key of `id` as a command argument, written straight into the command (a call of 1000
    /// messages then makes no 1000 key strings of its own).
    pub fn message_arg<'a>(&'a self, id: &'a str) -> MessageKey<'a> {
        MessageKey {
            prefix: &self.message_prefix,
            id,
        }
    }

    /// The list key of `queue` (validated by the caller).
    pub fn list(&self, queue: TopicList) -> &str {
        match queue {
            TopicList::Backlog => &self.backlog,
            TopicList::Nextlog => &self.nextlog,
        }
    }

    /// backlog, nextlog, leases, deliveries, message prefix, claims, claim leases, in-flight set (what
    /// `rfq_keys()` returns to Python).
    pub fn all(&self) -> Vec<String> {
        vec![
            self.backlog.clone(),
            self.nextlog.clone(),
            self.leases.clone(),
            self.deliveries.clone(),
            self.message_prefix.clone(),
            self.claims.clone(),
            self.claim_leases.clone(),
            self.inflight.clone(),
        ]
    }
}

/// The two lists of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicList {
    Backlog,
    Nextlog,
}

/// The topic name inside a `rfq:<topic>:backlog` / `:nextlog` key, if it is one.
pub fn topic_of_list_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(RFQ_PREFIX)?;
    let name = rest
        .strip_suffix(":backlog")
        .or_else(|| rest.strip_suffix(":nextlog"))?;
    (!name.is_empty()).then_some(name)
}

// ---- RSMQ -------------------------------------------------------------------------------------------

/// RSMQ's default namespace.
pub const RSMQ_DEFAULT_NS: &str = "rsmq";

/// `{ns}:QUEUES`: the SET of queue names of a namespace.
pub fn rsmq_queues(ns: &str) -> String {
    format!("{ns}:QUEUES")
}

/// `{ns}:{qname}`: the ZSET of message ids scored by the epoch ms at which each is next receivable.
pub fn rsmq_queue(ns: &str, qname: &str) -> String {
    format!("{ns}:{qname}")
}

/// `{ns}:{qname}:Q`: the HASH of queue attributes and every message body.
pub fn rsmq_hash(ns: &str, qname: &str) -> String {
    format!("{ns}:{qname}:Q")
}

/// `{ns}:rt:{qname}`: the realtime channel (PUBLISH of the queue size after each send).
pub fn rsmq_channel(ns: &str, qname: &str) -> String {
    format!("{ns}:rt:{qname}")
}

/// `{ns}:{q}:published:{token}`: the STRING of the ids one send chunk (its token) sent. RSMQ clients only
/// read `{ns}:{q}`, `{ns}:{q}:Q` and `{ns}:QUEUES`, so they ignore it.
pub fn rsmq_published(ns: &str, q: &str, token: &str) -> String {
    format!("{ns}:{q}:published:{token}")
}

/// Every key of one RSMQ queue, built once per queue object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsmqKeys {
    pub ns: String,
    pub name: String,
    pub queues: String,
    pub queue: String,
    pub hash: String,
    pub channel: String,
}

impl RsmqKeys {
    pub fn new(ns: &str, name: &str) -> Self {
        Self {
            ns: ns.to_string(),
            name: name.to_string(),
            queues: rsmq_queues(ns),
            queue: rsmq_queue(ns, name),
            hash: rsmq_hash(ns, name),
            channel: rsmq_channel(ns, name),
        }
    }

    /// The keys of another queue of the same namespace (a dead-letter queue).
    pub fn sibling(&self, name: &str) -> Self {
        Self::new(&self.ns, name)
    }

    /// `{ns}:{q}:published:{token}`: the STRING of the ids one send chunk (its token) sent.
    pub fn published(&self, token: &str) -> String {
        rsmq_published(&self.ns, &self.name, token)
    }

    /// `{ns}:`, which the receive script puts before a dead-letter queue's name.
    pub fn ns_prefix(&self) -> String {
        format!("{}:", self.ns)
    }

    /// queues set, queue zset, hash, channel (what `rsmq_keys()` returns to Python).
    pub fn all(&self) -> Vec<String> {
        vec![
            self.queues.clone(),
            self.queue.clone(),
            self.hash.clone(),
            self.channel.clone(),
        ]
    }
}

// ---- Streams topics --------------------------------------------------------------------------------

pub const STREAM_PREFIX: &str = "ferroq:stream:";
/// How long a publish token's record lives, in ms (it must outlast a retry after a dropped reply); the
/// records of RSMQ sends live as long.
pub const STREAM_PUBLISH_TOKEN_MS: u64 = 120_000;

/// `ferroq:stream:{name}`: the STREAM holding the entries.
pub fn stream_key(name: &str) -> String {
    format!("{STREAM_PREFIX}{name}")
}

/// `ferroq:stream:{name}:published:{token}`: the STRING of the ids one publish call appended.
pub fn stream_published(name: &str, token: &str) -> String {
    format!("{STREAM_PREFIX}{name}:published:{token}")
}

/// The keys of one stream, built once per stream object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamKeys {
    pub name: String,
    pub key: String,
}

impl StreamKeys {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            key: stream_key(name),
        }
    }

    pub fn published(&self, token: &str) -> String {
        stream_published(&self.name, token)
    }

    /// The stream key (what `stream_keys()` returns to Python).
    pub fn all(&self) -> Vec<String> {
        vec![self.key.clone()]
    }
}

/// A message key as one command argument: its topic's prefix and the id (see [`TopicKeys::message_arg`]).
pub struct MessageKey<'a> {
    prefix: &'a str,
    id: &'a str,
}

impl MessageKey<'_> {
    /// Its length in bytes, to size a command.
    pub fn byte_len(&self) -> usize {
        self.prefix.len() + self.id.len()
    }
}

impl redis::ToRedisArgs for MessageKey<'_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + redis::RedisWrite,
    {
        use std::io::Write;
        let mut arg = out.writer_for_next_arg();
        // Writing to a command's (or a Vec's) buffer cannot fail.
        let _ = arg.write_all(self.prefix.as_bytes());
        let _ = arg.write_all(self.id.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_python() {
        let k = TopicKeys::new("jobs");
        assert_eq!(k.backlog, "rfq:jobs:backlog");
        assert_eq!(k.nextlog, "rfq:jobs:nextlog");
        assert_eq!(k.leases, "rfq:jobs:leases");
        assert_eq!(k.deliveries, "rfq:jobs:deliveries");
        assert_eq!(k.message_prefix, "rfq:jobs:message:");
        assert_eq!(k.delayed, "rfq:jobs:delayed");
        assert_eq!(k.five()[4], "rfq:jobs:delayed");
        assert_eq!(
            k.claim_keys(),
            ["rfq:jobs:claims", "rfq:jobs:claim_leases", "rfq:jobs:inflight"]
        );
        assert_eq!(k.eight()[..5], k.five());
        assert_eq!(k.eight()[5..], k.claim_keys());
        assert_eq!(k.message("ab12"), "rfq:jobs:message:ab12");
        assert_eq!(k.message("ab12"), rfq_message("jobs", "ab12"));
        let arg = redis::ToRedisArgs::to_redis_args(&k.message_arg("ab12"));
        assert_eq!(arg, vec![b"rfq:jobs:message:ab12".to_vec()]);
        assert_eq!(k.message_arg("ab12").byte_len(), "rfq:jobs:message:ab12".len());
        assert_eq!(
            k.topic_keys(),
            [
                "rfq:jobs:backlog",
                "rfq:jobs:nextlog",
                "rfq:jobs:leases",
                "rfq:jobs:deliveries"
            ]
        );
        assert_eq!(k.list(TopicList::Nextlog), "rfq:jobs:nextlog");
        assert_eq!(k.all().len(), 8);
    }

    #[test]
    fn list_keys_name_topics() {
        assert_eq!(topic_of_list_key("rfq:jobs:backlog"), Some("jobs"));
        assert_eq!(topic_of_list_key("rfq:a.b:nextlog"), Some("a.b"));
        assert_eq!(topic_of_list_key("rfq::backlog"), None);
        assert_eq!(topic_of_list_key("rfq:jobs:leases"), None);
        assert_eq!(topic_of_list_key("other:jobs:backlog"), None);
    }

    #[test]
    fn rsmq_keys_match_node() {
        let k = RsmqKeys::new("rsmq", "jobs");
        assert_eq!(k.queues, "rsmq:QUEUES");
        assert_eq!(k.queue, "rsmq:jobs");
        assert_eq!(k.sibling("dead").hash, "rsmq:dead:Q");
        assert_eq!(k.ns_prefix(), "rsmq:");
        assert_eq!(k.hash, "rsmq:jobs:Q");
        assert_eq!(k.channel, "rsmq:rt:jobs");
        assert_eq!(k.all(), ["rsmq:QUEUES", "rsmq:jobs", "rsmq:jobs:Q", "rsmq:rt:jobs"]);
        assert_eq!(RsmqKeys::new("app", "q-1").hash, rsmq_hash("app", "q-1"));
    }

    #[test]
    fn stream_keys_match_python() {
        let k = StreamKeys::new("events");
        assert_eq!(k.key, "ferroq:stream:events");
        assert_eq!(k.all(), ["ferroq:stream:events"]);
        assert_eq!(k.published("ab12"), "ferroq:stream:events:published:ab12");
        assert_eq!(TopicKeys::new("t").published("ab"), "rfq:t:published:ab");
        assert_eq!(RsmqKeys::new("rsmq", "q").published("ab"), "rsmq:q:published:ab");
        // Python: hashlib.sha1(b'job-7:3').hexdigest()[:32]
        assert_eq!(dedup_token("job-7", 3).len(), 32);
        assert_eq!(stream_published("a.b", "t"), "ferroq:stream:a.b:published:t");
    }
}
