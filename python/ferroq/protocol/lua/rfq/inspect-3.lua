--[[ rfq inspect: a page of a backlog or nextlog, in consumption order, with claim details.

Input:
  KEYS[1]   rfq:<topic>:backlog or rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  ARGV[1]   start: entries to skip from the consume end (0 = the next message to be claimed,
            or for the nextlog the oldest claim)
  ARGV[2]   count
  ARGV[3]   rfq:<topic>:message: (the message key prefix)

Output: { now_ms, { {id, deliveries|false, claimed_at_ms|false, lease_deadline_ms|false, {f1, v1, ...}}, ... } }
A message whose hash is missing has an empty field list.
]]
local list, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local start, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('LRANGE', list, -(start + count), -(start + 1))
local out = {}
for i = #ids, 1, -1 do
  local id = ids[i]
  local info = redis.call('HMGET', deliveries, id, id .. ':at')
  out[#out + 1] = { id, info[1], info[2], redis.call('ZSCORE', leases, id), redis.call('HGETALL', ARGV[3] .. id) }
end
return { now, out }
