//! Streams topics (Redis Streams under `ferroq:stream:<name>`): batch-first operations on a [`Pool`],
//! returning Rust values.
//!
//! Every call sends the scripts and commands of docs/protocol.md ("Streams topics"), so the
//! pure-Python client and this core leave identical Redis state. Arguments arrive validated
//! (`validate::streams`). Replies are decoded for RESP2 and RESP3, Redis 6.2 and 7.x.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Cmd, Value};

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::MAX_GROUP_NAME_LENGTH;
use crate::pool::Pool;
use crate::protocol::common::Fields;
use crate::protocol::common::{
    array, eval_all, eval_one, int, opt_string, pairs, pairs_of, pipelines, scan_keys, string, take,
};
use crate::protocol::ids;
use crate::protocol::keys::{StreamKeys, STREAM_PREFIX, STREAM_PUBLISH_TOKEN_MS};
use crate::protocol::validate::is_topic_name;
use crate::pyrepr::py_repr;
use crate::scripts::{self, Id};

/// The error recorded on entries autoclaim dead-letters when the caller gives none.
pub const DEFAULT_AUTOCLAIM_ERROR: &str = "max deliveries reached";

/// One consumer group of a stream, as a `ConsumerGroup` object holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub stream: StreamKeys,
    pub name: String,
    pub consumer: String,
    /// Deliveries after which autoclaim dead-letters an entry (None: never).
    pub max_deliveries: Option<i64>,
    pub dead: StreamKeys,
}

impl Group {
    /// `consumer group 'g' of stream 's' <what>`.
    fn error(&self, kind: ErrorKind, what: &str) -> Error {
        let (group, stream) = (py_repr(&self.name), py_repr(&self.stream.name));
        Error::new(kind, format!("consumer group {group} of stream {stream} {what}"))
    }

    fn not_found(&self) -> Error {
        self.error(ErrorKind::QueueNotFound, "not found: call create() first")
    }

    fn exists(&self) -> Error {
        self.error(ErrorKind::QueueExists, "already exists")
    }

    /// `result` with Redis's NOGROUP / missing-key errors told in this group's words.
    fn found<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| {
            if e.is_missing_stream_or_group() {
                self.not_found()
            } else {
                e
            }
        })
    }
}

/// An entry read from a stream (`ferroq.types.StreamEntry`, without the stream name).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub fields: Fields,
    pub deliveries: i64,
}

/// One row of XPENDING (`ferroq.types.PendingEntry`); `idle_ms` is milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: String,
    pub consumer: String,
    pub idle_ms: i64,
    pub deliveries: i64,
}

/// One row of XINFO GROUPS (`ferroq.types.GroupInfo`).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupInfo {
    pub name: String,
    pub consumers: i64,
    pub pending: i64,
    pub last_delivered_id: String,
    pub entries_read: Option<i64>,
    pub lag: Option<i64>,
}

/// The stream's summary from XINFO STREAM (`ferroq.types.StreamInfo`, without the name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Info {
    pub length: i64,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub groups: i64,
}

/// What a trim keeps: about the newest `MaxLen` entries, or those from the id `MinId` on.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    MaxLen(u64),
    MinId(String),
}

/// A retention: the limit (None: keep everything) and `~` (approximate) or `=` (exact).
#[derive(Debug, Clone, PartialEq)]
pub struct Retention {
    pub limit: Option<Limit>,
    pub approximate: bool,
}

impl Retention {
    /// MINID for entries younger than `age_ms` at `now_ms` (the client's clock): `<now - age>-0`.
    pub fn min_id(now_ms: u64, age_ms: u64) -> Limit {
        Limit::MinId(format!("{}-0", now_ms.saturating_sub(age_ms)))
    }

    /// (strategy, threshold, `~` or `=`) as XTRIM and the publish script take them ('' with no limit).
    fn args(&self) -> (&'static str, String, &'static str) {
        let mode = if self.approximate { "~" } else { "=" };
        match &self.limit {
            None => ("", String::new(), mode),
            Some(Limit::MaxLen(n)) => ("MAXLEN", n.to_string(), mode),
            Some(Limit::MinId(id)) => ("MINID", id.clone(), mode),
        }
    }
}

/// Milliseconds since the epoch on this machine's clock.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

// ---- the default consumer name ---------------------------------------------------------------------

/// `<hostname>-<pid>`, as Python's `f'{socket.gethostname()}-{os.getpid()}'`: characters outside
/// 0x21..0x7e become '_', cut to 128 characters.
pub fn default_consumer() -> String {
    consumer_name(&hostname(), std::process::id())
}

fn consumer_name(host: &str, pid: u32) -> String {
    format!("{host}-{pid}")
        .chars()
        .map(|c| if ('\u{21}'..='\u{7e}').contains(&c) { c } else { '_' })
        .take(MAX_GROUP_NAME_LENGTH)
        .collect()
}

/// Bytes decoded as Python decodes a host name (UTF-8, surrogateescape): each byte of an invalid
/// sequence is one character (here '_', as the consumer name would show it anyway).
fn decode_host(mut bytes: &[u8]) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                out.extend(std::iter::repeat_n('_', bad));
                bytes = &rest[bad..];
            }
        }
    }
}

/// The host name: gethostname(2) (what Python's `socket.gethostname()` calls), else
/// `/proc/sys/kernel/hostname`, else `$HOSTNAME` / `%COMPUTERNAME%`, else "localhost".
fn hostname() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it on success.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            if end > 0 {
                return decode_host(&buf[..end]);
            }
        }
    }
    if let Ok(name) = std::fs::read("/proc/sys/kernel/hostname") {
        let name = name.trim_ascii_end();
        if !name.is_empty() {
            return decode_host(name);
        }
    }
    ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

// ---- reply decoding -------------------------------------------------------------------------------

/// `[id, [f1, v1, ...]]` (RESP2 or RESP3); None for an entry deleted while pending (nil fields).
fn decode_entry(v: Value, deliveries: i64) -> Result<Option<Entry>> {
    let [id, fields] = take::<2>(v, "stream entry")?;
    if matches!(fields, Value::Nil) {
        return Ok(None);
    }
    Ok(Some(Entry {
        id: string(id)?,
        fields: pairs(fields)?,
        deliveries,
    }))
}

fn decode_entries(v: Value, deliveries: i64) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for item in array(v)? {
        // Redis 6.2 answers XCLAIM / XREADGROUP of a deleted entry with nil in place of the entry
        if matches!(item, Value::Nil) {
            continue;
        }
        out.extend(decode_entry(item, deliveries)?);
    }
    Ok(out)
}

/// XREADGROUP's reply: nil (nothing new), RESP2 `[[key, entries]]` or RESP3 `{key: entries}`.
fn decode_read(v: Value) -> Result<Vec<Entry>> {
    let per_stream: Vec<Value> = match v {
        Value::Nil => return Ok(Vec::new()),
        Value::Map(items) => items.into_iter().map(|(_, entries)| entries).collect(),
        v => array(v)?
            .into_iter()
            .map(|s| take::<2>(s, "XREADGROUP stream").map(|[_, entries]| entries))
            .collect::<Result<_>>()?,
    };
    let mut out = Vec::new();
    for entries in per_stream {
        out.extend(decode_entries(entries, 1)?);
    }
    Ok(out)
}

/// A RESP3 map or a RESP2 flat `[name, value, ...]` list (XINFO), as (name, value) pairs.
fn named(v: Value) -> Result<Vec<(String, Value)>> {
    pairs_of(v, Ok)
}

fn field(items: &mut Vec<(String, Value)>, name: &str) -> Option<Value> {
    let i = items.iter().position(|(k, _)| k == name)?;
    Some(items.swap_remove(i).1)
}

fn required(items: &mut Vec<(String, Value)>, name: &str, what: &str) -> Result<Value> {
    field(items, name).ok_or_else(|| Error::protocol(format!("{what}: no {name:?}")))
}

/// An optional integer: absent (Redis 6.2) or nil (unknown) is None.
fn opt_int(v: Option<Value>) -> Result<Option<i64>> {
    match v {
        None | Some(Value::Nil) => Ok(None),
        Some(v) => int(v).map(Some),
    }
}

fn decode_group(v: Value) -> Result<GroupInfo> {
    let what = "XINFO GROUPS";
    let mut m = named(v)?;
    Ok(GroupInfo {
        name: string(required(&mut m, "name", what)?)?,
        consumers: int(required(&mut m, "consumers", what)?)?,
        pending: int(required(&mut m, "pending", what)?)?,
        last_delivered_id: string(required(&mut m, "last-delivered-id", what)?)?,
        entries_read: opt_int(field(&mut m, "entries-read"))?,
        lag: opt_int(field(&mut m, "lag"))?,
    })
}

fn decode_groups(v: Value) -> Result<Vec<GroupInfo>> {
    array(v)?.into_iter().map(decode_group).collect()
}

/// The id of XINFO STREAM's `first-entry` / `last-entry` (nil for an empty stream).
fn entry_id(v: Option<Value>) -> Result<Option<String>> {
    match v {
        None | Some(Value::Nil) => Ok(None),
        Some(v) => {
            let mut items = array(v)?;
            if items.is_empty() {
                return Ok(None);
            }
            opt_string(items.swap_remove(0))
        }
    }
}

fn decode_info(v: Value) -> Result<Info> {
    let what = "XINFO STREAM";
    let mut m = named(v)?;
    Ok(Info {
        length: int(required(&mut m, "length", what)?)?,
        groups: int(required(&mut m, "groups", what)?)?,
        first_id: entry_id(field(&mut m, "first-entry"))?,
        last_id: entry_id(field(&mut m, "last-entry"))?,
    })
}

fn decode_pending(v: Value) -> Result<Vec<Pending>> {
    array(v)?
        .into_iter()
        .map(|row| {
            let [id, consumer, idle, deliveries] = take::<4>(row, "XPENDING entry")?;
            Ok(Pending {
                id: string(id)?,
                consumer: string(consumer)?,
                idle_ms: int(idle)?,
                deliveries: int(deliveries)?,
            })
        })
        .collect()
}

/// autoclaim-2's `{{{id, {field, value, ...}, deliveries}, ...}, {dead-lettered id, ...}}`: the entries.
fn decode_autoclaim(v: Value) -> Result<Vec<Entry>> {
    let [entries, _dead] = take::<2>(v, "autoclaim reply")?;
    array(entries)?
        .into_iter()
        .map(|e| {
            let [id, fields, deliveries] = take::<3>(e, "autoclaimed entry")?;
            Ok(Entry {
                id: string(id)?,
                fields: pairs(fields)?,
                deliveries: int(deliveries)?,
            })
        })
        .collect()
}

/// The ids every reply of a chunked script call listed, in order.
/// A publish-2 reply `{'ok'|'done', {id, ...}}`: the ids, and whether this call appended them (`false`: an
/// earlier call with the same token did).
pub fn decode_publish(reply: Value) -> Result<(Vec<String>, bool)> {
    let [word, ids] = take::<2>(reply, "stream publish")?;
    let fresh = match string(word)?.as_str() {
        "ok" => true,
        "done" => false,
        other => return Err(Error::protocol(format!("unexpected stream publish status {other:?}"))),
    };
    Ok((array(ids)?.into_iter().map(string).collect::<Result<_>>()?, fresh))
}

fn all_ids(replies: Vec<Value>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for reply in replies {
        for id in array(reply)? {
            out.push(string(id)?);
        }
    }
    Ok(out)
}

// ---- commands -------------------------------------------------------------------------------------

/// One plain command on a shared connection (repeated after a drop when `idempotent`).
async fn query(pool: &Pool, idempotent: bool, cmd: &Cmd) -> Result<Value> {
    pool.run(idempotent, |mut conn| async move { pool.query(&mut conn, cmd).await })
        .await
}

/// `name first`; the caller appends the rest.
fn cmd(name: &str, first: &str) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(first);
    c
}

fn xinfo(sub: &str, s: &StreamKeys) -> Cmd {
    let mut c = cmd("XINFO", sub);
    c.arg(&s.key);
    c
}

fn xgroup(sub: &str, g: &Group) -> Cmd {
    let mut c = redis::cmd("XGROUP");
    c.arg(sub).arg(&g.stream.key).arg(&g.name);
    c
}

/// One publish-2 call: `token` names the chunk's record (kept `record_ms`); the caller appends the messages.
pub fn publish_head(s: &StreamKeys, token: &str, record_ms: u64, retention: &Retention) -> Cmd {
    let (strategy, threshold, mode) = retention.args();
    let mut c = scripts::evalsha(Id::StreamPublish, 2);
    c.arg(&s.key)
        .arg(s.published(token))
        .arg(record_ms)
        .arg(strategy)
        .arg(threshold)
        .arg(mode);
    c
}

fn publish_cmd(s: &StreamKeys, token: &str, retention: &Retention, messages: &[Fields]) -> Cmd {
    let mut c = publish_head(s, token, STREAM_PUBLISH_TOKEN_MS, retention);
    for fields in messages {
        c.arg(fields.len());
        for (k, v) in fields {
            c.arg(k).arg(v);
        }
    }
    c
}

// ---- stream operations ----------------------------------------------------------------------------

/// Appends validated messages, one publish-2 call per chunk of `chunk_size` with its own token (made
/// before sending); returns the new ids in input order.
pub async fn publish_batch(
    pool: &Pool,
    s: &StreamKeys,
    messages: Vec<Fields>,
    retention: &Retention,
) -> Result<Vec<String>> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let chunks: Vec<&[Fields]> = messages.chunks(pool.opts.chunk_size).collect();
    let tokens = ids::new_tokens(chunks.len());
    let cmds: Vec<Cmd> = chunks
        .iter()
        .zip(&tokens)
        .map(|(chunk, token)| publish_cmd(s, token, retention, chunk))
        .collect();
    // Once per token: a repeat after a dropped connection returns the first call's ids, appending nothing.
    let mut out = Vec::with_capacity(messages.len());
    for reply in eval_all(pool, true, Id::StreamPublish, &pipelines(cmds)).await? {
        out.extend(decode_publish(reply)?.0);
    }
    if out.len() != messages.len() {
        return Err(Error::protocol(format!(
            "publish returned {} ids for {} messages",
            out.len(),
            messages.len()
        )));
    }
    Ok(out)
}

/// XLEN (0 for a missing stream).
pub async fn length(pool: &Pool, s: &StreamKeys) -> Result<i64> {
    int(query(pool, true, &cmd("XLEN", &s.key)).await?)
}

/// XRANGE key start end COUNT count: entries with deliveries 0.
pub async fn range(pool: &Pool, s: &StreamKeys, start: &str, end: &str, count: usize) -> Result<Vec<Entry>> {
    let mut c = cmd("XRANGE", &s.key);
    c.arg(start).arg(end).arg("COUNT").arg(count);
    decode_entries(query(pool, true, &c).await?, 0)
}

/// XTRIM key MAXLEN|MINID ~|= threshold: how many entries were removed.
pub async fn trim(pool: &Pool, s: &StreamKeys, retention: &Retention) -> Result<i64> {
    let (strategy, threshold, mode) = retention.args();
    if strategy.is_empty() {
        return Err(Error::invalid("trim needs maxlen or max_age"));
    }
    let mut c = cmd("XTRIM", &s.key);
    c.arg(strategy).arg(mode).arg(threshold);
    // Not repeated after a drop: a repeat would report 0 entries removed.
    int(query(pool, false, &c).await?)
}

/// XINFO STREAM; a missing stream is empty.
pub async fn info(pool: &Pool, s: &StreamKeys) -> Result<Info> {
    match query(pool, true, &xinfo("STREAM", s)).await {
        Ok(reply) => decode_info(reply),
        Err(e) if e.is_missing_stream_or_group() => Ok(Info::default()),
        Err(e) => Err(e),
    }
}

/// XINFO GROUPS, in Redis's order ([] for a missing stream).
pub async fn groups(pool: &Pool, s: &StreamKeys) -> Result<Vec<GroupInfo>> {
    match query(pool, true, &xinfo("GROUPS", s)).await {
        Ok(reply) => decode_groups(reply),
        Err(e) if e.is_missing_stream_or_group() => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// DEL: the stream and its groups; true if it existed.
pub async fn delete(pool: &Pool, s: &StreamKeys) -> Result<bool> {
    // Not repeated after a drop: a repeat would report the deleted stream as missing.
    Ok(int(query(pool, false, &cmd("DEL", &s.key)).await?)? > 0)
}

// ---- group operations -----------------------------------------------------------------------------

/// XGROUP CREATE key group start MKSTREAM: true if created; false if it existed and `exist_ok`.
pub async fn create(pool: &Pool, g: &Group, start: &str, exist_ok: bool) -> Result<bool> {
    let mut c = xgroup("CREATE", g);
    c.arg(start).arg("MKSTREAM");
    // Not repeated after a drop: a repeat of a create that was applied would meet BUSYGROUP.
    match query(pool, false, &c).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind == ErrorKind::QueueExists => {
            if exist_ok {
                Ok(false)
            } else {
                Err(g.exists())
            }
        }
        Err(e) => Err(e),
    }
}

fn read_cmd(g: &Group, count: usize, block_ms: Option<u64>) -> Cmd {
    let mut c = redis::cmd("XREADGROUP");
    c.arg("GROUP").arg(&g.name).arg(&g.consumer).arg("COUNT").arg(count);
    if let Some(ms) = block_ms {
        c.arg("BLOCK").arg(ms);
    }
    c.arg("STREAMS").arg(&g.stream.key).arg(">");
    c
}

/// Every stream of ferroq's (a STREAM key under `ferroq:stream:` with a valid name), sorted; SCAN, never KEYS.
pub async fn streams(pool: &Pool) -> Result<Vec<String>> {
    let mut names: Vec<String> = scan_keys(pool, &format!("{STREAM_PREFIX}*"), "stream")
        .await?
        .into_iter()
        .filter_map(|key| {
            key.strip_prefix(STREAM_PREFIX)
                .filter(|n| is_topic_name(n))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// XREADGROUP ... STREAMS key >: up to `count` new entries (deliveries 1). With `block`, waits up to that
/// many seconds for the first, on a dedicated connection (as a blocking claim does).
pub async fn read(pool: &Pool, g: &Group, count: usize, block: Option<f64>) -> Result<Vec<Entry>> {
    // Not repeated after a drop: a repeat could deliver entries nobody receives.
    let first = g.found(
        query(pool, false, &read_cmd(g, count, None))
            .await
            .and_then(decode_read),
    )?;
    let Some(block) = block else { return Ok(first) };
    if !first.is_empty() {
        return Ok(first);
    }
    // Redis reads BLOCK 0 as forever: never send less than 1 ms.
    let block_ms = ((block * 1000.0).round_ties_even() as u64).max(1);
    let cmd = read_cmd(g, count, Some(block_ms));
    g.found(
        pool.blocking(Duration::from_secs_f64(block), &cmd)
            .await
            .and_then(decode_read),
    )
}

/// ack-1 per chunk: the ids acknowledged now, in input order.
pub async fn ack(pool: &Pool, g: &Group, ids: &[String]) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let cmds: Vec<Cmd> = ids
        .chunks(pool.opts.chunk_size)
        .map(|chunk| {
            let mut c = scripts::evalsha(Id::StreamAck, 1);
            c.arg(&g.stream.key).arg(&g.name).arg(chunk);
            c
        })
        .collect();
    // Not repeated after a drop: a repeat would report the acknowledged ids as not acknowledged.
    all_ids(eval_all(pool, false, Id::StreamAck, &pipelines(cmds)).await?)
}

/// XPENDING key group [IDLE ms] - + count [consumer]: oldest id first.
pub async fn pending(
    pool: &Pool,
    g: &Group,
    count: usize,
    consumer: Option<&str>,
    min_idle_ms: Option<u64>,
) -> Result<Vec<Pending>> {
    let mut c = cmd("XPENDING", &g.stream.key);
    c.arg(&g.name);
    if let Some(ms) = min_idle_ms {
        c.arg("IDLE").arg(ms);
    }
    c.arg("-").arg("+").arg(count);
    if let Some(consumer) = consumer {
        c.arg(consumer);
    }
    g.found(query(pool, true, &c).await.and_then(decode_pending))
}

/// autoclaim-2: the entries idle at least `min_idle_ms` taken over by this consumer (with their new
/// delivery counts); those delivered `max_deliveries` times go to the dead-letter stream instead.
pub async fn autoclaim(pool: &Pool, g: &Group, min_idle_ms: u64, count: usize, error: &str) -> Result<Vec<Entry>> {
    let mut c = scripts::evalsha(Id::StreamAutoclaim, 2);
    c.arg(&g.stream.key)
        .arg(&g.dead.key)
        .arg(&g.stream.name)
        .arg(&g.name)
        .arg(&g.consumer)
        .arg(min_idle_ms)
        .arg(count)
        .arg(g.max_deliveries.unwrap_or(0))
        .arg(if error.is_empty() {
            DEFAULT_AUTOCLAIM_ERROR
        } else {
            error
        });
    // Not repeated after a drop: the first attempt may have taken the entries.
    g.found(
        eval_one(pool, false, Id::StreamAutoclaim, &c)
            .await
            .and_then(decode_autoclaim),
    )
}

/// dead_letter-2 per chunk: the pending ids moved to the group's dead-letter stream, in input order.
pub async fn dead_letter(pool: &Pool, g: &Group, ids: &[String], error: &str) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let cmds: Vec<Cmd> = ids
        .chunks(pool.opts.chunk_size)
        .map(|chunk| {
            let mut c = scripts::evalsha(Id::StreamDeadLetter, 2);
            c.arg(&g.stream.key)
                .arg(&g.dead.key)
                .arg(&g.stream.name)
                .arg(&g.name)
                .arg(error)
                .arg(chunk);
            c
        })
        .collect();
    // Not repeated after a drop: a repeat would move nothing and report nothing moved.
    all_ids(g.found(eval_all(pool, false, Id::StreamDeadLetter, &pipelines(cmds)).await)?)
}

/// XGROUP SETID key group position.
pub async fn seek(pool: &Pool, g: &Group, position: &str) -> Result<()> {
    let mut c = xgroup("SETID", g);
    c.arg(position);
    g.found(query(pool, true, &c).await).map(drop)
}

/// This group's row of XINFO GROUPS.
pub async fn group_info(pool: &Pool, g: &Group) -> Result<GroupInfo> {
    groups(pool, &g.stream)
        .await?
        .into_iter()
        .find(|row| row.name == g.name)
        .ok_or_else(|| g.not_found())
}

/// XGROUP DESTROY: true if the group existed (a missing stream has none).
pub async fn destroy(pool: &Pool, g: &Group) -> Result<bool> {
    // Not repeated after a drop: a repeat would report the destroyed group as missing.
    match query(pool, false, &xgroup("DESTROY", g)).await {
        Ok(n) => Ok(int(n)? > 0),
        Err(e) if e.is_missing_stream_or_group() => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::common::packed;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn flat(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| b(s)).collect())
    }

    fn group() -> Group {
        Group {
            stream: StreamKeys::new("ev"),
            name: "g".into(),
            consumer: "c".into(),
            max_deliveries: None,
            dead: StreamKeys::new("ev.dead"),
        }
    }

    fn entry(id: &str, fields: &[(&str, &str)], deliveries: i64) -> Entry {
        Entry {
            id: id.into(),
            fields: fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            deliveries,
        }
    }

    #[test]
    fn publish_command_layout() {
        let s = StreamKeys::new("ev");
        let msgs = vec![
            vec![("a".to_string(), "1".to_string())],
            vec![("b".to_string(), "2".to_string()), ("c".to_string(), "3".to_string())],
        ];
        let none = Retention {
            limit: None,
            approximate: true,
        };
        let args = packed(&publish_cmd(&s, "t0", &none, &msgs));
        assert_eq!(args[1], Id::StreamPublish.script().sha);
        assert_eq!(
            &args[2..],
            [
                "2",
                "ferroq:stream:ev",
                "ferroq:stream:ev:published:t0",
                "120000",
                "",
                "",
                "~",
                "1",
                "a",
                "1",
                "2",
                "b",
                "2",
                "c",
                "3"
            ]
        );
        let exact = Retention {
            limit: Some(Limit::MaxLen(7)),
            approximate: false,
        };
        assert_eq!(packed(&publish_cmd(&s, "t", &exact, &msgs))[6..9], ["MAXLEN", "7", "="]);
        assert_eq!(Retention::min_id(10_000, 1500), Limit::MinId("8500-0".into()));
        assert_eq!(Retention::min_id(1, 1500), Limit::MinId("0-0".into()));
    }

    #[test]
    fn read_command_layout() {
        let args = packed(&read_cmd(&group(), 5, Some(1500)));
        assert_eq!(
            args,
            [
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "5",
                "BLOCK",
                "1500",
                "STREAMS",
                "ferroq:stream:ev",
                ">"
            ]
        );
        assert!(!packed(&read_cmd(&group(), 1, None)).contains(&"BLOCK".to_string()));
    }

    #[test]
    fn range_entries_decode_and_skip_deleted() {
        let reply = Value::Array(vec![
            Value::Array(vec![b("1-0"), flat(&["a", "1"])]),
            Value::Nil,
            Value::Array(vec![b("2-0"), Value::Nil]),
            Value::Array(vec![b("3-1"), Value::Map(vec![(b("k"), b("v"))])]),
        ]);
        assert_eq!(
            decode_entries(reply, 0).unwrap(),
            [entry("1-0", &[("a", "1")], 0), entry("3-1", &[("k", "v")], 0)]
        );
    }

    #[test]
    fn read_replies_decode_on_resp2_and_resp3() {
        let entries = || Value::Array(vec![Value::Array(vec![b("5-0"), flat(&["x", "y"])])]);
        let resp2 = Value::Array(vec![Value::Array(vec![b("ferroq:stream:ev"), entries()])]);
        let resp3 = Value::Map(vec![(b("ferroq:stream:ev"), entries())]);
        let want = [entry("5-0", &[("x", "y")], 1)];
        assert_eq!(decode_read(resp2).unwrap(), want);
        assert_eq!(decode_read(resp3).unwrap(), want);
        assert!(decode_read(Value::Nil).unwrap().is_empty());
    }

    #[test]
    fn groups_decode_on_6_2_and_7() {
        // Redis 6.2, RESP2: no entries-read, no lag
        let v62 = Value::Array(vec![Value::Array(vec![
            b("name"),
            b("g"),
            b("consumers"),
            Value::Int(1),
            b("pending"),
            Value::Int(2),
            b("last-delivered-id"),
            b("9-0"),
        ])]);
        let got = decode_groups(v62).unwrap();
        assert_eq!(
            got,
            [GroupInfo {
                name: "g".into(),
                consumers: 1,
                pending: 2,
                last_delivered_id: "9-0".into(),
                entries_read: None,
                lag: None
            }]
        );
        // Redis 7, RESP3: a map, lag nil when Redis cannot tell
        let v7 = Value::Array(vec![Value::Map(vec![
            (b("name"), b("h")),
            (b("consumers"), Value::Int(0)),
            (b("pending"), Value::Int(0)),
            (b("last-delivered-id"), b("0-0")),
            (b("entries-read"), Value::Int(4)),
            (b("lag"), Value::Nil),
        ])]);
        let got = decode_groups(v7).unwrap();
        assert_eq!((got[0].entries_read, got[0].lag), (Some(4), None));
        assert!(decode_groups(Value::Array(vec![flat(&["name"])])).is_err());
    }

    #[test]
    fn stream_info_decodes() {
        let resp2 = Value::Array(vec![
            b("length"),
            Value::Int(2),
            b("radix-tree-keys"),
            Value::Int(1),
            b("groups"),
            Value::Int(1),
            b("first-entry"),
            Value::Array(vec![b("1-0"), flat(&["a", "1"])]),
            b("last-entry"),
            Value::Array(vec![b("2-0"), flat(&["a", "2"])]),
        ]);
        let want = Info {
            length: 2,
            first_id: Some("1-0".into()),
            last_id: Some("2-0".into()),
            groups: 1,
        };
        assert_eq!(decode_info(resp2).unwrap(), want);
        let empty = Value::Map(vec![
            (b("length"), Value::Int(0)),
            (b("groups"), Value::Int(0)),
            (b("first-entry"), Value::Nil),
            (b("last-entry"), Value::Nil),
        ]);
        assert_eq!(decode_info(empty).unwrap(), Info::default());
    }

    #[test]
    fn pending_and_autoclaim_decode() {
        let reply = Value::Array(vec![Value::Array(vec![
            b("1-0"),
            b("c"),
            Value::Int(1500),
            Value::Int(2),
        ])]);
        assert_eq!(
            decode_pending(reply).unwrap(),
            [Pending {
                id: "1-0".into(),
                consumer: "c".into(),
                idle_ms: 1500,
                deliveries: 2
            }]
        );
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Array(vec![b("1-0"), flat(&["a", "1"]), Value::Int(3)])]),
            flat(&["2-0"]),
        ]);
        assert_eq!(decode_autoclaim(reply).unwrap(), [entry("1-0", &[("a", "1")], 3)]);
    }

    #[test]
    fn missing_groups_name_the_group() {
        let g = group();
        let err = g.found::<()>(Err(Error::server("NOGROUP", "No such key"))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::QueueNotFound);
        assert_eq!(
            err.message,
            "consumer group 'g' of stream 'ev' not found: call create() first"
        );
        let other = g.found::<()>(Err(Error::server("ERR", "boom"))).unwrap_err();
        assert_eq!(other.message, "ERR boom");
    }

    #[test]
    fn consumer_names_like_python() {
        assert_eq!(consumer_name("web-1", 42), "web-1-42");
        assert_eq!(consumer_name("my host\u{e9}", 7), "my_host_-7");
        assert_eq!(consumer_name(&"h".repeat(200), 1).len(), 128);
        assert_eq!(decode_host(b"a\xffb"), "a_b");
        assert_eq!(decode_host("é".as_bytes()), "é");
        let name = default_consumer();
        assert!(name.ends_with(&format!("-{}", std::process::id())), "{name}");
        assert!(crate::protocol::validate::streams::is_group_name(&name));
    }
}
