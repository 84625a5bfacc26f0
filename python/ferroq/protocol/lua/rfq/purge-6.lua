--[[ rfq purge: delete up to LIMIT messages of the backlog or the nextlog, from the consume end.

Input:
  KEYS[1]   rfq:<topic>:backlog or rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  KEYS[4]   rfq:<topic>:claims
  KEYS[5]   rfq:<topic>:claim_leases
  KEYS[6]   rfq:<topic>:inflight
  ARGV[1]   rfq:<topic>:message: (the message key prefix)
  ARGV[2]   limit (the caller repeats while it is reached, so Redis is never blocked for long)

Each goes with its per-id lease, its record and its place in a claim.

Output: the number of messages deleted. Purging the nextlog deletes messages being processed;
their holders' commits then find nothing to commit.
]]
local list, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local claims, claim_leases, inflight = KEYS[4], KEYS[5], KEYS[6]
local n, held = 0, {}
for _ = 1, tonumber(ARGV[2]) do
  local id = redis.call('RPOP', list)
  if not id then
    break
  end
  redis.call('DEL', ARGV[1] .. id)
  redis.call('ZREM', leases, id)
  forget(deliveries, id)
  if redis.call('SREM', inflight, id) == 1 then
    held[id] = true
  end
  n = n + 1
end
if next(held) then
  local all = redis.call('HGETALL', claims)
  for i = 1, #all, 2 do
    if not string.find(all[i], ':', 1, true) then
      local at, owner, ids = parse_claim(all[i + 1])
      drop_from_claim(claims, claim_leases, all[i], at, owner, ids, held)
    end
  end
end
return n
