--[[ rfq commit: delete messages whose claim is still held, fenced by the delivery count.

Input:
  KEYS[1]        rfq:<topic>:nextlog
  KEYS[2]        rfq:<topic>:leases
  KEYS[3]        rfq:<topic>:deliveries
  KEYS[4..n+3]   rfq:<topic>:message:<id> for each message
  ARGV[1..2n]    per message, in the order of KEYS[4..]: <id>, <token>

Output: the ids committed, in input order.

token is the delivery count returned by the claim. A message is committed only while it is leased
and its delivery count still equals the token: after the lease expired and the message was requeued
or claimed again, the old holder's commit is refused and the new claim is untouched.
An empty token commits without fencing (a bare id): whatever holds the id, ferroq or a plain rfq
consumer. LREM counts from the tail, where the oldest claims sit, so it stops early; the backlog is
never scanned. Every side entry of a committed id goes: its lease and its deliveries-HASH fields
(count, claim time, owner, last error).
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local out = {}
-- What the committed messages leave behind, deleted once at the end.
local bodies, fields, done = {}, {}, {}
for i = 4, #KEYS do
  local id = ARGV[2 * (i - 4) + 1]
  local token = ARGV[2 * (i - 4) + 2]
  -- Listed twice: committed once (its lease is removed only at the end).
  if not done[id] and take_claim(nextlog, leases, deliveries, id, token) then
    done[id] = true
    bodies[#bodies + 1] = KEYS[i]
    local f = #fields
    fields[f + 1], fields[f + 2], fields[f + 3], fields[f + 4] = id, id .. ':at', id .. ':owner', id .. ':error'
    out[#out + 1] = id
  end
end
if #out > 0 then
  call_in_slices('DEL', nil, bodies, 1, #bodies)
  call_in_slices('ZREM', leases, out, 1, #out)
  call_in_slices('HDEL', deliveries, fields, 1, #fields)
end
return out
