--[[ rfq claim: lease up to COUNT messages from one or more topics, in priority order.

Input:
  KEYS[5i-4..5i]  for topic i (1-based, highest priority first): rfq:<t>:backlog, rfq:<t>:nextlog,
                  rfq:<t>:leases, rfq:<t>:deliveries, rfq:<t>:delayed
  ARGV[1]         count: the most messages to return, over all topics
  ARGV[2]         lease in milliseconds
  ARGV[3]         an id that the caller already moved from topic 1's backlog to the head of its
                  nextlog with BLMOVE (a blocking claim), or '' for none; it is leased first
  ARGV[4]         owner: the name of the claiming worker's processing list, or '' for none
  ARGV[5..]       rfq:<t>:message: (the message key prefix) for each topic, in KEYS order

Output: one flat list { now_ms, then per message: topic_index, id, deliveries, nfields, f1, v1, ...,
f<nfields>, v<nfields> }, oldest first per topic.

First, delayed messages that are due (a delayed release, see release-5) move to their backlog's
consume end, up to 1000 per topic. Each claimed id then moves from the backlog's tail to the
nextlog's head (what rfq's BRPOPLPUSH does), gets a lease deadline of now + lease (Redis TIME) in the
leases ZSET, and its record in the deliveries HASH (see the prelude) becomes '<count> <now>', or
'<count> <now> <owner>' with an owner: its delivery count goes up by one, and that count is the
fencing token of this claim. An id whose message hash is gone is dropped from the nextlog rather than
returned empty.

Speed: ids move in rounds of up to 1000 with one LRANGE + LTRIM + LPUSH (the same end state as one
LMOVE per id, since the script is atomic), and each round's records and deadlines are read and
written with one HMGET, one HSET and one ZADD: per message only the HGETALL of its body remains. The
reply is flat because Redis builds each nested reply list on its own, at a cost per list.
]]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', KEYS[3], '')
local count = tonumber(ARGV[1])
local lease_ms = tonumber(ARGV[2])
local moved = ARGV[3]
local owner = ARGV[4]
local ntopics = #KEYS / 5
local now = now_ms()
local out, nout, taken = { now }, 1, 0
-- The record of a claim made now, after its count; a first claim's record is the same for every id.
local claim_tail = ' ' .. now .. (owner ~= '' and ' ' .. owner or '')
local first_claim = '1' .. claim_tail
local deadline = tostring(now + lease_ms)
-- Redis before 7.2 fills a new hash or sorted set as a listpack one field at a time, each insert
-- scanning all before it (quadratic up to 512 fields). A field longer than 64 bytes makes it a hash
-- table (skiplist) at once, so large rounds write this one (65 spaces: no id has whitespace) first
-- and delete it right after.
local PRESIZE = string.rep(' ', 65)

-- Leases ids (oldest first, at most 1000) that are already at the head of topic ti's nextlog.
local function lease(ti, ids)
  local k = 5 * ti - 4
  local nextlog, leases, deliveries = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local prefix = ARGV[4 + ti]
  local records = {}
  if redis.call('EXISTS', deliveries) == 1 then
    records = redis.call('HMGET', deliveries, unpack(ids))
  end
  local presize = #ids > 64
  local fields, deadlines, n = {}, {}, 0
  if presize then
    fields[1], fields[2], deadlines[1], deadlines[2], n = PRESIZE, '', '0', PRESIZE, 2
  end
  for i = 1, #ids do
    local id = ids[i]
    local body = redis.call('HGETALL', prefix .. id)
    local nbody = #body
    if nbody == 0 then
      -- a ghost: committed or purged by someone else after its id was queued
      redis.call('LREM', nextlog, 1, id)
      redis.call('ZREM', leases, id)
      forget(deliveries, id)
    else
      local d, record = 1, first_claim
      if records[i] then
        local c, _, _, err = parse_record(records[i])
        d = (tonumber(c) or 0) + 1
        record = d .. claim_tail .. (err and '\n' .. err or '')
      end
      fields[n + 1], fields[n + 2], deadlines[n + 1], deadlines[n + 2] = id, record, deadline, id
      n = n + 2
      out[nout + 1], out[nout + 2], out[nout + 3], out[nout + 4] = ti, id, d, nbody / 2
      nout = nout + 4
      for j = 1, nbody do
        out[nout + j] = body[j]
      end
      nout = nout + nbody
      taken = taken + 1
    end
  end
  if n > 0 then
    redis.call('HSET', deliveries, unpack(fields, 1, n))
    redis.call('ZADD', leases, unpack(deadlines, 1, n))
  end
  if presize then
    redis.call('HDEL', deliveries, PRESIZE)
    redis.call('ZREM', leases, PRESIZE)
  end
end

for ti = 1, ntopics do
  local k = 5 * ti - 4
  promote(KEYS[k], KEYS[k + 4], now, 1000)
end

if moved ~= '' and redis.call('LPOS', KEYS[2], moved) then
  lease(1, { moved })
end
for ti = 1, ntopics do
  local backlog, nextlog = KEYS[5 * ti - 4], KEYS[5 * ti - 3]
  while taken < count do
    local n = math.min(count - taken, 1000)
    local round = redis.call('LRANGE', backlog, -n, -1)
    if #round == 0 then
      break
    end
    redis.call('LTRIM', backlog, 0, -#round - 1)
    local ids = {}
    for i = #round, 1, -1 do
      ids[#ids + 1] = round[i] -- the tail is the oldest
    end
    redis.call('LPUSH', nextlog, unpack(ids))
    lease(ti, ids)
    if #round < n then
      break
    end
  end
end
return out
