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
(count, claim time, owner, last error). An id listed twice is committed once.

Speed: messages go in rounds of up to 1000: one ZMSCORE and one HMGET read the round's leases and
tokens, one DEL, ZREM and HDEL clear what the committed ones leave; per message only LREM remains.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local out, done = {}, {}
for first = 4, #KEYS, 1000 do
  local last = math.min(first + 999, #KEYS)
  local ids, tokens = {}, {}
  for i = first, last do
    ids[#ids + 1] = ARGV[2 * (i - 4) + 1]
    tokens[#tokens + 1] = ARGV[2 * (i - 4) + 2]
  end
  local leased = redis.call('ZMSCORE', leases, unpack(ids))
  local held = redis.call('HMGET', deliveries, unpack(ids))
  local bodies, fields, committed = {}, {}, {}
  for j, id in ipairs(ids) do
    if not done[id] and take_claim(nextlog, id, tokens[j], leased[j], held[j]) then
      done[id] = true
      bodies[#bodies + 1] = KEYS[first + j - 1]
      local f = #fields
      fields[f + 1], fields[f + 2], fields[f + 3], fields[f + 4] = id, id .. ':at', id .. ':owner', id .. ':error'
      committed[#committed + 1] = id
      out[#out + 1] = id
    end
  end
  if #committed > 0 then
    redis.call('DEL', unpack(bodies))
    redis.call('ZREM', leases, unpack(committed))
    call_in_slices('HDEL', deliveries, fields, 1, #fields)
  end
end
return out
