--[[ rfq extend: renew the leases of messages still held, fenced like commit.

Input:
  KEYS[1]      rfq:<topic>:leases
  KEYS[2]      rfq:<topic>:deliveries
  ARGV[1]      the new lease in milliseconds, counted from now (Redis TIME)
  ARGV[2..]    pairs <id>, <token>; an empty token extends without fencing

Output: the ids whose lease was renewed, in input order.
]]
local leases, deliveries = KEYS[1], KEYS[2]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', leases, '')
local deadline = now_ms() + tonumber(ARGV[1])
local out = {}
for a = 2, #ARGV, 2 do
  local id, token = ARGV[a], ARGV[a + 1]
  if holds(leases, id, token, redis.call('HGET', deliveries, id)) then
    redis.call('ZADD', leases, 'XX', deadline, id)
    out[#out + 1] = id
  end
end
return out
