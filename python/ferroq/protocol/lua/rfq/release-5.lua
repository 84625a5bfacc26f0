--[[ rfq release: give held messages back to the backlog, now or after a delay, fenced like commit.

Input:
  KEYS[1]      rfq:<topic>:backlog
  KEYS[2]      rfq:<topic>:nextlog
  KEYS[3]      rfq:<topic>:leases
  KEYS[4]      rfq:<topic>:deliveries
  KEYS[5]      rfq:<topic>:delayed
  ARGV[1]      delay in milliseconds: '0' to release now
  ARGV[2..]    pairs <id>, <token>; an empty token releases without fencing

Output: the ids released, in input order. Their records lose the claim and owner and keep the
delivery count.
Delay 0: they go to the backlog's tail (consumed next), in input order. Otherwise they go to the
delayed ZSET with score now + delay (Redis TIME); a claim or harvest moves them to the backlog's
consume end once that time has passed. Plain rfq clients do not see them until then.
]]
local backlog, nextlog, leases, deliveries, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local delay = tonumber(ARGV[1])
local out = {}
for a = 2, #ARGV, 2 do
  local id, token = ARGV[a], ARGV[a + 1]
  local record = redis.call('HGET', deliveries, id)
  if holds(leases, id, token, record) then
    redis.call('LREM', nextlog, '-1', id)
    redis.call('ZREM', leases, id)
    if record then
      redis.call('HSET', deliveries, id, unclaimed(record))
    end
    out[#out + 1] = id
  end
end
if delay > 0 then
  local due = now_ms() + delay
  for _, id in ipairs(out) do
    redis.call('ZADD', delayed, due, id)
  end
else
  for i = #out, 1, -1 do
    redis.call('RPUSH', backlog, out[i])
  end
end
return out
