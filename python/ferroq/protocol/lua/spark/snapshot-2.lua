--[[ spark snapshot: copy a queue's id list for a batch read that must not hold every id on the driver.

Input:
  KEYS[1]  the source: rfq:<t>:backlog (LIST) or <ns>:<q> (RSMQ's ZSET)
  KEYS[2]  the snapshot: <queue prefix>:spark:snapshot:<token>
  ARGV[1]  how long the snapshot is kept, in ms (the read's tasks must start within it)

Output: the number of ids in the snapshot (0, and no snapshot, when the source does not exist).
COPY is O(N) in Redis but needs no round trip per id; executors then read index ranges of it.
]]
if redis.call('COPY', KEYS[1], KEYS[2], 'REPLACE') == 0 then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind == 'list' then
  return redis.call('LLEN', KEYS[2])
end
return redis.call('ZCARD', KEYS[2])
