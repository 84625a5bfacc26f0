--[[ rfq dead letter: move held messages, with an error, to the backlog of a dead-letter topic.

Input:
  KEYS[1..3]       rfq:<topic>:nextlog, :leases, :deliveries
  KEYS[4..5]       rfq:<dead>:backlog, rfq:<dead>:deliveries (the dead-letter topic)
  KEYS[6..8]       rfq:<topic>:claims, :claim_leases, :inflight
  KEYS[7+2i..8+2i] for message i (1-based, in ARGV order): rfq:<topic>:message:<id>, rfq:<dead>:message:<id>
  ARGV[1]          the last error, recorded for every message of this call
  ARGV[2..]        groups: <fence>, k, then k ids (fences as commit-6n takes them)

Output: the ids moved, in input order.

A message is accepted as commit-6n accepts it. It then leaves its topic: nextlog entry, claim, per-id
lease and record go. Its hash is RENAMEd, fields unchanged, to the dead topic, where its id joins the
backlog (LPUSH: consumed after what is waiting, in input order) as an ordinary rfq message, and its
record in rfq:<dead>:deliveries gets the last error ('0\n<error>' when it had none there). A message
whose hash is gone is dropped, not moved.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local dead_backlog, dead_deliveries = KEYS[4], KEYS[5]
local claims, claim_leases, inflight = KEYS[6], KEYS[7], KEYS[8]
local err = ARGV[1]
local out, done = {}, {}
local message = 0 -- messages seen so far, in ARGV order

-- Moves message number m (id) out of its topic: its claim or per-id state is already gone.
local function move(m, id)
  redis.call('LREM', nextlog, '-1', id)
  redis.call('ZREM', leases, id)
  redis.call('SREM', inflight, id)
  forget(deliveries, id)
  local src, dst = KEYS[7 + 2 * m], KEYS[8 + 2 * m]
  if redis.call('EXISTS', src) == 1 then
    redis.call('RENAME', src, dst)
    local record = redis.call('HGET', dead_deliveries, id)
    redis.call('HSET', dead_deliveries, id, (record and string.match(record, '^[^\n]*') or '0') .. '\n' .. err)
    out[#out + 1] = id
  end
end

local a = 2
while a <= #ARGV do
  local fence, k = ARGV[a], tonumber(ARGV[a + 1])
  if string.find(fence, '%a') then
    local v = redis.call('HGET', claims, fence)
    local listed, gone, any = {}, {}, false
    local at, owner, held
    if v then
      at, owner, held = parse_claim(v)
      words(held, listed)
    end
    for i = 1, k do
      local id = ARGV[a + 1 + i]
      if listed[id] and not done[id] then
        done[id], gone[id], any = true, true, true
        move(message + i, id)
      end
    end
    if any then
      drop_from_claim(claims, claim_leases, fence, at, owner, held, gone)
    end
  else
    for i = 1, k do
      local id = ARGV[a + 1 + i]
      if not done[id] then
        -- a bare id, or a delivery count, of an id held by a claim (rare: reads every open claim)
        local token = nil
        if fence == '' then
          token = redis.call('SISMEMBER', inflight, id) == 1 and claim_holding(claims, id) or nil
        else
          token = claim_by_count(claims, inflight, deliveries, id, fence)
        end
        local ok = token ~= nil or take_claim(nextlog, leases, id, fence, redis.call('HGET', deliveries, id))
        if ok then
          done[id] = true
          if token then
            local at, owner, held = parse_claim(redis.call('HGET', claims, token))
            drop_from_claim(claims, claim_leases, token, at, owner, held, { [id] = true })
          end
          move(message + i, id)
        end
      end
    end
  end
  message = message + k
  a = a + 2 + k
end
call_in_slices('LPUSH', dead_backlog, out, 1, #out)
return out
