--[[ rfq harvest_all: rfq's blind harvest, every claim requeued, work in progress included.

Unsafe while consumers run: messages still being processed are delivered again. Kept for
operators who know every consumer is stopped.

Input:
  KEYS[1..7]  rfq:<topic>:backlog, :nextlog, :leases, :deliveries, :claims, :claim_leases, :inflight

Output: the ids moved, in the order moved. Like rfq, each goes from the nextlog's tail to the backlog's
head (consumed after everything already waiting). Every claim ends: its records, lease and in-flight
entries go, and each id's claim counts as ended in its deliveries record; per-id leases go, and records
of the previous layout lose their claim and owner (the delivery count stays).
]]
local backlog, nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local claims, claim_leases, inflight = KEYS[5], KEYS[6], KEYS[7]
local out = {}
while true do
  local id = redis.call('RPOPLPUSH', nextlog, backlog)
  if not id then
    break
  end
  redis.call('ZREM', leases, id)
  if redis.call('SREM', inflight, id) == 1 then
    end_claim(deliveries, id)
  else
    local record = redis.call('HGET', deliveries, id)
    if record then
      redis.call('HSET', deliveries, id, unclaimed(record))
    end
  end
  out[#out + 1] = id
end
redis.call('DEL', claims, claim_leases, inflight)
return out
