--[[ rfq release: give claimed messages back, now or after a delay (fenced by their claim).

Input:
  KEYS[1..8]   rfq:<topic>:backlog, :nextlog, :leases, :deliveries, :delayed, :claims, :claim_leases,
               :inflight
  ARGV[1]      delay in milliseconds: '0' to release now
  ARGV[2..]    groups: <fence>, k, then k ids (fences as commit-6n takes them)

Output: the ids released, in input order. Each leaves the nextlog and its claim, and its claim counts as
ended in its deliveries record (the delivery count stays: the next claim gets one more).
Delay 0: they go to the backlog's tail (consumed next), in input order. Otherwise they go to the
delayed ZSET with score now + delay (Redis TIME); a claim or harvest moves them to the backlog's
consume end once that time has passed. Plain rfq clients do not see them until then.
]]
local backlog, nextlog, leases, deliveries, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local claims, claim_leases, inflight = KEYS[6], KEYS[7], KEYS[8]
local delay = tonumber(ARGV[1])
local out, done = {}, {}

-- Releases ids (a list) that the claim token lists (at, owner, held: its record's parts).
local function from_claim(token, at, owner, held, ids)
  local listed, gone, left = {}, {}, {}
  words(held, listed)
  for _, id in ipairs(ids) do
    if listed[id] and not done[id] then
      done[id], gone[id] = true, true
      left[#left + 1] = id
      redis.call('LREM', nextlog, '-1', id)
      end_claim(deliveries, id)
      out[#out + 1] = id
    end
  end
  if #left > 0 then
    drop_from_claim(claims, claim_leases, token, at, owner, held, gone)
    call_in_slices('SREM', inflight, left, 1, #left)
  end
end

local a = 2
while a <= #ARGV do
  local fence, k = ARGV[a], tonumber(ARGV[a + 1])
  local ids = {}
  for i = 1, k do
    ids[i] = ARGV[a + 1 + i]
  end
  if string.find(fence, '%a') then
    local v = redis.call('HGET', claims, fence)
    if v then
      local at, owner, held = parse_claim(v)
      from_claim(fence, at, owner, held, ids)
    end
  else
    for _, id in ipairs(ids) do
      local record = redis.call('HGET', deliveries, id)
      if not done[id] and holds(leases, id, fence, record) then
        done[id] = true
        redis.call('LREM', nextlog, '-1', id)
        redis.call('ZREM', leases, id)
        if record then
          redis.call('HSET', deliveries, id, unclaimed(record))
        end
        out[#out + 1] = id
      elseif not done[id] then
        -- a bare id, or a delivery count, of an id held by a claim (rare: reads every open claim)
        local token
        if fence == '' then
          token = redis.call('SISMEMBER', inflight, id) == 1 and claim_holding(claims, id)
        else
          token = claim_by_count(claims, inflight, deliveries, id, fence)
        end
        if token then
          local at, owner, held = parse_claim(redis.call('HGET', claims, token))
          from_claim(token, at, owner, held, { id })
        end
      end
    end
  end
  a = a + 2 + k
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
