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

Output: { now_ms, { {topic_index, id, deliveries, {f1, v1, ...}}, ... } }, oldest first per topic.

First, delayed messages that are due (a delayed release, see release-5) move to their backlog's
consume end, up to 1000 per topic. Each claimed id then moves from the backlog's tail to the
nextlog's head (what rfq's BRPOPLPUSH does), gets a lease deadline of now + lease (Redis TIME) in the
leases ZSET, and its delivery count in the deliveries HASH goes up by one; the count is the fencing
token of this claim. With an owner, the deliveries HASH also records <id>:owner = owner. An id whose
message hash is gone is dropped from the nextlog rather than returned empty.

Speed: ids move in rounds of up to 1000 with one LRANGE + LTRIM + LPUSH (the same end state as one
LMOVE per id, since the script is atomic), and each round's counts, claim times, owners and deadlines
are read and written with one HMGET, one HSET and one ZADD: per message only the HGETALL of its body
remains.
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
local out = {}

-- Leases ids (oldest first, at most 1000) that are already at the head of topic ti's nextlog.
local function lease(ti, ids)
  local k = 5 * ti - 4
  local nextlog, leases, deliveries = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local prefix = ARGV[4 + ti]
  local counts = redis.call('HMGET', deliveries, unpack(ids))
  local side, deadlines = {}, {}
  for i, id in ipairs(ids) do
    local body = redis.call('HGETALL', prefix .. id)
    if #body == 0 then
      -- a ghost: committed or purged by someone else after its id was queued
      redis.call('LREM', nextlog, 1, id)
      redis.call('ZREM', leases, id)
      forget(deliveries, id)
    else
      local d = (tonumber(counts[i]) or 0) + 1
      local n = #side
      side[n + 1], side[n + 2], side[n + 3], side[n + 4] = id, d, id .. ':at', now
      if owner ~= '' then
        side[n + 5], side[n + 6] = id .. ':owner', owner
      end
      deadlines[#deadlines + 1], deadlines[#deadlines + 2] = now + lease_ms, id
      out[#out + 1] = { ti, id, d, body }
    end
  end
  if #side > 0 then
    redis.call('HSET', deliveries, unpack(side))
    redis.call('ZADD', leases, unpack(deadlines))
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
  while #out < count do
    local n = math.min(count - #out, 1000)
    local taken = redis.call('LRANGE', backlog, -n, -1)
    if #taken == 0 then
      break
    end
    redis.call('LTRIM', backlog, 0, -#taken - 1)
    local ids = {}
    for i = #taken, 1, -1 do
      ids[#ids + 1] = taken[i] -- the tail is the oldest
    end
    redis.call('LPUSH', nextlog, unpack(ids))
    lease(ti, ids)
    if #taken < n then
      break
    end
  end
end
return { now, out }
