--[[ rfq safe harvest: requeue only claims whose lease has expired, and delayed messages now due.

Input:
  KEYS[1]   rfq:<topic>:backlog
  KEYS[2]   rfq:<topic>:nextlog
  KEYS[3]   rfq:<topic>:leases
  KEYS[4]   rfq:<topic>:deliveries
  KEYS[5]   rfq:<topic>:delayed
  ARGV[1]   lease in milliseconds given to nextlog ids that have none
  ARGV[2]   limit: the most expired leases (and, separately, due delayed ids) handled by this call
            (the caller repeats while it is reached)

Output: { requeued ids (oldest deadline first), max(number of expired leases handled, due delayed ids moved) }

1. Each expired lease: if its id is still in the nextlog it goes back to the backlog's tail (consumed
   next), and its record loses the claim and owner but keeps its delivery count (this is how a
   retired worker's processing list is taken over); if not (a plain rfq consumer committed it, or it
   was purged), its record is dropped.
2. Delayed ids that are due move to the backlog's consume end (they are not in the reply).
3. Ids in the nextlog without a lease (claimed by a plain rfq consumer, or moved by a blocking claim
   that did not finish) get a lease of ARGV[1] at first sight, so they are requeued only when that
   expires. The nextlog is scanned only when it holds more ids than there are leases.
]]
local backlog, nextlog, leases, deliveries, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', leases, '')
local limit = tonumber(ARGV[2])
local now = now_ms()
local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, limit)
local requeued = {}
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
if redis.call('LLEN', nextlog) > redis.call('ZCARD', leases) then
  local deadline = now + tonumber(ARGV[1])
  for _, id in ipairs(redis.call('LRANGE', nextlog, 0, -1)) do
    redis.call('ZADD', leases, 'NX', deadline, id)
  end
end
return { requeued, math.max(#expired, promoted) }
