--[[ rfq release: give held messages back to the front of the backlog now, fenced like commit.

Input:
  KEYS[1]      rfq:<topic>:backlog
  KEYS[2]      rfq:<topic>:nextlog
  KEYS[3]      rfq:<topic>:leases
  KEYS[4]      rfq:<topic>:deliveries
  ARGV[1..]    pairs <id>, <token>; an empty token releases without fencing

Output: the ids released, in input order. They go to the backlog's tail (consumed next), in input
order, and keep their delivery count.
]]
local backlog, nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local out = {}
for a = 1, #ARGV, 2 do
  local id, token = ARGV[a], ARGV[a + 1]
  if redis.call('ZSCORE', leases, id) and (token == '' or redis.call('HGET', deliveries, id) == token) then
    redis.call('LREM', nextlog, -1, id)
    redis.call('ZREM', leases, id)
    redis.call('HDEL', deliveries, id .. ':at')
    out[#out + 1] = id
  end
end
for i = #out, 1, -1 do
  redis.call('RPUSH', backlog, out[i])
end
return out
