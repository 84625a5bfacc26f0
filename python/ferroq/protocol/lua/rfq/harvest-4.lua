--[[ rfq safe harvest: requeue only claims whose lease has expired.

Input:
  KEYS[1]   rfq:<topic>:backlog
  KEYS[2]   rfq:<topic>:nextlog
  KEYS[3]   rfq:<topic>:leases
  KEYS[4]   rfq:<topic>:deliveries
  ARGV[1]   lease in milliseconds given to nextlog ids that have none
  ARGV[2]   limit: the most expired leases handled by this call (the caller repeats while it is reached)

Output: { requeued ids (oldest deadline first), number of expired leases handled }

1. Each expired lease: if its id is still in the nextlog it goes back to the backlog's tail (consumed
   next) and keeps its delivery count; if not (a plain rfq consumer committed it, or it was purged),
   its side entries are dropped.
2. Ids in the nextlog without a lease (claimed by a plain rfq consumer, or moved by a blocking claim
   that did not finish) get a lease of ARGV[1] at first sight, so they are requeued only when that
   expires. The nextlog is scanned only when it holds more ids than there are leases.
]]
local backlog, nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local requeued = {}
for _, id in ipairs(expired) do
  redis.call('ZREM', leases, id)
  if redis.call('LREM', nextlog, -1, id) > 0 then
    redis.call('HDEL', deliveries, id .. ':at')
    redis.call('RPUSH', backlog, id)
    requeued[#requeued + 1] = id
  else
    redis.call('HDEL', deliveries, id, id .. ':at')
  end
end
if redis.call('LLEN', nextlog) > redis.call('ZCARD', leases) then
  local deadline = now + tonumber(ARGV[1])
  for _, id in ipairs(redis.call('LRANGE', nextlog, 0, -1)) do
    redis.call('ZADD', leases, 'NX', deadline, id)
  end
end
return { requeued, #expired }
