--[[ rsmq delete_queue: delete a queue and every message in it (RSMQ deleteQueue).

Input:
  KEYS[1]  {ns}:QUEUES
  KEYS[2]  {ns}:{q} (ZSET)
  KEYS[3]  {ns}:{q}:Q (HASH)
  ARGV[1]  qname

Output: {'ok'} | {'notfound'}. The name leaves QUEUES in both cases (RSMQ does the same SREM).
UNLINK frees the (possibly large) hash off the main thread; the data effect is RSMQ's DEL.
]]
local n = redis.call('UNLINK', KEYS[3], KEYS[2])
redis.call('SREM', KEYS[1], ARGV[1])
if n == 0 then
  return { 'notfound' }
end
return { 'ok' }
