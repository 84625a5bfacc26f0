--[[ rfq dead-letter: move held messages to another topic's backlog, atomically, fenced like commit.

Input:
  KEYS[1]          rfq:<topic>:nextlog
  KEYS[2]          rfq:<topic>:leases
  KEYS[3]          rfq:<topic>:deliveries
  KEYS[4]          rfq:<dead>:backlog      (the dead-letter topic)
  KEYS[5]          rfq:<dead>:deliveries
  KEYS[4+2i..5+2i] for message i (1-based): rfq:<topic>:message:<id>, rfq:<dead>:message:<id>
                   (two keys per message)
  ARGV[1]          the last error, recorded for every message of this call
  ARGV[2..]        per message, in KEYS order: <id>, <token> ('' = unfenced)

Output: the ids moved, in input order.

A message is accepted as commit-3n accepts it (leased with a matching token, or unfenced and still
claimed). It then leaves its topic: nextlog entry, lease and record go. Its hash is RENAMEd, fields
unchanged, to the dead topic, where its id joins the backlog (LPUSH: consumed after what is waiting,
in input order) as an ordinary rfq message, and its record in rfq:<dead>:deliveries gets the last
error ('0\n<error>' when it had none there). A message whose hash is gone is dropped, not moved.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local dead_backlog, dead_deliveries = KEYS[4], KEYS[5]
local err = ARGV[1]
local out, done = {}, {}
for i = 1, (#KEYS - 5) / 2 do
  local id, token = ARGV[2 * i], ARGV[2 * i + 1]
  local src, dst = KEYS[4 + 2 * i], KEYS[5 + 2 * i]
  if not done[id] and take_claim(nextlog, leases, id, token, redis.call('HGET', deliveries, id)) then
    done[id] = true
    redis.call('ZREM', leases, id)
    forget(deliveries, id)
    if redis.call('EXISTS', src) == 1 then
      redis.call('RENAME', src, dst)
      local record = redis.call('HGET', dead_deliveries, id)
      redis.call('HSET', dead_deliveries, id, (record and string.match(record, '^[^\n]*') or '0') .. '\n' .. err)
      out[#out + 1] = id
    end
  end
end
call_in_slices('LPUSH', dead_backlog, out, 1, #out)
return out
