--[[ rsmq create: create a queue (RSMQ createQueue), atomically with its QUEUES entry.

Input:
  KEYS[1]  {ns}:QUEUES (SET of queue names)
  KEYS[2]  {ns}:{q}:Q (the queue HASH)
  KEYS[3]  {ns}:{dlq}:Q of the dead-letter queue, or KEYS[2] again when there is none
  ARGV[1]  qname
  ARGV[2]  vt, integer seconds
  ARGV[3]  delay, integer seconds
  ARGV[4]  maxsize (-1 = unlimited)
  ARGV[5]  max_receives ('' = no dead-letter queue)
  ARGV[6]  dead-letter queue name ('' = none)

Output: {'ok'} | {'exists'} | {'dlqmissing', dlq}. Nothing is written unless the reply is 'ok'.

Fields as RSMQ writes them (HSETNX vt, delay, maxsize, created, modified; created/modified = TIME
seconds). The dead-letter settings go in 'ferroq:maxrecv' and 'ferroq:dlq', which RSMQ clients ignore.
]]
if redis.call('HEXISTS', KEYS[2], 'vt') == 1 then
  return { 'exists' }
end
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[3], 'vt') == 0 then
  return { 'dlqmissing', ARGV[6] }
end
local sec = redis.call('TIME')[1]
redis.call('HSETNX', KEYS[2], 'vt', ARGV[2])
redis.call('HSETNX', KEYS[2], 'delay', ARGV[3])
redis.call('HSETNX', KEYS[2], 'maxsize', ARGV[4])
redis.call('HSETNX', KEYS[2], 'created', sec)
redis.call('HSETNX', KEYS[2], 'modified', sec)
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[2], 'ferroq:maxrecv', ARGV[5], 'ferroq:dlq', ARGV[6])
end
redis.call('SADD', KEYS[1], ARGV[1])
return { 'ok' }
