--[[ rfq resume: re-lease the claims a named worker still holds (its processing list), at its start.

Input:
  KEYS[1]   rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  ARGV[1]   owner: the worker's name, as given to claim-5n
  ARGV[2]   lease in milliseconds
  ARGV[3]   rfq:<topic>:message: (the message key prefix)

Output: { now_ms, then per message: 1, id, deliveries, nfields, f1, v1, ... }, oldest claim first
(claim-5n's flat shape).

A worker's processing list is the nextlog ids whose record (see the prelude) names it as owner: claims
it made and neither committed, released nor lost to a harvest. Each is claimed again in place: its
delivery count (the fencing token) goes up by one, so the previous run's token is stale, and it gets a
new lease and claim time. A missing message hash is dropped as claim-5n drops ghosts. The whole nextlog is read, so
call this once at start, not per batch.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write
-- may grow memory: start with one that cannot, so a full topic still drains (publish stays refused).
redis.call('ZREM', leases, '')
local owner, lease_ms, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
local ids = redis.call('LRANGE', nextlog, 0, -1)
local out, seen = { now }, {}
for i = #ids, 1, -1 do
  local id = ids[i]
  local record = not seen[id] and redis.call('HGET', deliveries, id)
  local count, _, held_by, err
  if record then
    count, _, held_by, err = parse_record(record)
  end
  if held_by == owner then
    seen[id] = true
    local body = redis.call('HGETALL', prefix .. id)
    if #body == 0 then
      redis.call('LREM', nextlog, 0, id)
      redis.call('ZREM', leases, id)
      forget(deliveries, id)
    else
      local d = (tonumber(count) or 0) + 1
      redis.call('ZADD', leases, now + lease_ms, id)
      redis.call('HSET', deliveries, id, d .. ' ' .. now .. ' ' .. owner .. (err and '\n' .. err or ''))
      local n = #out
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 1, id, d, #body / 2
      for j = 1, #body do
        out[n + 4 + j] = body[j]
      end
    end
  end
end
return out
