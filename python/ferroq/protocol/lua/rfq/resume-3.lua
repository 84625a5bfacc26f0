--[[ rfq resume: re-lease the claims a named worker still holds (its processing list), at its start.

Input:
  KEYS[1]   rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  ARGV[1]   owner: the worker's name, as given to claim-5n
  ARGV[2]   lease in milliseconds
  ARGV[3]   rfq:<topic>:message: (the message key prefix)

Output: { now_ms, { {1, id, deliveries, {f1, v1, ...}}, ... } }, oldest claim first (claim-5n's shape).

A worker's processing list is the nextlog ids whose <id>:owner field is its name: claims it made and
neither committed, released nor lost to a harvest. Each is claimed again in place: its delivery count
(the fencing token) goes up by one, so the previous run's token is stale, and it gets a new lease and
claim time. A missing message hash is dropped as claim-5n drops ghosts. The whole nextlog is read, so
call this once at start, not per batch.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', leases, '')
local owner, lease_ms, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
local ids = redis.call('LRANGE', nextlog, 0, -1)
local out, seen = {}, {}
for i = #ids, 1, -1 do
  local id = ids[i]
  if not seen[id] and redis.call('HGET', deliveries, id .. ':owner') == owner then
    seen[id] = true
    local body = redis.call('HGETALL', prefix .. id)
    if #body == 0 then
      redis.call('LREM', nextlog, 0, id)
      redis.call('ZREM', leases, id)
      forget(deliveries, id)
    else
      local d = redis.call('HINCRBY', deliveries, id, 1)
      redis.call('ZADD', leases, now + lease_ms, id)
      redis.call('HSET', deliveries, id .. ':at', now)
      out[#out + 1] = { 1, id, d, body }
    end
  end
end
return { now, out }
