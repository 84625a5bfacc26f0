--[[ rfq inspect: a page of the backlog or the nextlog, with each message's claim details.

Input:
  KEYS[1]   rfq:<topic>:backlog or rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  KEYS[4]   rfq:<topic>:claims
  KEYS[5]   rfq:<topic>:claim_leases
  ARGV[1]   start: entries to skip from the consume end (0 = the next message to be claimed,
            or for the nextlog the oldest claim)
  ARGV[2]   count
  ARGV[3]   rfq:<topic>:message: (the message key prefix)

Output: { now_ms, { {id, deliveries|false, claimed_at_ms|false, lease_deadline_ms|false, {f1, v1, ...},
                     owner|false, last_error|false}, ... } }
A message whose hash is missing has an empty field list. deliveries counts the claims made so far, the
current one included; claimed_at, the lease deadline and owner are the current claim's (its claim record
and lease, or for a claim of the previous layout its deliveries record and per-id lease); last_error is set
on messages that were dead-lettered into this topic. The open claims are read once per page, so that
inspecting the nextlog costs its page plus what is in flight.
]]
local list, leases, deliveries, claims, claim_leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local start, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local ids = redis.call('LRANGE', list, -(start + count), -(start + 1))
local holder = {} -- id -> { claimed_at, owner, deadline } of the claim that lists it
if #ids > 0 and redis.call('EXISTS', claims) == 1 then
  local all = redis.call('HGETALL', claims)
  for i = 1, #all, 2 do
    if not string.find(all[i], ':', 1, true) then
      local at, owner, held = parse_claim(all[i + 1])
      local c = { at, owner ~= '-' and owner or false, redis.call('ZSCORE', claim_leases, all[i]) }
      for _, id in ipairs(words(held)) do
        holder[id] = c
      end
    end
  end
end
local out = {}
for i = #ids, 1, -1 do
  local id = ids[i]
  local record = redis.call('HGET', deliveries, id)
  local n, at, owner, err
  if record then
    n, at, owner, err = parse_record(record)
  end
  local deadline = redis.call('ZSCORE', leases, id)
  local c = holder[id]
  if c then
    n = (tonumber(n) or 0) + 1
    at, owner, deadline = c[1], c[2], c[3]
  end
  out[#out + 1] = { id, n or false, at or false, deadline, redis.call('HGETALL', ARGV[3] .. id), owner or false,
                    err or false }
end
return { now, out }
