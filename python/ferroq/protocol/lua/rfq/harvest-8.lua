--[[ rfq safe harvest: requeue only claims whose lease has expired, and delayed messages now due.

Input:
  KEYS[1..8]  rfq:<topic>:backlog, :nextlog, :leases, :deliveries, :delayed, :claims, :claim_leases,
              :inflight
  ARGV[1]     lease in milliseconds given to nextlog ids that nothing holds
  ARGV[2]     limit: the most expired claims and per-id leases (and, separately, due delayed ids)
              handled by this call (the caller repeats while it is reached)

Output: { requeued ids (oldest deadline first), max(expired claims and leases handled, due delayed ids moved) }

1. Each expired claim: its ids still in the nextlog go back to the backlog's tail (consumed next), each
   with its claim counted as ended in its deliveries record; an id no longer in the nextlog (a plain rfq
   consumer committed it, or it was purged) loses its record. The claim's records, lease and in-flight
   entries go (this is how a retired worker's processing list is taken over).
2. Each expired per-id lease (a claim of the previous layout, or a first-sight lease) the same way, per id.
3. Delayed ids that are due move to the backlog's consume end (they are not in the reply).
4. Ids in the nextlog that nothing holds (claimed by a plain rfq consumer, or moved by a blocking claim
   that did not finish) get a per-id lease of ARGV[1] at first sight, so they are requeued only when that
   expires. The nextlog is read only when it holds more ids than are held.
]]
local backlog, nextlog, leases, deliveries, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local claims, claim_leases, inflight = KEYS[6], KEYS[7], KEYS[8]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', leases, '')
local limit = tonumber(ARGV[2])
local now = now_ms()
local requeued = {}

local expired_claims = redis.call('ZRANGEBYSCORE', claim_leases, '-inf', now, 'LIMIT', 0, limit)
for _, token in ipairs(expired_claims) do
  local ids = words(select(3, parse_claim(redis.call('HGET', claims, token) or '0 -')))
  for _, id in ipairs(ids) do
    if redis.call('LREM', nextlog, -1, id) > 0 then
      end_claim(deliveries, id)
      redis.call('RPUSH', backlog, id)
      requeued[#requeued + 1] = id
    else
      forget(deliveries, id)
    end
  end
  call_in_slices('SREM', inflight, ids, 1, #ids)
  redis.call('HDEL', claims, token, token .. ':d')
  redis.call('ZREM', claim_leases, token)
end

local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  redis.call('ZREM', leases, id)
  if redis.call('LREM', nextlog, -1, id) > 0 then
    local record = redis.call('HGET', deliveries, id)
    if record then
      redis.call('HSET', deliveries, id, unclaimed(record))
    end
    redis.call('RPUSH', backlog, id)
    requeued[#requeued + 1] = id
  else
    forget(deliveries, id)
  end
end
local promoted = promote(backlog, delayed, now, limit)
if redis.call('LLEN', nextlog) > redis.call('SCARD', inflight) + redis.call('ZCARD', leases) then
  local deadline = now + tonumber(ARGV[1])
  local all = redis.call('LRANGE', nextlog, 0, -1)
  for first = 1, #all, 1000 do
    local last = math.min(first + 999, #all)
    local held = redis.call('SMISMEMBER', inflight, unpack(all, first, last))
    for i = first, last do
      if held[i - first + 1] == 0 then
        redis.call('ZADD', leases, 'NX', deadline, all[i])
      end
    end
  end
end
return { requeued, math.max(#expired_claims + #expired, promoted) }
