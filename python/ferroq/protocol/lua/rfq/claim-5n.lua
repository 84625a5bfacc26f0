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
-- Per topic: the ZADD (deadline, id) and HSET (id:at, now [, id:owner, owner]) arguments, sent once per
-- topic at the end.
local deadlines, claimed_at = {}, {}

local function lease(ti, id)
  local k = 5 * ti - 4
  local nextlog, leases, deliveries = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local body = redis.call('HGETALL', ARGV[4 + ti] .. id)
  if #body == 0 then
    redis.call('LREM', nextlog, 1, id)
    redis.call('ZREM', leases, id)
    forget(deliveries, id)
    return
  end
  local d = redis.call('HINCRBY', deliveries, id, 1)
  local dl, at = deadlines[ti], claimed_at[ti]
  dl[#dl + 1], dl[#dl + 2] = now + lease_ms, id
  at[#at + 1], at[#at + 2] = id .. ':at', now
  if owner ~= '' then
    at[#at + 1], at[#at + 2] = id .. ':owner', owner
  end
  out[#out + 1] = { ti, id, d, body }
end

for ti = 1, ntopics do
  deadlines[ti], claimed_at[ti] = {}, {}
  local k = 5 * ti - 4
  promote(KEYS[k], KEYS[k + 4], now, 1000)
end

if moved ~= '' and redis.call('LPOS', KEYS[2], moved) then
  lease(1, moved)
end
for ti = 1, ntopics do
  local k = 5 * ti - 4
  while #out < count do
    local id = redis.call('LMOVE', KEYS[k], KEYS[k + 1], 'RIGHT', 'LEFT')
    if not id then
      break
    end
    lease(ti, id)
  end
end
for ti = 1, ntopics do
  local k = 5 * ti - 4
  call_in_slices('ZADD', KEYS[k + 2], deadlines[ti], 1, #deadlines[ti])
  call_in_slices('HSET', KEYS[k + 3], claimed_at[ti], 1, #claimed_at[ti])
end
return { now, out }
