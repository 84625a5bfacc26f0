--[[ spark lock: one live streaming query per consumer.

Input:
  KEYS[1]  <queue prefix>:spark:lock:<consumer> (STRING: the query instance holding it)
  ARGV[1]  this query instance's token
  ARGV[2]  how long the lock lasts without renewal, in ms; '0' releases it (if this instance holds it)

Output: '' when this instance holds the lock now (taken or renewed) or released it, else the token of
the holder. A query renews its lock at every poll; a query that died frees it when it expires.
]]
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return holder
end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return ''
