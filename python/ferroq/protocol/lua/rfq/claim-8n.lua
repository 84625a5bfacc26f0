--[[ rfq claim: lease up to COUNT messages from one or more topics, in priority order, as one claim.

Input:
  KEYS[8i-7..8i]  for topic i (1-based, highest priority first): rfq:<t>:backlog, rfq:<t>:nextlog,
                  rfq:<t>:leases, rfq:<t>:deliveries, rfq:<t>:delayed, rfq:<t>:claims,
                  rfq:<t>:claim_leases, rfq:<t>:inflight
  ARGV[1]         count: the most messages to return, over all topics
  ARGV[2]         lease in milliseconds
  ARGV[3]         an id that the caller already moved from topic 1's backlog to the head of its
                  nextlog with BLMOVE (a blocking claim), or '' for none; it is taken first
  ARGV[4]         owner: the name of the claiming worker's processing list, or '' for none
  ARGV[5]         the claim's token, made by the caller (it has a letter, so it is never a count)

Output: one flat list { now_ms, then per topic that gave messages: topic_index, its ids (oldest first,
space-separated, one string), n, then n pairs of position (1-based, in those ids) and delivery count for
the ids claimed before; every other id has delivery count 1 }.
The caller fetches the bodies (HGETALL rfq:<t>:message:<id>, pipelined); an empty one is a ghost (the
message was committed or purged by someone else after its id was queued), which the caller commits away.

A claim writes one record per topic, not per message: field <token> of rfq:<t>:claims becomes
'<now_ms> <owner or -> <id> <id> ...' (the ids in claim order), field <token>:d the ids among them that
have a record in the deliveries HASH (only when there are any), and member <token> of
rfq:<t>:claim_leases gets the deadline now + lease. Each id joins rfq:<t>:inflight. A message's delivery count is its record's count (claims that ended without a
commit) + 1; a first claim writes no record.

Fence against rfq's blind harvest (RPOPLPUSH nextlog backlog moves held ids back without a trace): SADD
reports how many ids were new to the in-flight set. Fewer than the round's ids means some are still
listed by an open claim: those ids are taken out of that claim, so its holder's commit is refused.
An id whose record still has an old-layout claim (count, claim time, owner) ends that claim the same way.
]]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', KEYS[3], '')
local count = tonumber(ARGV[1])
local lease_ms = tonumber(ARGV[2])
local moved, token = ARGV[3], ARGV[5]
local owner = ARGV[4] ~= '' and ARGV[4] or '-'
local ntopics = #KEYS / 8
local now = now_ms()
local taken = 0
-- Per topic: the claim's ids in claim order, those with a deliveries record, and (position, count) pairs.
local held, recorded, counts = {}, {}, {}

-- Takes ids (oldest first, at most 1000) that are already at the head of topic ti's nextlog.
local function take(ti, ids)
  local k = 8 * ti - 8
  local leases, deliveries = KEYS[k + 3], KEYS[k + 4]
  local claims, claim_leases, inflight = KEYS[k + 6], KEYS[k + 7], KEYS[k + 8]
  local list = held[ti]
  if not list then
    list, recorded[ti], counts[ti] = {}, {}, {}
    held[ti] = list
  end
  if redis.call('SADD', inflight, unpack(ids)) < #ids then
    take_from_claims(claims, claim_leases, deliveries, ids, token)
  end
  local base = #list
  for i = 1, #ids do
    list[base + i] = ids[i]
  end
  taken = taken + #ids
  if redis.call('EXISTS', deliveries) == 1 then
    local records = redis.call('HMGET', deliveries, unpack(ids))
    local ended, nended = {}, 0
    local rec, cnt = recorded[ti], counts[ti]
    for i = 1, #ids do
      local v = records[i]
      if v then
        local c, at = parse_record(v)
        if at then -- an old-layout claim, requeued without ending it: it ends now
          ended[nended + 1], ended[nended + 2] = ids[i], unclaimed(v)
          nended = nended + 2
        end
        rec[#rec + 1] = ids[i]
        cnt[#cnt + 1], cnt[#cnt + 2] = base + i, (tonumber(c) or 0) + 1
      end
    end
    if nended > 0 then
      redis.call('HSET', deliveries, unpack(ended, 1, nended))
    end
  end
  if redis.call('EXISTS', leases) == 1 then
    redis.call('ZREM', leases, unpack(ids)) -- per-id leases: old-layout claims, first-sight leases
  end
end

for ti = 1, ntopics do
  local k = 8 * ti - 8
  promote(KEYS[k + 1], KEYS[k + 5], now, 1000)
end

if moved ~= '' and redis.call('LPOS', KEYS[2], moved) then
  take(1, { moved })
end
for ti = 1, ntopics do
  local backlog, nextlog = KEYS[8 * ti - 7], KEYS[8 * ti - 6]
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
    take(ti, ids)
    if #round < n then
      break
    end
  end
end
local out = { now }
for ti = 1, ntopics do
  local list = held[ti]
  if list then
    local k = 8 * ti - 8
    local ids = table.concat(list, ' ')
    redis.call('HSET', KEYS[k + 6], token, now .. ' ' .. owner .. ' ' .. ids)
    if #recorded[ti] > 0 then
      redis.call('HSET', KEYS[k + 6], token .. ':d', table.concat(recorded[ti], ' '))
    end
    redis.call('ZADD', KEYS[k + 7], now + lease_ms, token)
    local n = #out
    out[n + 1], out[n + 2], out[n + 3] = ti, ids, #counts[ti] / 2
    for i, v in ipairs(counts[ti]) do
      out[n + 3 + i] = v
    end
  end
end
return out
