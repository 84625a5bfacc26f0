--[[ rfq stats: queue lengths, leases and the ids at the consume end, read in one step.

Input:
  KEYS[1]   rfq:<topic>:backlog
  KEYS[2]   rfq:<topic>:nextlog
  KEYS[3]   rfq:<topic>:leases
  KEYS[4]   rfq:<topic>:deliveries (unused; declared so every side key of the topic is named)
  KEYS[5]   rfq:<topic>:delayed

Output: { now_ms, backlog length, nextlog length, leases, expired leases,
          oldest backlog id|false, oldest nextlog id|false, delayed messages }
The callers derive the oldest message's age from the publish time inside those ids.
]]
local backlog, nextlog, leases, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local now = now_ms()
return {
  now,
  redis.call('LLEN', backlog),
  redis.call('LLEN', nextlog),
  redis.call('ZCARD', leases),
  redis.call('ZCOUNT', leases, '-inf', now),
  redis.call('LINDEX', backlog, -1),
  redis.call('LINDEX', nextlog, -1),
  redis.call('ZCARD', delayed),
}
