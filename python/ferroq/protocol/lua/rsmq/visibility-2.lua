--[[ rsmq visibility: hide a message for vt from now (RSMQ changeMessageVisibility).

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  ARGV[1]  id
  ARGV[2]  vt in ms

Output: {'ok', 1} changed | {'ok', 0} no such message | {'notfound'} no such queue.
]]
local q = redis.call('HMGET', KEYS[2], 'vt', 'delay', 'maxsize')
if not q[1] or not q[2] or not q[3] then
  return { 'notfound' }
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return { 'ok', 0 }
end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%.0f', now_ms + tonumber(ARGV[2])), ARGV[1])
return { 'ok', 1 }
