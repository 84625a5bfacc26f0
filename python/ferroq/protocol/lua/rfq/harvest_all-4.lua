--[[ rfq blind harvest (compatibility): move the whole nextlog back to the backlog, as rfq does.

Unsafe while consumers run: messages still being processed are delivered again. Kept for
operators who know every consumer is stopped.

Input:
  KEYS[1]   rfq:<topic>:backlog
  KEYS[2]   rfq:<topic>:nextlog
  KEYS[3]   rfq:<topic>:leases
  KEYS[4]   rfq:<topic>:deliveries

Output: the ids moved, in the order moved. Like rfq, each goes from the nextlog's tail to the
backlog's head (consumed after everything already waiting). Leases go, and records lose their claim and
owner; delivery counts stay.
]]
local backlog, nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local out = {}
while true do
  local id = redis.call('RPOPLPUSH', nextlog, backlog)
  if not id then
    break
  end
  redis.call('ZREM', leases, id)
  local record = redis.call('HGET', deliveries, id)
  if record then
    redis.call('HSET', deliveries, id, unclaimed(record))
  end
  out[#out + 1] = id
end
return out
