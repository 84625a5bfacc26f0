--[[ rfq stats: the counts of a topic, in one call.

Input:
  KEYS[1..8]  rfq:<topic>:backlog, :nextlog, :leases, :deliveries (unused; declared so every side key of
              the topic is named), :delayed, :claims, :claim_leases, :inflight

Output: { now_ms, backlog length, nextlog length, leased messages, messages whose lease expired,
          oldest backlog id|false, oldest nextlog id|false, delayed messages }
Leased: the ids held by claims plus per-id leases. Expired: the ids of claims whose lease has expired
(read per expired claim) plus expired per-id leases. The callers derive the oldest message's age from the
publish time inside those ids.
]]
local backlog, nextlog, leases, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local claims, claim_leases, inflight = KEYS[6], KEYS[7], KEYS[8]
local now = now_ms()
local expired = redis.call('ZCOUNT', leases, '-inf', now)
for _, token in ipairs(redis.call('ZRANGEBYSCORE', claim_leases, '-inf', now)) do
  local v = redis.call('HGET', claims, token)
  if v then
    expired = expired + #words(select(3, parse_claim(v)))
  end
end
return {
  now,
  redis.call('LLEN', backlog),
  redis.call('LLEN', nextlog),
  redis.call('ZCARD', leases) + redis.call('SCARD', inflight),
  expired,
  redis.call('LINDEX', backlog, -1),
  redis.call('LINDEX', nextlog, -1),
  redis.call('ZCARD', delayed),
}
