--[[ rfq extend: renew the leases of messages whose claim is still held.

Input:
  KEYS[1..5]   rfq:<topic>:leases, :deliveries, :claims, :claim_leases, :inflight
  ARGV[1]      the new lease in milliseconds, counted from now (Redis TIME)
  ARGV[2..]    groups: <fence>, k, then k ids (fences as commit-6n takes them)

Output: the ids whose lease was renewed, in input order.

A lease belongs to a claim: the claim of a token fence is renewed when it still lists at least one of the
given ids, and every id of the call that it lists is reported (its other ids are held by the same
consumer, or left the claim when they were committed, released or taken over). A count fence (a claim of
the previous layout) renews the id's own lease, as before; '' renews whichever holds the id.
]]
local leases, deliveries, claims, claim_leases, inflight = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
redis.call('ZREM', leases, '')
local deadline = now_ms() + tonumber(ARGV[1])
local out = {}
local a = 2
while a <= #ARGV do
  local fence, k = ARGV[a], tonumber(ARGV[a + 1])
  local first, last = a + 2, a + 1 + k
  if string.find(fence, '%a') then
    local v = redis.call('HGET', claims, fence)
    if v then
      local listed = {}
      words(select(3, parse_claim(v)), listed)
      local renewed = false
      for i = first, last do
        if listed[ARGV[i]] then
          out[#out + 1] = ARGV[i]
          renewed = true
        end
      end
      if renewed then
        redis.call('ZADD', claim_leases, 'XX', deadline, fence)
      end
    end
  else
    for i = first, last do
      local id = ARGV[i]
      if holds(leases, id, fence, redis.call('HGET', deliveries, id)) then
        redis.call('ZADD', leases, 'XX', deadline, id)
        out[#out + 1] = id
      else
        -- a bare id, or a delivery count, of an id held by a claim: that claim is renewed (rare: reads
        -- every open claim)
        local token
        if fence == '' then
          token = redis.call('SISMEMBER', inflight, id) == 1 and claim_holding(claims, id)
        else
          token = claim_by_count(claims, inflight, deliveries, id, fence)
        end
        if token then
          redis.call('ZADD', claim_leases, 'XX', deadline, token)
          out[#out + 1] = id
        end
      end
    end
  end
  a = last + 1
end
return out
