--[[ rfq inspect: a page of a backlog or nextlog, in consumption order, with claim details.

Input:
  KEYS[1]   rfq:<topic>:backlog or rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  ARGV[1]   start: entries to skip from the consume end (0 = the next message to be claimed,
            or for the nextlog the oldest claim)
  ARGV[2]   count
  ARGV[3]   rfq:<topic>:message: (the message key prefix)

Output: { now_ms, { {id, deliveries|false, claimed_at_ms|false, lease_deadline_ms|false, {f1, v1, ...},
                     owner|false, last_error|false}, ... } }
A message whose hash is missing has an empty field list. deliveries, claimed_at, owner and last_error
come from the message's record in the deliveries HASH (see the prelude): owner is the processing list
that holds the claim; last_error is set on messages that were dead-lettered into this topic.
]]
local list, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local start, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local ids = redis.call('LRANGE', list, -(start + count), -(start + 1))
local out = {}
for i = #ids, 1, -1 do
  local id = ids[i]
  local record = redis.call('HGET', deliveries, id)
  local count, at, owner, err
  if record then
    count, at, owner, err = parse_record(record)
  end
  local deadline = redis.call('ZSCORE', leases, id)
  out[#out + 1] = { id, count or false, at or false, deadline, redis.call('HGETALL', ARGV[3] .. id), owner or false,
                    err or false }
end
return { now, out }
