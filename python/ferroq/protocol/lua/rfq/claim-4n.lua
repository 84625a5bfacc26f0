--[[ rfq claim: lease up to COUNT messages from one or more topics, in priority order.

Input:
  KEYS[4i-3..4i]  for topic i (1-based, highest priority first):
                  rfq:<t>:backlog, rfq:<t>:nextlog, rfq:<t>:leases, rfq:<t>:deliveries
  ARGV[1]         count: the most messages to return, over all topics
  ARGV[2]         lease in milliseconds
  ARGV[3]         an id that the caller already moved from topic 1's backlog to the head of its
                  nextlog with BLMOVE (a blocking claim), or '' for none; it is leased first
  ARGV[4..]       rfq:<t>:message: (the message key prefix) for each topic, in KEYS order

Output: { now_ms, { {topic_index, id, deliveries, {f1, v1, ...}}, ... } }, oldest first per topic.

Each claimed id moves from the backlog's tail to the nextlog's head (what rfq's BRPOPLPUSH does),
gets a lease deadline of now + lease (Redis TIME) in the leases ZSET, and its delivery count in the
deliveries HASH goes up by one; the count is the fencing token of this claim. An id whose message
hash is gone is dropped from the nextlog rather than returned empty.

Speed: ids move in rounds of up to 1000 with one LRANGE + LTRIM + LPUSH (the same end state as one
LMOVE per id, since the script is atomic), and each round's counts, claim times and deadlines are read
and written with one HMGET, one HSET and one ZADD: per message only the HGETALL of its body remains.
]]
local count = tonumber(ARGV[1])
local lease_ms = tonumber(ARGV[2])
local moved = ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}

-- Leases ids (oldest first, at most 1000) that are already at the head of topic ti's nextlog.
local function lease(ti, ids)
  local k = 4 * ti - 3
  local nextlog, leases, deliveries = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local prefix = ARGV[3 + ti]
  local counts = redis.call('HMGET', deliveries, unpack(ids))
  local side, deadlines = {}, {}
  for i, id in ipairs(ids) do
    local body = redis.call('HGETALL', prefix .. id)
    if #body == 0 then
      -- a ghost: committed or purged by someone else after its id was queued
      redis.call('LREM', nextlog, 1, id)
      redis.call('ZREM', leases, id)
      redis.call('HDEL', deliveries, id, id .. ':at')
    else
      local d = (tonumber(counts[i]) or 0) + 1
      side[#side + 1], side[#side + 2], side[#side + 3], side[#side + 4] = id, d, id .. ':at', now
      deadlines[#deadlines + 1], deadlines[#deadlines + 2] = now + lease_ms, id
      out[#out + 1] = { ti, id, d, body }
    end
  end
  if #side > 0 then
    redis.call('HSET', deliveries, unpack(side))
    redis.call('ZADD', leases, unpack(deadlines))
  end
end

if moved ~= '' and redis.call('LPOS', KEYS[2], moved) then
  lease(1, { moved })
end
for ti = 1, #KEYS / 4 do
  local backlog, nextlog = KEYS[4 * ti - 3], KEYS[4 * ti - 2]
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
