--[[ rsmq set_attributes: change queue attributes (RSMQ setQueueAttributes) and the dead-letter settings.

Input:
  KEYS[1]  {ns}:{q}:Q (HASH)
  KEYS[2]  {ns}:{dlq}:Q of the new dead-letter queue, or KEYS[1] again when ARGV[5] is ''
  ARGV[1]  vt, integer seconds, or '' to keep it
  ARGV[2]  delay, integer seconds, or ''
  ARGV[3]  maxsize, or ''
  ARGV[4]  max_receives: '' keep, '0' remove the dead-letter settings, n >= 1 set them (with ARGV[5])
  ARGV[5]  dead-letter queue name, or ''

Output: {'ok'} | {'notfound'} | {'dlqmissing', dlq}. Nothing is written unless the reply is 'ok'.
'modified' is set to TIME seconds, as RSMQ does.
]]
local q = redis.call('HMGET', KEYS[1], 'vt', 'delay', 'maxsize')
if not q[1] or not q[2] or not q[3] then
  return { 'notfound' }
end
if ARGV[4] ~= '' and ARGV[4] ~= '0' and redis.call('HEXISTS', KEYS[2], 'vt') == 0 then
  return { 'dlqmissing', ARGV[5] }
end
redis.call('HSET', KEYS[1], 'modified', redis.call('TIME')[1])
local names = { 'vt', 'delay', 'maxsize' }
for i = 1, 3 do
  if ARGV[i] ~= '' then
    redis.call('HSET', KEYS[1], names[i], ARGV[i])
  end
end
if ARGV[4] == '0' then
  redis.call('HDEL', KEYS[1], 'ferroq:maxrecv', 'ferroq:dlq')
elseif ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'ferroq:maxrecv', ARGV[4], 'ferroq:dlq', ARGV[5])
end
return { 'ok' }
