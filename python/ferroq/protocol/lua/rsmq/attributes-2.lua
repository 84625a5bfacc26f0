--[[ rsmq attributes: the queue attributes (RSMQ getQueueAttributes) plus ferroq's dead-letter settings.

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)

Output: {'notfound'} | {'ok', {vt, delay, maxsize, totalrecv, totalsent, created, modified, maxrecv, dlq},
msgs, hiddenmsgs}. The first list holds the stored strings (nil when a field is absent). msgs = ZCARD;
hiddenmsgs = ZCOUNT from TIME seconds * 1000 (RSMQ truncates "now" to the second) to +inf.
]]
local a = redis.call('HMGET', KEYS[2], 'vt', 'delay', 'maxsize', 'totalrecv', 'totalsent', 'created', 'modified',
  'ferroq:maxrecv', 'ferroq:dlq')
if not a[1] or not a[2] or not a[3] then
  return { 'notfound' }
end
local sec = redis.call('TIME')[1]
return { 'ok', a, redis.call('ZCARD', KEYS[1]), redis.call('ZCOUNT', KEYS[1], sec .. '000', '+inf') }
