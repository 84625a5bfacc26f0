//! RSMQ queues (smrchy/rsmq 0.12 and PyRSMQ keys, units, ids and replies): batch-first operations on a
//! [`Pool`], returning Rust values.
//!
//! Every call sends exactly the scripts and arguments of docs/protocol.md ("RSMQ operations"), so the
//! pure-Python client and this core leave identical Redis state. Arguments arrive validated (`validate::rsmq`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::errors::{Error, ErrorKind, Result};
use crate::limits;
use crate::pool::Pool;
use crate::protocol::common::{array, eval_all, eval_one, int, opt_string, pipelines, read_pipe, string, take};
use crate::protocol::ids;
use crate::protocol::keys::{RsmqKeys, STREAM_PUBLISH_TOKEN_MS};
use crate::protocol::validate;
use crate::protocol::validate::rsmq::utf16_len;
use crate::pyrepr::{py_repr, shown_debug};
use crate::scripts::{self, Id};

/// Times the receive script may name a dead-letter queue other than the one sent before giving up.
const DLQ_TRIES: usize = 3;
/// The longest a blocking receive waits between looks when no notification comes (producers that do
/// not publish, such as PyRSMQ or RSMQ without realtime).
const POLL_FALLBACK: Duration = Duration::from_secs(1);

/// One RSMQ queue: its keys, whether sends publish, and the dead-letter queue last learnt from Redis.
#[derive(Debug)]
pub struct Queue {
    pub keys: RsmqKeys,
    pub realtime: bool,
    dead_letter: Mutex<Option<RsmqKeys>>,
}

/// A received or popped message (`ferroq.types.RsmqMessage`).
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub id: String,
    pub message: String,
    pub rc: i64,
    pub fr: i64,
    pub sent: f64,
}

/// The queue attributes (`ferroq.types.RsmqAttributes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Attributes {
    pub vt: f64,
    pub delay: f64,
    pub maxsize: i64,
    pub totalrecv: i64,
    pub totalsent: i64,
    pub created: i64,
    pub modified: i64,
    pub msgs: i64,
    pub hiddenmsgs: i64,
    pub max_receives: Option<i64>,
    pub dead_letter: Option<String>,
}

/// New attribute values; `None` keeps the stored one. `dead_letter` is what the scripts take:
/// (`''` keep | `'0'` remove | n, name or `''`), from [`validate::rsmq::dead_letter`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub vt: Option<i64>,
    pub delay: Option<i64>,
    pub maxsize: Option<i64>,
    pub dead_letter: (String, String),
}

impl Queue {
    pub fn new(ns: &str, name: &str, realtime: bool) -> Self {
        Self {
            keys: RsmqKeys::new(ns, name),
            realtime,
            dead_letter: Mutex::new(None),
        }
    }

    fn learn_dead_letter(&self, name: Option<&str>) {
        *self.dead_letter.lock().unwrap_or_else(|e| e.into_inner()) = name.map(|n| self.keys.sibling(n));
    }

    /// The dead-letter queue's (zset, hash) for receive-4: the one last learnt, else this queue's own.
    fn dead_letter_keys(&self) -> (String, String) {
        match self.dead_letter.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(d) => (d.queue.clone(), d.hash.clone()),
            None => (self.keys.queue.clone(), self.keys.hash.clone()),
        }
    }

    fn not_found(&self) -> Error {
        Error::new(
            ErrorKind::QueueNotFound,
            format!(
                "RSMQ queue {} not found in namespace {}",
                py_repr(&self.keys.name),
                py_repr(&self.keys.ns)
            ),
        )
    }

    fn dead_letter_missing(&self, dlq: &str) -> Error {
        Error::new(
            ErrorKind::QueueNotFound,
            format!(
                "dead-letter queue {} of RSMQ queue {} not found in namespace {}",
                py_repr(dlq),
                py_repr(&self.keys.name),
                py_repr(&self.keys.ns)
            ),
        )
    }
}

// ---- replies -----------------------------------------------------------------------------------------

fn reply_error(pool: &Pool, script: Id, reply: &Value) -> Error {
    Error::protocol(format!(
        "unexpected reply to {} from Redis at {}: {}",
        script.script().name,
        pool.shown_url(),
        shown_debug(reply)
    ))
}

/// A script reply `{status, ...}` split into its status word and the rest. The error is built only for a
/// bad reply: the usual one (a receive's holds a whole batch of bodies) is taken apart, never formatted.
fn status(pool: &Pool, script: Id, reply: Value) -> Result<(String, Vec<Value>)> {
    let mut items = match reply {
        Value::Array(items) if !items.is_empty() => items,
        other => return Err(reply_error(pool, script, &other)),
    };
    // The word is short: read from a copy, so a reply whose first value is not one is shown whole.
    match string(items[0].clone()) {
        Ok(word) => {
            items.remove(0);
            Ok((word, items))
        }
        Err(_) => Err(reply_error(pool, script, &Value::Array(items))),
    }
}

/// The error of a non-'ok' outcome every script shares ('notfound', 'dlqmissing'), else a protocol error.
fn outcome_error(pool: &Pool, q: &Queue, script: Id, word: &str, rest: Vec<Value>) -> Error {
    match (word, rest.len()) {
        ("notfound", 0) => q.not_found(),
        ("dlqmissing", 1) => match rest.into_iter().next().map(string) {
            Some(Ok(d)) => q.dead_letter_missing(&d),
            _ => Error::protocol(format!("unexpected dlqmissing reply to {}", script.script().name)),
        },
        ("exists", 0) if script == Id::RsmqCreate => Error::new(
            ErrorKind::QueueExists,
            format!(
                "RSMQ queue {} already exists in namespace {}",
                py_repr(&q.keys.name),
                py_repr(&q.keys.ns)
            ),
        ),
        _ => {
            let mut items = vec![Value::BulkString(word.as_bytes().to_vec())];
            items.extend(rest);
            reply_error(pool, script, &Value::Array(items))
        }
    }
}

/// `{'ok'}` or the outcome's error.
fn expect_ok(pool: &Pool, q: &Queue, script: Id, reply: Value) -> Result<Vec<Value>> {
    let (word, rest) = status(pool, script, reply)?;
    if word == "ok" {
        Ok(rest)
    } else {
        Err(outcome_error(pool, q, script, &word, rest))
    }
}

fn number<T: std::str::FromStr>(v: Option<String>) -> Option<T> {
    v.and_then(|s| s.trim().parse().ok())
}

fn decode_attributes(pool: &Pool, q: &Queue, reply: Value) -> Result<Attributes> {
    let bad = reply_error(pool, Id::RsmqAttributes, &reply);
    let rest = expect_ok(pool, q, Id::RsmqAttributes, reply)?;
    let [fields, msgs, hidden]: [Value; 3] = rest.try_into().map_err(|_| bad.clone())?;
    let fields: Vec<Option<String>> = array(fields)
        .and_then(|f| f.into_iter().map(opt_string).collect())
        .map_err(|_| bad.clone())?;
    let [vt, delay, maxsize, totalrecv, totalsent, created, modified, maxrecv, dlq]: [Option<String>; 9] =
        fields.try_into().map_err(|_| bad.clone())?;
    // A count absent until the first send/receive is 0; PyRSMQ may store float times.
    let count = |v: Option<String>| match v {
        None => Some(0),
        v => number::<i64>(v),
    };
    let time = |v: Option<String>| match v {
        None => Some(0),
        v => number::<f64>(v).filter(|t| t.is_finite()).map(|t| t.trunc() as i64),
    };
    let max_receives = match maxrecv {
        None => None,
        v => Some(number::<i64>(v).ok_or_else(|| bad.clone())?),
    };
    let attrs = (|| {
        Some(Attributes {
            vt: number(vt)?,
            delay: number(delay)?,
            maxsize: number(maxsize)?,
            totalrecv: count(totalrecv)?,
            totalsent: count(totalsent)?,
            created: time(created)?,
            modified: time(modified)?,
            msgs: int(msgs).ok()?,
            hiddenmsgs: int(hidden).ok()?,
            max_receives,
            dead_letter: dlq,
        })
    })()
    .ok_or(bad)?;
    q.learn_dead_letter(attrs.max_receives.and(attrs.dead_letter.as_deref()));
    Ok(attrs)
}

// ---- queue administration ----------------------------------------------------------------------------

/// Creates the queue (and lists it in `{ns}:QUEUES`); vt/delay in whole seconds.
pub async fn create(
    pool: &Pool,
    q: &Queue,
    vt: i64,
    delay: i64,
    maxsize: i64,
    dead_letter: (String, String),
) -> Result<()> {
    let (max_receives, dlq) = dead_letter;
    let dlq_hash = if dlq.is_empty() {
        q.keys.hash.clone()
    } else {
        q.keys.sibling(&dlq).hash
    };
    let mut cmd = scripts::evalsha(Id::RsmqCreate, 3);
    cmd.arg(&q.keys.queues)
        .arg(&q.keys.hash)
        .arg(dlq_hash)
        .arg(&q.keys.name)
        .arg(vt)
        .arg(delay)
        .arg(maxsize)
        .arg(&max_receives)
        .arg(&dlq);
    // Not repeated after a drop: a repeat of a create that was applied would report 'exists'.
    expect_ok(
        pool,
        q,
        Id::RsmqCreate,
        eval_one(pool, false, Id::RsmqCreate, &cmd).await?,
    )?;
    q.learn_dead_letter((!dlq.is_empty()).then_some(dlq.as_str()));
    Ok(())
}

pub async fn delete_queue(pool: &Pool, q: &Queue) -> Result<()> {
    let mut cmd = scripts::evalsha(Id::RsmqDeleteQueue, 3);
    cmd.arg(&q.keys.queues)
        .arg(&q.keys.queue)
        .arg(&q.keys.hash)
        .arg(&q.keys.name);
    expect_ok(
        pool,
        q,
        Id::RsmqDeleteQueue,
        eval_one(pool, false, Id::RsmqDeleteQueue, &cmd).await?,
    )?;
    q.learn_dead_letter(None);
    Ok(())
}

fn attributes_cmd(q: &Queue) -> Cmd {
    let mut cmd = scripts::evalsha(Id::RsmqAttributes, 2);
    cmd.arg(&q.keys.queue).arg(&q.keys.hash);
    cmd
}

pub async fn attributes(pool: &Pool, q: &Queue) -> Result<Attributes> {
    let reply = eval_one(pool, true, Id::RsmqAttributes, &attributes_cmd(q)).await?;
    decode_attributes(pool, q, reply)
}

fn opt_arg(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// Changes the given attributes, then reads them all back.
pub async fn set_attributes(pool: &Pool, q: &Queue, settings: Settings) -> Result<Attributes> {
    let (max_receives, dlq) = &settings.dead_letter;
    let dlq_hash = if dlq.is_empty() {
        q.keys.hash.clone()
    } else {
        q.keys.sibling(dlq).hash
    };
    let mut set = scripts::evalsha(Id::RsmqSetAttributes, 2);
    set.arg(&q.keys.hash)
        .arg(dlq_hash)
        .arg(opt_arg(settings.vt))
        .arg(opt_arg(settings.delay))
        .arg(opt_arg(settings.maxsize))
        .arg(max_receives)
        .arg(dlq);
    let (set, read) = (&set, &attributes_cmd(q));
    // Two round trips: in one pipeline, a NOSCRIPT resend of only the first script would run it after the read.
    // Setting the same values again is harmless: repeated after a dropped connection.
    let attrs = pool
        .run(true, |mut conn| async move {
            let changed = pool.eval(&mut conn, Id::RsmqSetAttributes, set).await?;
            expect_ok(pool, q, Id::RsmqSetAttributes, changed)?;
            pool.eval(&mut conn, Id::RsmqAttributes, read).await
        })
        .await?;
    decode_attributes(pool, q, attrs)
}

/// The queue names of a namespace, sorted.
pub async fn queues(pool: &Pool, ns: &str) -> Result<Vec<String>> {
    let mut cmd = redis::cmd("SMEMBERS");
    cmd.arg(crate::protocol::keys::rsmq_queues(ns));
    let cmd = &cmd;
    let reply = pool
        .run(true, |mut conn| async move { pool.query(&mut conn, cmd).await })
        .await?;
    let mut names = array(reply)?.into_iter().map(string).collect::<Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

// ---- send ----------------------------------------------------------------------------------------------

/// The error for messages longer than the queue's `maxsize`: a BatchError naming each of them.
fn too_long(messages: &[String], maxsize: &str) -> Error {
    let limit: i64 = maxsize.trim().parse().unwrap_or(i64::MAX);
    let errors: Vec<(usize, Error)> = messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let units = utf16_len(m);
            (units as i64 > limit).then(|| (i, validate::rsmq::too_long(units, maxsize)))
        })
        .collect();
    validate::batch_error(errors, messages.len())
}

/// One send-3 call: `token` names the chunk's record (kept `record_ms`), `longest` is its longest message in
/// UTF-16 units. The caller appends the messages (22 random characters, body).
pub fn send_head(q: &Queue, delay_ms: &str, longest: usize, token: &str, record_ms: u64) -> Cmd {
    let mut cmd = scripts::evalsha(Id::RsmqSend, 3);
    cmd.arg(&q.keys.queue)
        .arg(&q.keys.hash)
        .arg(q.keys.published(token))
        .arg(delay_ms)
        .arg(longest)
        .arg(if q.realtime { q.keys.channel.as_str() } else { "" })
        .arg(record_ms);
    cmd
}

fn send_cmd(q: &Queue, delay_ms: &str, messages: &[String], randoms: &[String], token: &str) -> Cmd {
    let longest = messages.iter().map(|m| utf16_len(m)).max().unwrap_or(0);
    let mut cmd = send_head(q, delay_ms, longest, token, STREAM_PUBLISH_TOKEN_MS);
    for (r, m) in randoms.iter().zip(messages) {
        cmd.arg(r).arg(m);
    }
    cmd
}

/// A send-3 reply: the ids, and whether they were sent by this call (`false`: an earlier call with the same
/// token sent them). `messages` only names the too-long ones in the error.
pub fn decode_send(pool: &Pool, q: &Queue, reply: Value, messages: &[String]) -> Result<(Vec<String>, bool)> {
    let (word, rest) = status(pool, Id::RsmqSend, reply)?;
    match (word.as_str(), rest.len()) {
        ("ok" | "done", 1) => {
            let ids = array(rest.into_iter().next().unwrap_or(Value::Nil))?
                .into_iter()
                .map(string)
                .collect::<Result<Vec<_>>>()?;
            Ok((ids, word == "ok"))
        }
        ("toolong", 1) => {
            let maxsize = string(rest.into_iter().next().unwrap_or(Value::Nil))?;
            Err(too_long(messages, &maxsize))
        }
        (word, _) => Err(outcome_error(pool, q, Id::RsmqSend, word, rest)),
    }
}

/// The queue's maxsize (-1: unlimited) and its stored text, read with HMGET; QueueNotFound if it does not exist.
pub async fn queue_maxsize(pool: &Pool, q: &Queue) -> Result<(i64, String)> {
    let mut hmget = redis::cmd("HMGET");
    hmget.arg(&q.keys.hash).arg("vt").arg("delay").arg("maxsize");
    let hmget = &hmget;
    let reply = pool
        .run(true, |mut conn| async move { pool.query(&mut conn, hmget).await })
        .await?;
    let [_vt, _delay, maxsize] = take::<3>(reply, "HMGET of the queue attributes")?;
    let (Some(_), Some(_), Some(maxsize)) = (opt_string(_vt)?, opt_string(_delay)?, opt_string(maxsize)?) else {
        return Err(q.not_found());
    };
    Ok((maxsize.trim().parse().unwrap_or(-1), maxsize))
}

/// Sends validated messages (delay in ms; None: the queue's); returns their ids in input order. Messages
/// longer than the queue's maxsize raise a BatchError listing them, and nothing is written.
pub async fn send_batch(pool: &Pool, q: &Queue, messages: Vec<String>, delay_ms: Option<u64>) -> Result<Vec<String>> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let chunk = pool.opts.chunk_size;
    if messages.len() > chunk {
        // Several scripts: check what they would refuse first, so nothing is written on a predictable error.
        let (limit, maxsize) = queue_maxsize(pool, q).await?;
        if limit != -1 && messages.iter().any(|m| utf16_len(m) as i64 > limit) {
            return Err(too_long(&messages, &maxsize));
        }
    }
    let randoms = ids::rsmq_randoms(messages.len());
    let delay = delay_ms.map(|d| d.to_string()).unwrap_or_default();
    let tokens = ids::new_tokens(messages.len().div_ceil(chunk));
    let cmds: Vec<Cmd> = messages
        .chunks(chunk)
        .zip(randoms.chunks(chunk))
        .zip(&tokens)
        .map(|((m, r), t)| send_cmd(q, &delay, m, r, t))
        .collect();
    // Once per token: a repeat after a dropped connection returns the first call's ids, sending nothing.
    let replies = eval_all(pool, true, Id::RsmqSend, &pipelines(cmds)).await?;
    let mut out = Vec::with_capacity(messages.len());
    for reply in replies {
        out.extend(decode_send(pool, q, reply, &messages)?.0);
    }
    if out.len() != messages.len() {
        return Err(Error::protocol(format!(
            "send returned {} ids for {} messages",
            out.len(),
            messages.len()
        )));
    }
    Ok(out)
}

/// Sends one message; a message too long for the queue raises MessageTooLarge.
pub async fn send(pool: &Pool, q: &Queue, message: String, delay_ms: Option<u64>) -> Result<String> {
    match send_batch(pool, q, vec![message], delay_ms).await {
        Ok(ids) => ids
            .into_iter()
            .next()
            .ok_or_else(|| Error::protocol("send returned no id")),
        Err(Error {
            kind: ErrorKind::Batch(mut errors),
            ..
        }) if errors.len() == 1 => Err(errors.remove(0).1),
        Err(e) => Err(e),
    }
}

// ---- receive / pop ---------------------------------------------------------------------------------

/// One receive-4 call's result: the messages, Redis's now and the next hidden message's time (epoch ms,
/// -1 for none).
struct Taken {
    messages: Vec<Received>,
    now_ms: i64,
    next_ms: i64,
}

/// Decodes receive-4's messages: `out` holds each one's id and body (or, when the caller reads the bodies,
/// its id alone: the body is left empty), `again` the place (from 1), receive count and first-receive time
/// of each one received before; every other one has rc 1 and fr `now_ms`.
fn decode_messages(out: Value, again: Value, now_ms: i64, caller_reads: bool) -> Result<Vec<Received>> {
    let out = array(out)?;
    let per = if caller_reads { 1 } else { 2 };
    if out.len() % per != 0 {
        return Err(Error::protocol(format!(
            "receive reply: {} values, not {per} per message",
            out.len()
        )));
    }
    let mut messages = Vec::with_capacity(out.len() / per);
    let mut values = out.into_iter();
    while let Some(id) = values.next() {
        let id = string(id)?;
        let message = if caller_reads {
            String::new()
        } else {
            string(values.next().unwrap_or(Value::Nil))?
        };
        messages.push(Received {
            sent: ids::rsmq_sent_ms(&id),
            id,
            message,
            rc: 1,
            fr: now_ms,
        });
    }
    let again = array(again)?;
    if again.len() % 3 != 0 {
        return Err(Error::protocol(format!(
            "receive reply: {} values of messages received before",
            again.len()
        )));
    }
    let mut values = again.into_iter();
    while let (Some(k), Some(rc), Some(fr)) = (values.next(), values.next(), values.next()) {
        let k = int(k)?;
        let m = usize::try_from(k)
            .ok()
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| messages.get_mut(k))
            .ok_or_else(|| Error::protocol(format!("receive reply: no message {k}")))?;
        m.rc = int(rc)?;
        m.fr = first_receive(&string(fr)?)?;
    }
    Ok(messages)
}

/// A first-receive time: RSMQ stores it as an integer string; a float written by another client is truncated.
fn first_receive(fr: &str) -> Result<i64> {
    fr.parse::<i64>()
        .ok()
        .or_else(|| {
            fr.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(|f| f.trunc() as i64)
        })
        .ok_or_else(|| Error::protocol(format!("unexpected first-receive time {fr:?}")))
}

/// One receive-4 call of up to `n` messages, following the dead-letter queue the script names. With
/// `caller_reads`, the messages come without their bodies (see [`with_bodies`]).
async fn take_once(pool: &Pool, q: &Queue, n: usize, vt_ms: &str, pop: bool, caller_reads: bool) -> Result<Taken> {
    let prefix = q.keys.ns_prefix();
    for _ in 0..DLQ_TRIES {
        let (dz, dh) = q.dead_letter_keys();
        let mut cmd = scripts::evalsha(Id::RsmqReceive, 4);
        cmd.arg(&q.keys.queue)
            .arg(&q.keys.hash)
            .arg(dz)
            .arg(dh)
            .arg(n)
            .arg(vt_ms)
            .arg(if pop { "1" } else { "0" })
            .arg(&prefix)
            .arg(if caller_reads { "1" } else { "0" });
        // Not repeated after a drop: a repeat could hide messages nobody receives.
        let reply = eval_one(pool, false, Id::RsmqReceive, &cmd).await?;
        let (word, rest) = status(pool, Id::RsmqReceive, reply)?;
        match (word.as_str(), rest.len()) {
            ("ok", 4) => {
                let [now, next, out, again]: [Value; 4] =
                    rest.try_into().map_err(|_| Error::protocol("receive reply"))?;
                let now_ms = int(now)?;
                return Ok(Taken {
                    messages: decode_messages(out, again, now_ms, caller_reads)?,
                    now_ms,
                    next_ms: int(next)?,
                });
            }
            ("dlq", 1) => {
                let name = string(rest.into_iter().next().unwrap_or(Value::Nil))?;
                q.learn_dead_letter(Some(&name));
            }
            (word, _) => return Err(outcome_error(pool, q, Id::RsmqReceive, word, rest)),
        }
    }
    Err(Error::protocol(format!(
        "the dead-letter queue of RSMQ queue {} kept changing ({DLQ_TRIES} tries)",
        py_repr(&q.keys.name)
    )))
}

/// The received `messages` with their bodies, read with one `HMGET` per chunk (one round trip). A message
/// whose body is missing (a foreign or evicted write, or deleted since) is left out, and deleted
/// (`delete-2`), as the receive script does with one it sees.
async fn with_bodies(pool: &Pool, q: &Queue, messages: Vec<Received>) -> Result<Vec<Received>> {
    if messages.is_empty() {
        return Ok(messages);
    }
    let mut pipe = redis::Pipeline::new();
    for chunk in messages.chunks(pool.opts.chunk_size) {
        pipe.cmd("HMGET")
            .arg(&q.keys.hash)
            .arg(chunk.iter().map(|m| &m.id).collect::<Vec<_>>());
    }
    let mut bodies = Vec::with_capacity(messages.len());
    for reply in read_pipe(pool, &pipe).await? {
        bodies.extend(array(reply)?);
    }
    if bodies.len() != messages.len() {
        return Err(Error::protocol(format!(
            "{} bodies for {} messages",
            bodies.len(),
            messages.len()
        )));
    }
    let (mut kept, mut missing) = (Vec::with_capacity(messages.len()), Vec::new());
    for (mut m, body) in messages.into_iter().zip(bodies) {
        match opt_string(body)? {
            Some(body) => {
                m.message = body;
                kept.push(m);
            }
            None => missing.push(m.id),
        }
    }
    if !missing.is_empty() {
        delete_batch(pool, q, &missing).await?;
    }
    Ok(kept)
}

/// Up to `count` messages in calls of at most `chunk_size`, until a call returns fewer than asked. A receive
/// of `MIN_RSMQ_COUNT_FOR_CALLER_BODIES` or more reads the bodies itself, after the last call.
async fn take_up_to(pool: &Pool, q: &Queue, count: usize, vt_ms: &str, pop: bool) -> Result<Taken> {
    let caller_reads = !pop && count >= limits::MIN_RSMQ_COUNT_FOR_CALLER_BODIES;
    let mut all = Taken {
        messages: Vec::new(),
        now_ms: 0,
        next_ms: -1,
    };
    while all.messages.len() < count {
        let n = (count - all.messages.len()).min(pool.opts.chunk_size);
        let got = take_once(pool, q, n, vt_ms, pop, caller_reads).await?;
        let short = got.messages.len() < n;
        all.messages.extend(got.messages);
        all.now_ms = got.now_ms;
        all.next_ms = got.next_ms;
        if short {
            break;
        }
    }
    if caller_reads {
        all.messages = with_bodies(pool, q, all.messages).await?;
    }
    Ok(all)
}

/// Receives (hides for `vt_ms`, None: the queue's vt) or pops (`pop`) up to `count` messages, oldest
/// first. With `block`, waits up to that many seconds for the first: subscribed to the realtime channel
/// on a dedicated connection, looking again on each notification, when the next hidden message becomes
/// visible, and at least every second.
pub async fn receive(
    pool: &Pool,
    q: &Queue,
    count: usize,
    vt_ms: Option<u64>,
    pop: bool,
    block: Option<f64>,
) -> Result<Vec<Received>> {
    let vt = vt_ms.map(|v| v.to_string()).unwrap_or_default();
    let first = take_up_to(pool, q, count, &vt, pop).await?;
    let Some(block) = block else {
        return Ok(first.messages);
    };
    if !first.messages.is_empty() {
        return Ok(first.messages);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(block);
    let sub = pool.subscribe(&q.keys.channel).await?;
    let result = async {
        loop {
            // A notification that came before this look is covered by it.
            sub.drain();
            let got = take_up_to(pool, q, count, &vt, pop).await?;
            if !got.messages.is_empty() {
                return Ok(got.messages);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            let mut pause = (deadline - now).min(POLL_FALLBACK);
            if got.next_ms >= 0 {
                let until_next = Duration::from_millis((got.next_ms - got.now_ms).max(1) as u64);
                pause = pause.min(until_next);
            }
            sub.wait(pause).await;
        }
    }
    .await;
    sub.close().await;
    result
}

// ---- delete / change visibility -------------------------------------------------------------------

/// Deletes messages by id; returns the ids deleted, in input order.
pub async fn delete_batch(pool: &Pool, q: &Queue, ids: &[String]) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let chunks: Vec<&[String]> = ids.chunks(pool.opts.chunk_size).collect();
    let cmds: Vec<Cmd> = chunks
        .iter()
        .map(|chunk| {
            let mut cmd = scripts::evalsha(Id::RsmqDelete, 2);
            cmd.arg(&q.keys.queue).arg(&q.keys.hash).arg(*chunk);
            cmd
        })
        .collect();
    // Not repeated after a drop: a repeat would report the deleted ids as not deleted.
    let replies = eval_all(pool, false, Id::RsmqDelete, &pipelines(cmds)).await?;
    let mut out = Vec::with_capacity(ids.len());
    for (chunk, reply) in chunks.into_iter().zip(replies) {
        out.extend(deleted_ids(chunk, reply)?);
    }
    Ok(out)
}

/// The ids one delete-2 call deleted: its list of them, or their number when it deleted every id given.
fn deleted_ids(chunk: &[String], reply: Value) -> Result<Vec<String>> {
    if let Value::Int(n) = reply {
        return if usize::try_from(n).is_ok_and(|n| n == chunk.len()) {
            Ok(chunk.to_vec())
        } else {
            Err(Error::protocol(format!("delete reply: {n} of {} ids", chunk.len())))
        };
    }
    array(reply)?.into_iter().map(string).collect()
}

/// Hides a message for `vt_ms` from now; false when there is no such message.
pub async fn change_visibility(pool: &Pool, q: &Queue, id: &str, vt_ms: u64) -> Result<bool> {
    let mut cmd = scripts::evalsha(Id::RsmqVisibility, 2);
    cmd.arg(&q.keys.queue).arg(&q.keys.hash).arg(id).arg(vt_ms);
    let reply = eval_one(pool, true, Id::RsmqVisibility, &cmd).await?;
    let bad = reply_error(pool, Id::RsmqVisibility, &reply);
    let rest = expect_ok(pool, q, Id::RsmqVisibility, reply)?;
    match <[Value; 1]>::try_from(rest) {
        Ok([flag]) => Ok(int(flag)? == 1),
        Err(_) => Err(bad),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::common::packed;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn send_command_layout() {
        let q = Queue::new("rsmq", "jobs", true);
        let msgs = vec!["hi".to_string(), "😀x".to_string()];
        let randoms = ids::rsmq_randoms(2);
        let args = packed(&send_cmd(&q, "", &msgs, &randoms, "t0"));
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], Id::RsmqSend.script().sha);
        assert_eq!(
            &args[2..10],
            [
                "3",
                "rsmq:jobs",
                "rsmq:jobs:Q",
                "rsmq:jobs:published:t0",
                "",
                "3",
                "rsmq:rt:jobs",
                "120000"
            ]
        );
        assert_eq!(&args[10..], [&randoms[0], "hi", &randoms[1], "😀x"]);
        let quiet = Queue::new("rsmq", "jobs", false);
        assert_eq!(
            packed(&send_cmd(&quiet, "1500", &msgs, &randoms, "t0"))[6..9],
            ["1500", "3", ""]
        );
    }

    #[test]
    fn too_long_lists_every_long_message() {
        let msgs = vec!["x".repeat(1025), "ok".into(), "é".repeat(1030)];
        let err = too_long(&msgs, "1024");
        let ErrorKind::Batch(errors) = &err.kind else {
            panic!("{err:?}")
        };
        assert_eq!(errors.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(errors[1].1.kind, ErrorKind::MessageTooLarge);
        assert_eq!(
            errors[1].1.message,
            "message is 1030 characters (UTF-16 code units), more than the queue's maxsize 1024"
        );
        assert_eq!(err.message, "2 of 3 messages are invalid; nothing was written");
    }

    #[test]
    fn received_messages_decode() {
        let (id, id2) = (
            format!("gqll7vdgzk{}", "A".repeat(22)),
            format!("gqll7vdgzl{}", "B".repeat(22)),
        );
        let now = 1_700_000_001_000;
        let arr = |v: Vec<Value>| Value::Array(v);
        // With the bodies: the second one was received before (its place, rc and fr in `again`).
        let out = arr(vec![b(&id), b("body"), b(&id2), b("two")]);
        let again = arr(vec![Value::Int(2), Value::Int(3), b("1700000000999")]);
        let got = decode_messages(out, again, now, false).unwrap();
        assert_eq!(
            got.iter()
                .map(|m| (m.id.as_str(), m.message.as_str(), m.rc, m.fr))
                .collect::<Vec<_>>(),
            [
                (id.as_str(), "body", 1, now),
                (id2.as_str(), "two", 3, 1_700_000_000_999)
            ]
        );
        assert_eq!(got[0].sent, 1_700_000_000_123.456);
        // Ids alone, when the caller reads the bodies.
        let got = decode_messages(arr(vec![b(&id)]), arr(vec![]), now, true).unwrap();
        assert_eq!(
            (got[0].id.as_str(), got[0].message.as_str(), got[0].rc),
            (id.as_str(), "", 1)
        );
        assert!(decode_messages(arr(vec![b("x")]), arr(vec![]), now, false).is_err()); // no body
        assert!(decode_messages(
            arr(vec![b(&id)]),
            arr(vec![Value::Int(2), Value::Int(2), b("1")]),
            now,
            true
        )
        .is_err());
        assert!(decode_messages(arr(vec![b(&id)]), arr(vec![Value::Int(1), Value::Int(2)]), now, true).is_err());
        assert!(decode_messages(arr(vec![]), arr(vec![]), now, false)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn deleted_ids_decode_a_list_or_the_count_of_all() {
        let chunk = vec!["a".to_string(), "b".to_string()];
        assert_eq!(deleted_ids(&chunk, Value::Int(2)).unwrap(), chunk);
        assert_eq!(deleted_ids(&chunk, Value::Array(vec![b("b")])).unwrap(), ["b"]);
        assert!(deleted_ids(&chunk, Value::Int(1)).is_err()); // a count is only ever all of them
        assert!(deleted_ids(&chunk, Value::Int(-1)).is_err());
    }

    #[test]
    fn dead_letter_keys_default_to_the_queue() {
        let q = Queue::new("ns", "q", false);
        assert_eq!(q.dead_letter_keys(), ("ns:q".to_string(), "ns:q:Q".to_string()));
        q.learn_dead_letter(Some("dead"));
        assert_eq!(q.dead_letter_keys(), ("ns:dead".to_string(), "ns:dead:Q".to_string()));
        q.learn_dead_letter(None);
        assert_eq!(q.dead_letter_keys().0, "ns:q");
    }
}
