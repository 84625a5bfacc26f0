--[[ rfq purge: delete up to LIMIT messages from a backlog or nextlog, with their side entries.

Input:
  KEYS[1]   rfq:<topic>:backlog or rfq:<topic>:nextlog
  KEYS[2]   rfq:<topic>:leases
  KEYS[3]   rfq:<topic>:deliveries
  ARGV[1]   rfq:<topic>:message: (the message key prefix)
  ARGV[2]   limit (the caller repeats while it is reached, so Redis is never blocked for long)

Each goes with its lease and its record.

Output: the number of messages deleted. Purging the nextlog deletes messages being processed;
their holders' commits then find nothing to commit.
]]
local list, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local n = 0
for _ = 1, tonumber(ARGV[2]) do
  local id = redis.call('RPOP', list)
  if not id then
    break
  end
  redis.call('DEL', ARGV[1] .. id)
  redis.call('ZREM', leases, id)
  forget(deliveries, id)
  n = n + 1
end
return n
