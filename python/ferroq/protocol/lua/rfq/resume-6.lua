--[[ rfq resume: claim again, under a new token, what a named worker still holds (its processing list).

Input:
  KEYS[1..6]  rfq:<topic>:nextlog, :leases, :deliveries, :claims, :claim_leases, :inflight
  ARGV[1]     owner: the worker's name, as given to claim-8n
  ARGV[2]     lease in milliseconds
  ARGV[3]     the new claim's token

Output: claim-8n's flat shape for topic 1: { now_ms, 1, ids, n, position, count, ... } (only now_ms when
the owner holds nothing), oldest claim first.

A worker's processing list is every open claim whose record names it, and the nextlog ids whose record of
the previous layout names it. Each of those claims ends (counted in the ids' deliveries records, so the
previous run's commits are refused) and one new claim holds all their ids, with a new lease and claim
time. The bodies are fetched by the caller, as after claim-8n.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local claims, claim_leases, inflight = KEYS[4], KEYS[5], KEYS[6]
redis.call('ZREM', leases, '')
local owner, lease_ms, token = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
local mine = {} -- { claimed_at, token, ids } of the owner's claims
local all = redis.call('HGETALL', claims)
for i = 1, #all, 2 do
  if not string.find(all[i], ':', 1, true) then
    local at, by, held = parse_claim(all[i + 1])
    if by == owner then
      mine[#mine + 1] = { tonumber(at), all[i], words(held) }
    end
  end
end
table.sort(mine, function(x, y)
  return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2])
end)
local ids = {}
for _, c in ipairs(mine) do
  for _, id in ipairs(c[3]) do
    end_claim(deliveries, id)
    ids[#ids + 1] = id
  end
  redis.call('HDEL', claims, c[2], c[2] .. ':d')
  redis.call('ZREM', claim_leases, c[2])
end
-- Claims of the previous layout: the nextlog ids whose record names the owner, oldest claim first.
if redis.call('ZCARD', leases) > 0 then
  local listed, seen = redis.call('LRANGE', nextlog, 0, -1), {}
  for i = #listed, 1, -1 do
    local id = listed[i]
    local record = not seen[id] and redis.call('HGET', deliveries, id)
    if record then
      local _, _, held_by = parse_record(record)
      if held_by == owner then
        seen[id] = true
        redis.call('HSET', deliveries, id, unclaimed(record))
        redis.call('ZREM', leases, id)
        ids[#ids + 1] = id
      end
    end
  end
end
if #ids == 0 then
  return { now }
end
call_in_slices('SADD', inflight, ids, 1, #ids)
local text = table.concat(ids, ' ')
redis.call('HSET', claims, token, now .. ' ' .. owner .. ' ' .. text, token .. ':d', text)
redis.call('ZADD', claim_leases, now + lease_ms, token)
local out = { now, 1, text, #ids }
local records = hmget_all(deliveries, ids)
for i, id in ipairs(ids) do
  out[#out + 1] = i
  out[#out + 1] = (tonumber((parse_record(records[i] or '0'))) or 0) + 1
end
return out
