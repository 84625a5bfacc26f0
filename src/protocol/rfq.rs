//! rfq topics: batch-first operations on a [`Pool`], returning Rust values.
//!
//! Every call sends exactly the scripts and arguments of docs/protocol.md ("Operations"), so the pure-Python client and
//! this core leave identical Redis state. A publish chunk is a watched transaction, not a script (see
//! [`write_chunk`] for why a retry never duplicates it).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{Cmd, Pipeline, Value};

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::MIN_DELETE_LATER;
use crate::pool::{Direct, Pool};
use crate::protocol::common::{
    array, eval_all, eval_one, int, opt_number, opt_string, pairs, pipelines, read_pipe, scan_keys, string, take,
    unexpected, Fields,
};
use crate::protocol::ids;
use crate::protocol::keys::{topic_of_list_key, TopicKeys, TopicList, STREAM_PUBLISH_TOKEN_MS};
use crate::scripts::{self, Id};

/// Messages handled per call by harvest and purge (they repeat while the limit is reached).
pub const STEP_LIMIT: usize = 1000;
/// Upper bound on those repetitions, so no loop is unbounded.
const MAX_STEPS: usize = 10_000;
/// Polling backoff of a blocking claim over several topics.
const POLL_MIN: Duration = Duration::from_millis(5);
const POLL_MAX: Duration = Duration::from_millis(100);

/// A claimed message; `topic` indexes the topics given to [`claim`]; `claim` is the token of its claim,
/// shared by the claim's messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub topic: usize,
    pub id: String,
    pub deliveries: i64,
    pub fields: Fields,
    pub claim: Arc<str>,
}

/// An id to commit / extend / release, with its fence: its claim's token, the delivery count of a claim of
/// the previous layout (a Message without a claim), or '' (unfenced).
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub topic: Arc<TopicKeys>,
    pub id: String,
    pub fence: String,
}

/// One entry of [`inspect`]; times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct InspectEntry {
    pub id: String,
    pub fields: Option<Fields>,
    pub deliveries: i64,
    pub claimed_at_ms: Option<f64>,
    pub lease_deadline_ms: Option<f64>,
    pub owner: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub backlog: i64,
    pub nextlog: i64,
    pub leased: i64,
    pub expired: i64,
    pub oldest_age: Option<f64>,
    pub delayed: i64,
}

// ---- operations -------------------------------------------------------------------------------------

/// Publishes validated messages (a publish or publish_batch call): one message with [`publish_one`], more
/// in watched transactions ([`publish_batch`]); returns their new ids in input order.
pub async fn publish(pool: &Pool, topic: &TopicKeys, mut messages: Vec<Fields>, front: bool) -> Result<Vec<String>> {
    if messages.len() == 1 {
        let id = publish_one(pool, topic, messages.pop().expect("one message"), front).await?;
        return Ok(vec![id]);
    }
    publish_batch(pool, topic, messages, front).await
}

/// Publishes validated messages in chunks, each a watched transaction; returns their new ids in input order.
pub async fn publish_batch(pool: &Pool, topic: &TopicKeys, messages: Vec<Fields>, front: bool) -> Result<Vec<String>> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let ids = ids::new_ids(messages.len());
    let chunk = pool.opts.chunk_size;
    let mut chunks: Vec<ChunkWrite> = ids
        .chunks(chunk)
        .zip(messages.chunks(chunk))
        .map(|(ids, msgs)| {
            // The record is named after the chunk's first id, fresh for every call; the next request deletes it.
            let mut write = ChunkWrite::new(topic, &ids[0], STREAM_PUBLISH_TOKEN_MS, front, true);
            for (id, fields) in ids.iter().zip(msgs) {
                write.message(topic, id.clone(), fields.iter().map(|(k, v)| (k, v)));
            }
            write
        })
        .collect();
    if front {
        // The last chunk goes first, so the whole batch ends up consumed next, in input order.
        chunks.reverse();
    }
    drop(messages);
    for write in chunks {
        write_chunk(pool, write).await?;
    }
    Ok(ids)
}

/// Publishes one message with one script call, publish_one-3: one round trip, where the watched transaction
/// takes three. The record (named after the message's id, which only this call knows) makes a repeat after
/// a dropped connection write nothing. Once the first attempt's reply is read, no attempt of this call can
/// reach Redis later, so the record may go: its `DEL` rides ahead of the client's next request other than a
/// single publish, or of the single publish made once `MIN_DELETE_LATER` records wait
/// ([`Pool::delete_later`]), instead of costing a round trip of its own. After a repeat, the dropped attempt
/// could still arrive (it would find the record and write nothing), so the record is left to expire
/// (STREAM_PUBLISH_TOKEN_MS), as is one that no later request takes along.
async fn publish_one(pool: &Pool, topic: &TopicKeys, fields: Fields, front: bool) -> Result<String> {
    let id = ids::new_ids(1).pop().expect("one id");
    let record = topic.published(&id);
    let mut cmd = scripts::evalsha(Id::PublishOne, 3);
    cmd.arg(&topic.backlog).arg(&record).arg(topic.message(&id));
    cmd.arg(if front { "1" } else { "0" })
        .arg(STREAM_PUBLISH_TOKEN_MS)
        .arg(&id);
    for (k, v) in &fields {
        cmd.arg(k).arg(v);
    }
    // A sync client's call goes first on a blocking connection (see `Pool::direct`); an attempt there that
    // may have reached Redis counts as the first. It takes the records left to delete along only once
    // MIN_DELETE_LATER wait: a DEL riding with every call cost it 5-10% of its time.
    let first = match pool.direct_eval(&cmd, MIN_DELETE_LATER) {
        Direct::Done(reply) => {
            reply?;
            pool.delete_later(record);
            return Ok(id);
        }
        Direct::Again => 1,
        Direct::NothingDone => 0,
    };
    let attempts = std::sync::atomic::AtomicUsize::new(first);
    let (cmd, attempts_ref) = (&cmd, &attempts);
    pool.exclusive(true, |mut conn| async move {
        attempts_ref.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        pool.eval_taking(&mut conn, Id::PublishOne, cmd, MIN_DELETE_LATER).await
    })
    .await?;
    if attempts.into_inner() == 1 {
        pool.delete_later(record);
    }
    Ok(id)
}

/// Rounds of one chunk's watched transaction: each lost round means another call wrote the chunk's record
/// between this call's WATCH and its EXEC, and the next round reads what that call handled.
const WATCH_ROUNDS: usize = 16;

/// One publish chunk written as a watched transaction (see [`write_chunk`]): its record, the messages' ids
/// and, in `pipe`, `MULTI` and one HSET per message, in input order. [`ChunkWrite::sealed`] adds the rest of
/// the transaction, so the usual round (nothing of the chunk written yet) sends `pipe` as it is, without a
/// copy of every message.
pub struct ChunkWrite {
    backlog: String,
    record: String,
    ttl_ms: u64,
    front: bool,
    forget: bool,
    ids: Vec<String>,
    pipe: Pipeline,
}

impl ChunkWrite {
    /// An empty chunk of `topic` whose record `rfq:<t>:published:<token>` lives `ttl_ms`; `front`: the
    /// chunk is consumed next; `forget`: the record is deleted once the chunk is known written (a token used
    /// by this call only, not a dedup key's).
    pub fn new(topic: &TopicKeys, token: &str, ttl_ms: u64, front: bool, forget: bool) -> Self {
        let mut pipe = Pipeline::new();
        pipe.cmd("MULTI");
        Self {
            backlog: topic.backlog.clone(),
            record: topic.published(token),
            ttl_ms,
            front,
            forget,
            ids: Vec::new(),
            pipe,
        }
    }

    /// Adds message `id` with its field/value pairs: one HSET, sized for them before it is written (a
    /// growing command would be copied several times over).
    pub fn message<K, V>(&mut self, topic: &TopicKeys, id: String, fields: impl Iterator<Item = (K, V)> + Clone)
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let (pairs, bytes) = fields.clone().fold((0, 0), |(n, b), (k, v)| {
            (n + 1, b + k.as_ref().len() + v.as_ref().len())
        });
        let key = topic.message_arg(&id);
        let mut hset = Cmd::with_capacity(2 + 2 * pairs, "HSET".len() + key.byte_len() + bytes);
        hset.arg("HSET").arg(key);
        for (k, v) in fields {
            hset.arg(k.as_ref()).arg(v.as_ref());
        }
        self.pipe.add_command(hset);
        self.ids.push(id);
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The chunk with the transaction of all its messages ended: the push of every id, the record, `EXEC`.
    fn sealed(mut self) -> Self {
        let mut pipe = std::mem::take(&mut self.pipe);
        self.tail(&mut pipe, 0);
        self.pipe = pipe;
        self
    }

    /// `MULTI`, the messages after the first `done`, their ids onto the backlog, the record, `EXEC` (of a
    /// [`ChunkWrite::sealed`] chunk).
    fn transaction(&self, done: usize) -> std::borrow::Cow<'_, Pipeline> {
        if done == 0 {
            return std::borrow::Cow::Borrowed(&self.pipe);
        }
        let mut pipe = Pipeline::with_capacity(self.len() - done + 4);
        pipe.cmd("MULTI");
        for hset in self.pipe.cmd_iter().skip(1 + done).take(self.len() - done) {
            pipe.add_command(hset.clone());
        }
        self.tail(&mut pipe, done);
        std::borrow::Cow::Owned(pipe)
    }

    /// The end of a transaction that writes the messages after the first `done`.
    fn tail(&self, pipe: &mut Pipeline, done: usize) {
        let ids = &self.ids[done..];
        // The backlog is consumed from its tail: LPUSH in input order, or (front) RPUSH in reverse order,
        // so the chunk is consumed next and still in input order.
        if self.front {
            pipe.cmd("RPUSH")
                .arg(&self.backlog)
                .arg(ids.iter().rev().collect::<Vec<_>>());
        } else {
            pipe.cmd("LPUSH").arg(&self.backlog).arg(ids);
        }
        pipe.cmd("SET")
            .arg(&self.record)
            .arg(self.len())
            .arg("PX")
            .arg(self.ttl_ms);
        pipe.cmd("EXEC");
    }
}

fn server_error(v: &Value) -> Option<Error> {
    match v {
        Value::ServerError(e) => Some(Error::server(e.code(), e.details().unwrap_or(""))),
        _ => None,
    }
}

/// Writes one chunk at most once per record, without Lua, on a connection nobody else uses meanwhile
/// (WATCH is per connection); returns how many messages it wrote.
///
/// Each round: `WATCH record` + `GET record` (k: how many of the chunk's messages earlier calls with this
/// record handled); if k < n, `MULTI`, the HSETs of messages k+1..n, the push of their ids, `SET record n PX
/// ttl`, `EXEC`. EXEC runs only if the record is unchanged since this round's WATCH, which preceded the GET
/// that showed the chunk unwritten; else (nil) the next round reads the record again. So an attempt whose
/// bytes reach Redis late, after a retry on a new connection wrote the chunk, either reads the record and
/// stops or has its EXEC aborted by the retry's SET. MULTI/EXEC is all or nothing: no message hash without
/// its id in the backlog. A command refused while queuing (OOM at maxmemory) aborts the EXEC: nothing is
/// written, and that refusal is the error.
///
/// A record of this call's own (`forget`) may go once this call read the EXEC that wrote the chunk: no attempt
/// of the call comes after, and every earlier attempt watched the record before this one's SET touched it, so
/// a late EXEC of theirs is aborted all the same. Its `DEL` rides ahead of the client's next request
/// ([`Pool::delete_later`]) rather than costing the call a third round trip.
pub async fn write_chunk(pool: &Pool, chunk: ChunkWrite) -> Result<usize> {
    let chunk = &chunk.sealed();
    let n = chunk.len();
    let mut watch = Pipeline::with_capacity(2);
    watch.cmd("WATCH").arg(&chunk.record);
    watch.cmd("GET").arg(&chunk.record);
    let (watch, record) = (&watch, chunk.record.as_str());
    // Repeated after a dropped connection: the next attempt starts from its own WATCH.
    pool.exclusive(true, |mut conn| async move {
        for _ in 0..WATCH_ROUNDS {
            let [watched, done] = take::<2>(Value::Array(pool.send_pipeline(&mut conn, watch).await?), "WATCH")?;
            if let Some(e) = server_error(&watched).or_else(|| server_error(&done)) {
                return Err(e);
            }
            let done = usize::try_from(opt_number(done)?.unwrap_or(0.0) as i64).unwrap_or(0);
            if done >= n {
                let mut unwatch = Pipeline::with_capacity(2);
                unwatch.cmd("UNWATCH");
                if chunk.forget {
                    unwatch.cmd("DEL").arg(record);
                }
                pool.send_pipeline(&mut conn, &unwatch).await?;
                return Ok(0);
            }
            let mut replies = pool.send_pipeline(&mut conn, &chunk.transaction(done)).await?;
            let exec = replies.pop().ok_or_else(|| Error::protocol("no reply to EXEC"))?;
            // A command refused while queuing (OOM, ...) is why EXEC was aborted (EXECABORT).
            if let Some(e) = replies.iter().find_map(server_error).or_else(|| server_error(&exec)) {
                return Err(e);
            }
            match exec {
                Value::Nil => continue, // the record changed since WATCH
                Value::Array(results) => match results.iter().find_map(server_error) {
                    Some(e) => return Err(e),
                    None => {
                        if chunk.forget {
                            pool.delete_later(record.to_string());
                        }
                        return Ok(n - done);
                    }
                },
                other => return Err(unexpected("EXEC", &other)),
            }
        }
        Err(Error::server(
            "ERR",
            &format!("the publish record {record} kept changing under other writers ({WATCH_ROUNDS} rounds)"),
        ))
    })
    .await
}

fn claim_cmd(topics: &[Arc<TopicKeys>], count: usize, lease_ms: u64, moved: &str, owner: &str, token: &str) -> Cmd {
    let mut cmd = scripts::evalsha(Id::Claim, 8 * topics.len());
    for t in topics {
        cmd.arg(&t.eight()[..]);
    }
    cmd.arg(count).arg(lease_ms).arg(moved).arg(owner).arg(token);
    cmd
}

/// Decodes claim-8n's (and resume-6's) flat reply: `now_ms`, then per topic `topic_index, ids, n` (the ids
/// in one space-separated string) and n (position, delivery count) pairs for the ids claimed before.
/// Returns (topic index, id, deliveries), the bodies still to fetch.
fn decode_claim(reply: Value, ntopics: usize) -> Result<Vec<(usize, String, i64)>> {
    let mut items = array(reply)?.into_iter();
    items.next().ok_or_else(|| Error::protocol("claim reply: no time"))?;
    let mut out = Vec::new();
    while let Some(ti) = items.next() {
        let mut next = || items.next().ok_or_else(|| Error::protocol("claim reply: cut short"));
        let ti = int(ti)?;
        if ti < 1 || ti as usize > ntopics {
            return Err(Error::protocol(format!("claim reply names topic {ti} of {ntopics}")));
        }
        let ids = string(next()?)?;
        let first = out.len();
        out.extend(ids.split(' ').map(|id| (ti as usize - 1, id.to_string(), 1)));
        let n = int(next()?)?;
        for _ in 0..n {
            let at = usize::try_from(int(next()?)?).unwrap_or(0);
            let deliveries = int(next()?)?;
            let entry = (at >= 1)
                .then(|| out.get_mut(first + at - 1))
                .flatten()
                .ok_or_else(|| Error::protocol("claim reply: a count for no id"))?;
            entry.2 = deliveries;
        }
    }
    Ok(out)
}

/// The claim's messages with their bodies, fetched in one pipeline. A message whose body is gone
/// (committed or purged by someone else after its id was queued) is committed away, not returned.
async fn with_bodies(
    pool: &Pool,
    topics: &[Arc<TopicKeys>],
    token: &str,
    held: Vec<(usize, String, i64)>,
) -> Result<Vec<Claimed>> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let cmds: Vec<Cmd> = held
        .iter()
        .map(|(ti, id, _)| {
            let key = topics[*ti].message_arg(id);
            let mut cmd = Cmd::with_capacity(2, "HGETALL".len() + key.byte_len());
            cmd.arg("HGETALL").arg(key);
            cmd
        })
        .collect();
    // A sync client's single claim reads its body on a blocking connection (see `Pool::direct`).
    if let [cmd] = cmds.as_slice() {
        if let Direct::Done(body) = pool.direct(&[cmd], 1) {
            let bodies = crate::pool::first_error(body?)?;
            return bodied(pool, token, topics, held, bodies).await;
        }
    }
    let pipes = pipelines(cmds);
    let bodies = pool
        .run(true, |mut conn| {
            let pipes = &pipes;
            async move {
                let mut out = Vec::new();
                for pipe in pipes {
                    out.extend(pool.query_pipe(&mut conn, pipe).await?);
                }
                Ok(out)
            }
        })
        .await?;
    bodied(pool, token, topics, held, bodies).await
}

/// The claimed messages of `held` with their `bodies`; those without one (deleted meanwhile) are committed.
async fn bodied(
    pool: &Pool,
    token: &str,
    topics: &[Arc<TopicKeys>],
    held: Vec<(usize, String, i64)>,
    bodies: Vec<Value>,
) -> Result<Vec<Claimed>> {
    let mut out = Vec::with_capacity(held.len());
    let mut ghosts = Vec::new();
    let claim: Arc<str> = Arc::from(token);
    for ((ti, id, deliveries), body) in held.into_iter().zip(bodies) {
        let fields = pairs(body)?;
        if fields.is_empty() {
            ghosts.push(Held {
                topic: topics[ti].clone(),
                id,
                fence: token.to_string(),
            });
        } else {
            out.push(Claimed {
                topic: ti,
                id,
                deliveries,
                fields,
                claim: claim.clone(),
            });
        }
    }
    if !ghosts.is_empty() {
        commit(pool, &ghosts).await?;
    }
    Ok(out)
}

/// One claim call (no wait): the claim script, then the bodies.
async fn claim_now(
    pool: &Pool,
    topics: &[Arc<TopicKeys>],
    count: usize,
    lease_ms: u64,
    moved: &str,
    owner: &str,
) -> Result<Vec<Claimed>> {
    let token = ids::claim_token();
    let cmd = claim_cmd(topics, count, lease_ms, moved, owner, &token);
    // A claim moves messages: repeating it after a drop could lease messages nobody receives. A sync
    // client's claim goes first on a blocking connection (see `Pool::direct`); when that connection fails
    // after the claim was written, the claim is made the usual way only if it holds nothing.
    let reply = match pool.direct_eval(&cmd, 1) {
        Direct::Done(reply) => reply?,
        Direct::NothingDone => eval_one(pool, false, Id::Claim, &cmd).await?,
        Direct::Again => {
            if claim_holds(pool, topics, &token).await? {
                return Err(Error::new(
                    ErrorKind::Connection,
                    format!(
                        "the connection to Redis at {} dropped after a claim was sent and made: its messages \
                         return to their topics when its lease ends",
                        pool.shown_url()
                    ),
                ));
            }
            eval_one(pool, false, Id::Claim, &cmd).await?
        }
    };
    let held = decode_claim(reply, topics.len())?;
    with_bodies(pool, topics, &token, held).await
}

/// Whether the claim `token` holds messages of any of `topics`: claim-8n writes its record (field `token`
/// of each topic's claims hash) with the messages it takes, in the same script.
async fn claim_holds(pool: &Pool, topics: &[Arc<TopicKeys>], token: &str) -> Result<bool> {
    let mut pipe = Pipeline::with_capacity(topics.len());
    for topic in topics {
        pipe.cmd("HEXISTS").arg(&topic.claims).arg(token);
    }
    Ok(read_pipe(pool, &pipe).await?.iter().any(|r| matches!(r, Value::Int(1))))
}

/// Claims up to `count` messages over `topics` (first topic first). With `block`, waits up to that many
/// seconds for the first message: BLMOVE on a dedicated connection for one topic, polling for several.
/// A non-empty `owner` records the claims in that worker's processing list.
pub async fn claim(
    pool: &Pool,
    topics: &[Arc<TopicKeys>],
    count: usize,
    block: Option<f64>,
    lease_ms: u64,
    owner: &str,
) -> Result<Vec<Claimed>> {
    let first = claim_now(pool, topics, count, lease_ms, "", owner).await?;
    let Some(block) = block else { return Ok(first) };
    if !first.is_empty() {
        return Ok(first);
    }
    if topics.len() == 1 {
        let topic = &topics[0];
        let wait = Duration::from_secs_f64(block);
        let mut blmove = redis::cmd("BLMOVE");
        // Redis reads a timeout under 1 ms as 0, which blocks forever: never send less.
        let timeout = format!("{:.3}", block.max(0.001));
        blmove
            .arg(&topic.backlog)
            .arg(&topic.nextlog)
            .arg("RIGHT")
            .arg("LEFT")
            .arg(timeout);
        let moved = opt_string(pool.blocking(wait, &blmove).await?)?;
        let Some(moved) = moved else { return Ok(Vec::new()) };
        // The moved id is at the nextlog's head without a lease; claim-8n takes it first. Should this
        // call fail, harvest gives the id a lease at first sight, so it is not lost.
        return claim_now(pool, topics, count, lease_ms, &moved, owner).await;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(block);
    let mut pause = POLL_MIN;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(Vec::new());
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(POLL_MAX);
        let got = claim_now(pool, topics, count, lease_ms, "", owner).await?;
        if !got.is_empty() {
            return Ok(got);
        }
    }
}

/// The fence groups of a fenced script's arguments: per run of items with one fence, `fence, k` and (with
/// `with_ids`) the k ids.
fn push_groups(cmd: &mut Cmd, chunk: &[&Held], with_ids: bool) {
    let mut i = 0;
    while i < chunk.len() {
        let fence = &chunk[i].fence;
        let run = chunk[i..].iter().take_while(|h| &h.fence == fence).count();
        cmd.arg(fence).arg(run);
        if with_ids {
            for h in &chunk[i..i + run] {
                cmd.arg(&h.id);
            }
        }
        i += run;
    }
}

/// Groups `items` by topic into chunked calls of `script`; `build` makes one call from a topic and a chunk.
/// Returns the ids the calls accepted, in input order, each once. A call replies with the ids it accepted,
/// or (commit-6n, `refusals`) with how many it accepted and the ids it refused.
async fn fenced(
    pool: &Pool,
    items: &[Held],
    script: Id,
    reverse_chunks: bool,
    idempotent: bool,
    refusals: bool,
    build: impl Fn(&TopicKeys, &[&Held]) -> Cmd,
) -> Result<Vec<String>> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, (Arc<TopicKeys>, Vec<&Held>)> = HashMap::new();
    for item in items {
        let name = item.topic.name.as_str();
        groups
            .entry(name)
            .or_insert_with(|| {
                order.push(name);
                (item.topic.clone(), Vec::new())
            })
            .1
            .push(item);
    }
    let mut cmds = Vec::new();
    for name in &order {
        let (topic, held) = &groups[name];
        let mut chunk_cmds: Vec<Cmd> = held.chunks(pool.opts.chunk_size).map(|c| build(topic, c)).collect();
        if reverse_chunks {
            chunk_cmds.reverse();
        }
        cmds.extend(chunk_cmds);
    }
    let pipes = pipelines(cmds);
    let replies = eval_all(pool, idempotent, script, &pipes).await?;
    // Each chunk with the reply to its call, the chunks in input order.
    let mut reply_iter = replies.into_iter();
    let mut answered: Vec<(&str, &[&Held], Vec<Value>)> = Vec::new();
    for name in &order {
        let (_, held) = &groups[name];
        let chunks: Vec<&[&Held]> = held.chunks(pool.opts.chunk_size).collect();
        let mut chunk_replies = Vec::with_capacity(chunks.len());
        for _ in &chunks {
            chunk_replies.push(array(
                reply_iter.next().ok_or_else(|| Error::protocol("missing reply"))?,
            )?);
        }
        if reverse_chunks {
            chunk_replies.reverse();
        }
        answered.extend(
            chunks
                .into_iter()
                .zip(chunk_replies)
                .map(|(chunk, reply)| (*name, chunk, reply)),
        );
    }
    // The usual case: every call took its whole chunk, and no id was given twice: the result is the input's
    // ids. A commit counts an id given twice once, so one commit call that took all it was given had no
    // id twice; otherwise the ids are checked.
    let whole = |chunk: &[&Held], reply: &[Value]| {
        if refusals {
            reply.len() == 1 && matches!(reply[0], Value::Int(k) if usize::try_from(k) == Ok(chunk.len()))
        } else {
            reply.len() == chunk.len()
        }
    };
    if answered.iter().all(|(_, chunk, reply)| whole(chunk, reply)) {
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let distinct = (refusals && answered.len() == 1)
            || items
                .iter()
                .all(|item| seen.insert((item.topic.name.as_str(), item.id.as_str())));
        if distinct {
            return Ok(items.iter().map(|item| item.id.clone()).collect());
        }
    }
    // Otherwise the replies name the ids; they are mapped back to (topic, id) through the call each came from.
    // The keys borrow the items' strings: nothing is allocated per id.
    let mut done: HashSet<(&str, &str)> = HashSet::with_capacity(items.len());
    for (name, chunk, reply) in answered {
        let mut values = reply.into_iter();
        if refusals {
            let accepted = int(values.next().ok_or_else(|| Error::protocol("commit reply: no count"))?)?;
            let refused: HashSet<String> = values.map(string).collect::<Result<_>>()?;
            let mut taken = 0;
            for h in chunk {
                if !refused.contains(&h.id) && done.insert((name, &h.id)) {
                    taken += 1;
                }
            }
            if taken != accepted {
                return Err(Error::protocol(format!(
                    "commit reply: {accepted} committed, but {taken} ids are not refused"
                )));
            }
        } else {
            let accepted: HashSet<String> = values.map(string).collect::<Result<_>>()?;
            for h in chunk {
                if accepted.contains(&h.id) {
                    done.insert((name, &h.id));
                }
            }
        }
    }
    // Input order, each id once.
    let mut out = Vec::new();
    for item in items {
        if done.remove(&(item.topic.name.as_str(), item.id.as_str())) {
            out.push(item.id.clone());
        }
    }
    Ok(out)
}

/// Deletes messages whose claim is still current (fenced by the claim); returns the ids committed.
pub async fn commit(pool: &Pool, items: &[Held]) -> Result<Vec<String>> {
    // Fenced and idempotent: repeating after a drop is safe.
    fenced(pool, items, Id::Commit, false, true, true, |t, chunk| {
        // Room for the keys and the message keys; the fence groups (usually one) may grow it.
        let message_bytes: usize = chunk.iter().map(|h| t.message_arg(&h.id).byte_len()).sum();
        let mut cmd = scripts::evalsha_sized(Id::Commit, 6 + chunk.len(), 6 + chunk.len() + 3, 512 + message_bytes);
        cmd.arg(&t.nextlog)
            .arg(&t.leases)
            .arg(&t.deliveries)
            .arg(&t.claim_keys()[..]);
        for h in chunk {
            cmd.arg(t.message_arg(&h.id));
        }
        // The ids are the rest of their message keys: not sent twice.
        cmd.arg(t.message_prefix.len());
        push_groups(&mut cmd, chunk, false);
        cmd
    })
    .await
}

/// Renews leases to `lease_ms` from now; returns the ids renewed.
pub async fn extend(pool: &Pool, items: &[Held], lease_ms: u64) -> Result<Vec<String>> {
    fenced(pool, items, Id::Extend, false, true, false, |t, chunk| {
        let mut cmd = scripts::evalsha(Id::Extend, 5);
        cmd.arg(&t.leases)
            .arg(&t.deliveries)
            .arg(&t.claim_keys()[..])
            .arg(lease_ms);
        push_groups(&mut cmd, chunk, true);
        cmd
    })
    .await
}

/// Gives held messages back to the backlog's consume end, in input order (or, with a delay, to the
/// delayed ZSET until `delay_ms` from now); returns the ids released.
pub async fn release(pool: &Pool, items: &[Held], delay_ms: u64) -> Result<Vec<String>> {
    // Each chunk lands in front of the previous one, so the last chunk is sent first.
    fenced(pool, items, Id::Release, true, true, false, |t, chunk| {
        let mut cmd = scripts::evalsha(Id::Release, 8);
        cmd.arg(&t.eight()[..]).arg(delay_ms);
        push_groups(&mut cmd, chunk, true);
        cmd
    })
    .await
}

/// Moves held messages of one topic to the backlog of `dead`, recording `error`; returns the ids moved.
pub async fn dead_letter(pool: &Pool, items: &[Held], dead: &TopicKeys, error: &str) -> Result<Vec<String>> {
    // Not repeated after a drop: a repeat would move nothing and report nothing moved.
    fenced(pool, items, Id::DeadLetter, false, false, false, |t, chunk| {
        let mut cmd = scripts::evalsha(Id::DeadLetter, 8 + 2 * chunk.len());
        cmd.arg(&t.nextlog)
            .arg(&t.leases)
            .arg(&t.deliveries)
            .arg(&dead.backlog)
            .arg(&dead.deliveries)
            .arg(&t.claim_keys()[..]);
        for h in chunk {
            cmd.arg(t.message_arg(&h.id)).arg(dead.message_arg(&h.id));
        }
        cmd.arg(error);
        push_groups(&mut cmd, chunk, true);
        cmd
    })
    .await
}

/// Claims again, under a new token, what `owner` still holds (its processing list).
pub async fn resume(pool: &Pool, topic: &Arc<TopicKeys>, owner: &str, lease_ms: u64) -> Result<Vec<Claimed>> {
    let token = ids::claim_token();
    let mut cmd = scripts::evalsha(Id::Resume, 6);
    cmd.arg(&topic.nextlog)
        .arg(&topic.leases)
        .arg(&topic.deliveries)
        .arg(&topic.claim_keys()[..])
        .arg(owner)
        .arg(lease_ms)
        .arg(&token);
    // Not repeated after a drop: the first attempt may have ended the previous claims.
    let held = decode_claim(eval_one(pool, false, Id::Resume, &cmd).await?, 1)?;
    with_bodies(pool, std::slice::from_ref(topic), &token, held).await
}

/// Requeues expired claims (or, with `all`, every claim); returns their ids.
pub async fn harvest(pool: &Pool, topic: &TopicKeys, all: bool, lease_ms: u64) -> Result<Vec<String>> {
    if all {
        let mut cmd = scripts::evalsha(Id::HarvestAll, 7);
        cmd.arg(&topic.topic_keys()[..]).arg(&topic.claim_keys()[..]);
        return array(eval_one(pool, false, Id::HarvestAll, &cmd).await?)?
            .into_iter()
            .map(string)
            .collect();
    }
    let mut cmd = scripts::evalsha(Id::Harvest, 8);
    cmd.arg(&topic.eight()[..]).arg(lease_ms).arg(STEP_LIMIT);
    let mut out = Vec::new();
    for _ in 0..MAX_STEPS {
        let [requeued, handled] = take::<2>(eval_one(pool, false, Id::Harvest, &cmd).await?, "harvest reply")?;
        for id in array(requeued)? {
            out.push(string(id)?);
        }
        if int(handled)? < STEP_LIMIT as i64 {
            break;
        }
    }
    Ok(out)
}

/// The fields of one message, or None.
pub async fn peek(pool: &Pool, topic: &TopicKeys, id: &str) -> Result<Option<Fields>> {
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(topic.message(id));
    let cmd = &cmd;
    let fields = pairs(
        pool.run(true, |mut conn| async move { pool.query(&mut conn, cmd).await })
            .await?,
    )?;
    Ok((!fields.is_empty()).then_some(fields))
}

pub async fn inspect(
    pool: &Pool,
    topic: &TopicKeys,
    queue: TopicList,
    start: usize,
    count: usize,
) -> Result<Vec<InspectEntry>> {
    let mut cmd = scripts::evalsha(Id::Inspect, 5);
    cmd.arg(topic.list(queue))
        .arg(&topic.leases)
        .arg(&topic.deliveries)
        .arg(&topic.claims)
        .arg(&topic.claim_leases)
        .arg(start)
        .arg(count)
        .arg(&topic.message_prefix);
    let [_now, items] = take::<2>(eval_one(pool, true, Id::Inspect, &cmd).await?, "inspect reply")?;
    array(items)?
        .into_iter()
        .map(|item| {
            let [id, d, at, deadline, body, owner, error] = take::<7>(item, "inspect entry")?;
            let fields = pairs(body)?;
            Ok(InspectEntry {
                id: string(id)?,
                fields: (!fields.is_empty()).then_some(fields),
                deliveries: opt_number(d)?.map_or(0, |d| d as i64),
                claimed_at_ms: opt_number(at)?,
                lease_deadline_ms: opt_number(deadline)?,
                owner: opt_string(owner)?,
                error: opt_string(error)?,
            })
        })
        .collect()
}

pub async fn stats(pool: &Pool, topic: &TopicKeys) -> Result<Stats> {
    let mut cmd = scripts::evalsha(Id::Stats, 8);
    cmd.arg(&topic.eight()[..]);
    let [now, backlog, nextlog, leased, expired, oldest_b, oldest_n, delayed] =
        take::<8>(eval_one(pool, true, Id::Stats, &cmd).await?, "stats reply")?;
    let now_s = int(now)? as f64 / 1000.0;
    let published: Vec<f64> = [opt_string(oldest_b)?, opt_string(oldest_n)?]
        .iter()
        .flatten()
        .filter_map(|id| ids::published_unix_seconds(id))
        .collect();
    let oldest_age = published.into_iter().reduce(f64::min).map(|t| now_s - t);
    Ok(Stats {
        backlog: int(backlog)?,
        nextlog: int(nextlog)?,
        leased: int(leased)?,
        expired: int(expired)?,
        oldest_age,
        delayed: int(delayed)?,
    })
}

/// Deletes every message of one list; returns how many.
pub async fn purge(pool: &Pool, topic: &TopicKeys, queue: TopicList) -> Result<i64> {
    let mut cmd = scripts::evalsha(Id::Purge, 6);
    cmd.arg(topic.list(queue))
        .arg(&topic.leases)
        .arg(&topic.deliveries)
        .arg(&topic.claim_keys()[..])
        .arg(&topic.message_prefix)
        .arg(STEP_LIMIT);
    let mut total = 0;
    // Bounded: at most MAX_STEPS * 100 calls of STEP_LIMIT messages each.
    for _ in 0..MAX_STEPS * 100 {
        let n = int(eval_one(pool, false, Id::Purge, &cmd).await?)?;
        total += n;
        if n != STEP_LIMIT as i64 {
            break;
        }
    }
    Ok(total)
}

/// Every topic with a backlog or nextlog, sorted (SCAN, never KEYS).
pub async fn topics(pool: &Pool) -> Result<Vec<String>> {
    let mut names = std::collections::BTreeSet::new();
    for pattern in ["rfq:*:backlog", "rfq:*:nextlog"] {
        for key in scan_keys(pool, pattern, "list").await? {
            if let Some(name) = topic_of_list_key(&key) {
                names.insert(name.to_string());
            }
        }
    }
    Ok(names.into_iter().collect())
}

pub async fn ping(pool: &Pool) -> Result<bool> {
    let cmd = &redis::cmd("PING");
    pool.run(true, |mut conn| async move { pool.query(&mut conn, cmd).await })
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::common::packed;

    #[test]
    fn claim_command_layout() {
        let topics = vec![Arc::new(TopicKeys::new("a")), Arc::new(TopicKeys::new("b"))];
        let args = packed(&claim_cmd(&topics, 10, 30_000, "", "w1", "ctoken"));
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], Id::Claim.script().sha);
        assert_eq!(args[2], "16");
        assert_eq!(
            &args[3..11],
            [
                "rfq:a:backlog",
                "rfq:a:nextlog",
                "rfq:a:leases",
                "rfq:a:deliveries",
                "rfq:a:delayed",
                "rfq:a:claims",
                "rfq:a:claim_leases",
                "rfq:a:inflight"
            ]
        );
        assert_eq!(args[11], "rfq:b:backlog");
        assert_eq!(&args[19..], ["10", "30000", "", "w1", "ctoken"]);
    }

    #[test]
    fn chunk_transaction_layout() {
        let topic = TopicKeys::new("t");
        let args = |front: bool, done: usize| -> Vec<Vec<String>> {
            let mut write = ChunkWrite::new(&topic, "a", 120_000, front, true);
            for id in ["a", "b", "c"] {
                write.message(&topic, id.into(), [("k", id)].into_iter());
            }
            write.sealed().transaction(done).cmd_iter().map(packed).collect()
        };
        let hset = |id: &str| vec!["HSET".to_string(), format!("rfq:t:message:{id}"), "k".into(), id.into()];
        let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            args(false, 0),
            vec![
                owned(&["MULTI"]),
                hset("a"),
                hset("b"),
                hset("c"),
                owned(&["LPUSH", "rfq:t:backlog", "a", "b", "c"]),
                owned(&["SET", "rfq:t:published:a", "3", "PX", "120000"]),
                owned(&["EXEC"]),
            ]
        );
        // Front, two messages handled earlier: only the last is written, and the record still says 3.
        assert_eq!(
            args(true, 2),
            vec![
                owned(&["MULTI"]),
                hset("c"),
                owned(&["RPUSH", "rfq:t:backlog", "c"]),
                owned(&["SET", "rfq:t:published:a", "3", "PX", "120000"]),
                owned(&["EXEC"]),
            ]
        );
        assert_eq!(
            owned(&["RPUSH", "rfq:t:backlog", "c", "b", "a"]),
            args(true, 0)[4],
            "front: reversed, so the chunk is consumed next in input order"
        );
    }

    #[test]
    fn claim_reply_decoding() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        // topic 2: two ids, the second claimed before (delivery 3); topic 1: one id
        let reply = Value::Array(vec![
            Value::Int(1),
            Value::Int(2),
            b("id1 id2"),
            Value::Int(1),
            Value::Int(2),
            Value::Int(3),
            Value::Int(1),
            b("id3"),
            Value::Int(0),
        ]);
        let got = decode_claim(reply, 2).unwrap();
        assert_eq!(
            got,
            vec![(1, "id1".into(), 1), (1, "id2".into(), 3), (0, "id3".into(), 1)]
        );
        let bad_topic = Value::Array(vec![Value::Int(1), Value::Int(3), b("x"), Value::Int(0)]);
        assert!(decode_claim(bad_topic, 2).is_err());
        let cut_short = Value::Array(vec![Value::Int(1), Value::Int(1), b("x"), Value::Int(1), Value::Int(1)]);
        assert!(decode_claim(cut_short, 2).is_err());
        let no_such_id = Value::Array(vec![
            Value::Int(1),
            Value::Int(1),
            b("x"),
            Value::Int(1),
            Value::Int(2),
            Value::Int(2),
        ]);
        assert!(decode_claim(no_such_id, 2).is_err());
    }

    #[test]
    fn fence_groups() {
        let t = Arc::new(TopicKeys::new("a"));
        let held = |id: &str, fence: &str| Held {
            topic: t.clone(),
            id: id.into(),
            fence: fence.into(),
        };
        let items = [held("1", "c1"), held("2", "c1"), held("3", ""), held("4", "c1")];
        let refs: Vec<&Held> = items.iter().collect();
        let mut cmd = redis::cmd("X");
        push_groups(&mut cmd, &refs, true);
        assert_eq!(packed(&cmd)[1..], ["c1", "2", "1", "2", "", "1", "3", "c1", "1", "4"]);
        let mut cmd = redis::cmd("X");
        push_groups(&mut cmd, &refs, false);
        assert_eq!(packed(&cmd)[1..], ["c1", "2", "", "1", "c1", "1"]);
    }
}
